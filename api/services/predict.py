"""Predicted start of a pending pod or PodGroup at any position (issue 34), from the ledger
alone: the inputs of the pure estimator (``api/services/start_estimate.py``) as of position
``P`` — the nodes and what they had free, the pods bound on them with their ages, the lifetimes
(bind to delete) of pods ended before ``P`` and those still running or preempted (censored),
pooled by namespace and shape (``pools``), and the pending entities ahead in the queue. Method: docs/prediction.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from api.services.start_estimate import (
    Demand,
    Estimate,
    Holder,
    Inputs,
    Survival,
    estimate,
    kaplan_meier,
)
from ledger import streams
from ledger.resources.models import pod_effective_requests
from ledger.sql import Conn

OPEN = 9223372036854775807
BEHIND = 50  # the pending demands behind it that may take freed capacity first (the first 50)
MIN_CASES = 30  # fewer similar completed lifetimes than this: widen to the namespace, then all

# the entity's last requeue or compacted retry up to P: when the scheduler tries it next
_NEXT = """
SELECT type, effective_at, data FROM events
WHERE stream = %(s)s AND position <= %(p)s AND type IN ('PodRequeued', 'PodGroupRequeued', 'PodRetried', 'PodGroupRetried')
ORDER BY position DESC LIMIT 1
"""
_AT = "SELECT effective_at FROM events WHERE position <= %s ORDER BY position DESC LIMIT 1"
# in name order: the holders' order decides which draw each one gets, so the same ledger gives
# the same estimate whatever plan the database picks
_ALIVE = """
SELECT kind, namespace, name, object, status, created_position
FROM object_versions
WHERE kind = ANY(%(kinds)s) AND valid_from <= %(p)s AND valid_to > %(p)s
ORDER BY kind, namespace, name
"""
# every bind up to P with the end of that bind (the pod's next delete or preemption) if it came
# before P: one pass ordered by pod (a window), not a lookup per bind. The last column: censored
# (still running at P, or preempted: its own end was not seen, only that it lived this long)
_LIFETIMES = """
WITH ev AS (
    SELECT position, effective_at, type, data->'requests' AS req,
           CASE WHEN type = 'PodBound' THEN data->>'pod'
                WHEN type = 'PodPreempted' THEN data->>'victim'
                ELSE (data->>'namespace') || '/' || (data->>'name') END AS pod
    FROM events WHERE type IN ('PodBound', 'PodPreempted', 'PodDeleted') AND position <= %(p)s
), seq AS (
    SELECT ev.*, lead(effective_at) OVER w AS end_at, lead(type) OVER w AS end_type
    FROM ev WINDOW w AS (PARTITION BY pod ORDER BY position)
)
SELECT pod, req::text, extract(epoch FROM (coalesce(end_at, %(t)s) - effective_at))::float8,
       end_at IS NULL OR end_type = 'PodPreempted'
FROM seq WHERE type = 'PodBound'
"""


def _gpus(req: Mapping[str, Any] | None) -> int:
    """GPUs a request asks for (a bound pod whose payload carries no requests, as a mirrored
    cluster's PodBound may, asks for none)."""
    return sum(int(v) for k, v in (req or {}).items() if k.endswith("/gpu"))


def _int(v: Any) -> int:
    if isinstance(v, int):
        return v
    from ledger.resources.quantity import parse_quantity

    return int(parse_quantity(v))


def _allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    alloc = ((node.get("status") or {}).get("allocatable")) or {}
    out: dict[str, int] = {}
    for k, v in alloc.items():
        if k == "cpu" and not isinstance(v, int):
            from ledger.resources.quantity import parse_quantity

            out[k] = int(parse_quantity(v) * 1000)
        elif k != "pods":
            out[k] = _int(v)
    return out


def _matches(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    op, key, values = expr.get("operator"), str(expr.get("key")), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return True  # Gt/Lt: not modelled (kept eligible)


def eligible(pod: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]]) -> frozenset[str]:
    """Nodes whose labels satisfy the pod's nodeSelector and required node affinity and that are
    not cordoned (taints are not modelled)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    terms = (
        (
            ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
        )
        or {}
    ).get("nodeSelectorTerms") or []
    out = []
    for name, node in nodes.items():
        labels = (node.get("metadata") or {}).get("labels") or {}
        if (node.get("spec") or {}).get("unschedulable"):
            continue
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        if terms and not any(
            all(_matches(labels, e) for e in t.get("matchExpressions") or []) for t in terms
        ):
            continue
        out.append(name)
    return frozenset(out)


def _priority(obj: Mapping[str, Any]) -> int:
    return int((obj.get("spec") or {}).get("priority") or 0)


def inputs_at(conn: Conn, kind: str, namespace: str, name: str, position: int) -> Inputs | None:
    """The estimator's inputs for a pending Pod or PodGroup as of ``position`` (None if it is
    not pending then)."""
    row = conn.execute(_AT, (position,)).fetchone()
    if row is None:
        return None
    now: datetime = row[0]
    rows = conn.execute(_ALIVE, {"kinds": ["Node", "Pod", "PodGroup"], "p": position}).fetchall()
    nodes = {r[2]: r[3] for r in rows if r[0] == "Node"}
    pods = [r for r in rows if r[0] == "Pod"]
    groups = {(r[1], r[2]): r for r in rows if r[0] == "PodGroup"}
    free = {n: _allocatable(o) for n, o in nodes.items()}
    holders: list[Holder] = []
    holder_ns: list[str] = []
    pending: dict[tuple[str, str], list[Any]] = {}  # entity -> member rows (a plain pod: itself)
    for r in pods:
        obj, status = r[3], r[4] or {}
        phase = status.get("phase", "Pending")
        if phase == "Bound":
            node = str(status.get("nodeName"))
            req = pod_effective_requests({"spec": obj.get("spec") or {}})
            if node in free:
                for k, v in req.items():
                    free[node][k] = free[node].get(k, 0) - int(v)
                bound_at = status.get("boundAt")
                age = (now - datetime.fromisoformat(bound_at)).total_seconds() if bound_at else 0.0
                holders.append(Holder(node, {k: int(v) for k, v in req.items()}, max(age, 0.0)))
                holder_ns.append(r[1])
        elif phase == "Pending":
            nominated = status.get("nominatedNodeName")
            if nominated in free and (r[1], r[2]) != (namespace, name):
                # a nominated pod's requests are held for it on that node (scheduler/nominated.py)
                req = pod_effective_requests({"spec": obj.get("spec") or {}})
                for k, v in req.items():
                    free[str(nominated)][k] = free[str(nominated)].get(k, 0) - int(v)
            pg = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
            key = ("PodGroup", f"{r[1]}/{pg}") if pg else ("Pod", f"{r[1]}/{r[2]}")
            pending.setdefault(key, []).append(r)
    me = (kind, f"{namespace}/{name}")
    if me not in pending:
        return None
    demands: dict[tuple[str, str], tuple[tuple[int, int], Demand]] = {}
    for key, members in pending.items():
        first = min(members, key=lambda r: r[5])
        obj = first[3]
        req = pod_effective_requests({"spec": obj.get("spec") or {}})
        if key[0] == "PodGroup":
            g = groups.get(tuple(key[1].split("/", 1)))  # type: ignore[arg-type]
            if g is None:
                continue
            order = (-_priority(g[3]), int(g[5]))
        else:
            order = (-_priority(obj), int(first[5]))
        demands[key] = (
            order,
            Demand(key[1], {k: int(v) for k, v in req.items()}, len(members), eligible(obj, nodes)),
        )
    if me not in demands:
        return None
    mine_order, mine = demands[me]
    ahead = [
        d for k, (o, d) in sorted(demands.items(), key=lambda kv: kv[1][0]) if o < mine_order and k != me
    ]
    behind = [
        d for k, (o, d) in sorted(demands.items(), key=lambda kv: kv[1][0]) if o > mine_order and k != me
    ][:BEHIND]
    domain_of = None
    if kind == "PodGroup":
        g = groups[(namespace, name)]
        topo = ((g[3].get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or []
        if topo:
            tk = topo[0].get("key")
            domain_of = {
                n: str(((o.get("metadata") or {}).get("labels") or {}).get(tk, "")) for n, o in nodes.items()
            }
    # each holder's and each demand's lifetimes: the pool of pods like it
    queued = [mine, *ahead, *behind]
    labels, curves = pools(
        _lifetimes(conn, position, now),
        [*zip(holder_ns, (h.requests for h in holders), strict=True)]
        + [(q.key.partition("/")[0], q.requests) for q in queued],
    )
    holders = [replace(h, pool=lab) for h, lab in zip(holders, labels, strict=False)]
    mine, *rest = (replace(q, pool=lab) for q, lab in zip(queued, labels[len(holders) :], strict=True))
    ahead, behind = rest[: len(ahead)], rest[len(ahead) :]
    curve = curves[mine.pool]
    return Inputs(
        mine,
        free,
        holders,
        curve,
        ahead,
        domain_of,
        _next_attempt(conn, kind, namespace, name, position, now),
        behind,
        curves,
    )


def _next_attempt(conn: Conn, kind: str, namespace: str, name: str, position: int, now: datetime) -> float:
    """Seconds from ``now`` until the scheduler's next attempt at the entity (0 if not in backoff):
    a start cannot come before it."""
    stream = streams.scheduler("podgroup" if kind == "PodGroup" else "pod", f"{namespace}/{name}")
    row = conn.execute(_NEXT, {"s": stream, "p": position}).fetchone()
    if row is None:
        return 0.0
    typ, at, data = row
    if typ.endswith("Requeued"):
        until = data.get("backoff_until")
        if data.get("queue") != "backoff" or until is None:
            return 0.0
        return max(float(until) - now.timestamp(), 0.0)
    since: float = (at - now).total_seconds()
    return max(since + float(data.get("backoff") or 0.0), 0.0)


def _shape(req: Mapping[str, Any] | None) -> str:
    """A pod's shape: its non-zero requests, in name order (``cpu=3152,memory=...``)."""
    return ",".join(f"{k}={int(v)}" for k, v in sorted((req or {}).items()) if int(v))


Lifetime = tuple[str, str, int, float, bool]  # namespace, shape, GPUs, seconds, censored


def pools(
    lifetimes: Sequence[Lifetime], wanted: Iterable[tuple[str, Mapping[str, Any] | None]]
) -> tuple[list[str], dict[str, Survival]]:
    """The pool each wanted (namespace, requests) draws its lifetimes from, and each pool's
    Kaplan-Meier curve: the finest of same namespace and shape, same namespace and GPU count,
    the namespace, all, that has at least ``MIN_CASES`` completed lifetimes."""
    levels: dict[str, tuple[list[float], list[float]]] = {}

    def add(label: str, life: float, censored: bool) -> None:
        done, cens = levels.setdefault(label, ([], []))
        (cens if censored else done).append(life)

    for ns, shape, gpus, life, censored in lifetimes:
        for label in (f"{ns}|{shape}", f"{ns}|{gpus} GPU", ns, "*"):
            add(label, life, censored)
    labels: list[str] = []
    curves: dict[str, Survival] = {}
    for ns, req in wanted:
        label = next(
            (
                lab
                for lab in (f"{ns}|{_shape(req)}", f"{ns}|{_gpus(req)} GPU", ns)
                if len(levels.get(lab, ((), ()))[0]) >= MIN_CASES
            ),
            "*",
        )
        if label not in curves:
            done, cens = levels.get(label, ([], []))
            curves[label] = kaplan_meier(done, cens)
        labels.append(label)
    return labels, curves


def _lifetimes(conn: Conn, position: int, now: datetime) -> list[Lifetime]:
    import orjson

    out: list[Lifetime] = []
    for pod, req_text, life, censored in conn.execute(_LIFETIMES, {"p": position, "t": now}).fetchall():
        req = orjson.loads(req_text) if req_text else {}
        out.append((pod.partition("/")[0], _shape(req), _gpus(req), float(life), bool(censored)))
    return out


def predict(conn: Conn, kind: str, namespace: str, name: str, position: int) -> Estimate | None:
    """The estimate for a pending Pod or PodGroup at ``position`` (None if not pending then)."""
    inp = inputs_at(conn, kind, namespace, name, position)
    if inp is None:
        return None
    out = estimate(inp)
    row = conn.execute(_AT, (position,)).fetchone()
    out.as_of = row[0].isoformat() if row else None
    return out
