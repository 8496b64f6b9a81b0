"""History: one object's timeline from the log."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from api.services.errors import NotFound
from ledger.queries import inputs as inputs_q
from ledger.queries import log as log_q
from ledger.resources.kinds import get_kind, resolve_kind
from ledger.store import StoredEvent

if TYPE_CHECKING:
    from ledger.database import Database


def canonical_kind(kind: str) -> str:
    """The kind's name (PodGroup, Pod, …) from any name a user types for it."""
    k = kind.lower()
    if k in ("podgroup", "podgroups", "pg"):
        return "PodGroup"
    if k in ("compositepodgroup", "compositepodgroups", "cpg"):
        return "CompositePodGroup"
    if k in ("pod", "pods", "po"):
        return "Pod"
    return resolve_kind(kind).kind


def _fmt_rel(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"+{seconds:.0f}s" if seconds >= 1 or seconds == 0 else f"+{seconds * 1000:.0f}ms"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"+{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"+{h}h{m:02d}m"


def _retried(d: dict[str, Any]) -> str:
    """A retry with the verdict stored at ``diagnosis_position``; with ``attempts`` it is the
    whole cycle (nothing else changed): requeued, and when it backs off, for how long."""
    text = f"retried, same verdict as position {d.get('diagnosis_position')}"
    if d.get("attempts") is not None:
        text += f" (attempt {d['attempts']}"
        text += f", next try in {d['backoff']:g}s)" if d.get("backoff") is not None else ")"
    return text


def _summary(e: StoredEvent | dict[str, Any]) -> str:
    t = e["type"] if isinstance(e, dict) else e.type
    d = e["data"] if isinstance(e, dict) else e.data
    if t.endswith("Created") or t.endswith("Updated"):
        return "object " + t[len(t) - 7 :].lower()
    if t.endswith("Deleted"):
        return "object deleted"
    return {
        "PodBound": lambda: f"bound to {d.get('node')}",
        "PodNominated": lambda: f"nominated to {d.get('node')}",
        "PodUnschedulable": lambda: f"{d.get('reason')}: {d.get('message')}",
        "PodGated": lambda: f"waiting ({d.get('plugin')}): {d.get('message')}",
        "PodPreempted": lambda: f"preempted by {d.get('preemptor')} on {d.get('node')} ({d.get('rule')})",
        "PodGroupConditionChanged": lambda: (
            f"{d.get('type')}={d.get('status')} {d.get('reason')}: {d.get('message')}"
        ),
        "PodGroupSatisfiedChanged": lambda: (
            f"PodGroupSatisfied={d.get('status')} {d.get('reason')}: {d.get('message')}"
        ),
        "CompositePodGroupConditionChanged": lambda: (
            f"{d.get('type')}={d.get('status')} {d.get('reason')}: {d.get('message')}"
        ),
        "PodGroupScheduled": lambda: (
            f"scheduled {len(d.get('pods') or [])} pod(s)"
            + (f" in {d['placement']}" if d.get("placement") else "")
        ),
        "PodGroupUnschedulable": lambda: f"{d.get('reason')}: {d.get('message')}",
        "PodGroupRetried": lambda: _retried(d),
        "PodRetried": lambda: _retried(d),
        "PodGroupRequeued": lambda: f"requeued to {d.get('queue')} (attempt {d.get('attempts')})",
        "PodBindingObserved": lambda: f"the cluster's {d.get('scheduler')} bound it to {d.get('node')}",
        "PodBindingSent": lambda: (
            f"binding to {d.get('node')} sent to the cluster: {d.get('outcome')}"
            + (f" ({d['code']})" if d.get("code") else "")
        ),
        "PodEvictionSent": lambda: (
            f"eviction sent to the cluster: {d.get('outcome')}" + (f" ({d['code']})" if d.get("code") else "")
        ),
        "ClusterEventObserved": lambda: (
            f"cluster Event {d.get('type')} {d.get('reason')}"
            + (f" (x{d['count']})" if (d.get("count") or 1) > 1 else "")
            + f": {d.get('message')}"
        ),
        "PodRequeued": lambda: f"requeued to {d.get('queue')} (attempt {d.get('attempts')})",
    }.get(t, lambda: "")()


def history(db: Database, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
    """The object's timeline: every event of its input and scheduler streams, the preemptions it
    caused and the admission refusals naming it, each with a one-line summary and its time
    relative to the first. Raises NotFound (a LookupError) when the log holds none."""
    kind = canonical_kind(kind)
    info = get_kind(kind)
    ns = (namespace or "default") if info.namespaced else ""
    key = f"{ns}/{name}" if ns else name
    # and what attach observed of it in a live cluster (its bindings, the cluster's Events)
    streams = [
        f"{kind.lower()}/{key}",
        f"sched/{kind.lower()}/{key}",
        f"attach/{kind.lower()}/{key}",
        f"attach/event/{kind.lower()}/{key}",
        *([f"attach/binding/{key}", f"attach/eviction/{key}"] if kind == "Pod" else []),
    ]
    with db.snapshot() as conn:  # one pooled connection and one snapshot for every read
        rows = log_q.object_history(conn, kind, key, name, streams)
        if kind in ("PodGroup", "CompositePodGroup"):
            # the group's PodGroupUnschedulable/Scheduled/Retried (a composite root's too)
            if kind == "CompositePodGroup":
                seen = {r["position"] for r in rows}
                rows += [
                    r
                    for r in log_q.group_decisions(conn, key, ATTEMPTS, 1 << 62)
                    if r["position"] not in seen
                ]
                rows.sort(key=lambda r: r["position"])
            rows = _with_inputs(conn, rows, ns)
    if not rows:
        raise NotFound(f"no events for {kind} {key}")
    t0 = rows[0]["at"]
    _with_field_changes(rows)
    return [
        {
            "position": r["position"],
            "time": r["at"].isoformat(),
            "relative": _fmt_rel((r["at"] - t0).total_seconds()),
            "type": r["type"],
            "stream": r["stream"],
            "summary": r.get("summary") or _summary(r),
            "data": r["data"],
            **({"changes": r["changes"]} if "changes" in r else {}),
        }
        for r in rows
    ]


# metadata the ledger or the API server maintains: not a change the user made
_BOOKKEEPING = frozenset(
    {"resourceVersion", "generation", "managedFields", "uid", "creationTimestamp", "selfLink"}
)
MAX_FIELDS = 6  # changed fields named in an update's summary (the others are counted)


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            if path == "metadata" and k in _BOOKKEEPING:
                continue
            _flatten(v, f"{path}.{k}" if path else str(k), out)
    else:
        out[path] = value


def field_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields an update changed: ``{field, from, to}`` per dotted path whose value differs
    (None: absent), in path order; metadata the server maintains is left out."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten(before, "", a)
    _flatten(after, "", b)
    return [
        {"field": k, "from": a.get(k), "to": b.get(k)}
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]


def _show(v: Any) -> str:
    if v is None:
        return "(none)"
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) or v == "" else str(v)


def _with_field_changes(rows: list[dict[str, Any]]) -> None:
    """Each ``*Updated`` row of the object's own stream gets ``changes`` (``field_changes``
    against the object the previous Created/Updated row wrote) and a summary naming them:
    ``object updated: spec.schedulingPolicy.gang.minCount 2 -> 1``."""
    prev: dict[str, dict[str, Any]] = {}
    for r in rows:
        t, data = r["type"], r.get("data") or {}
        if not (t.endswith("Created") or t.endswith("Updated")) or not isinstance(data.get("object"), dict):
            continue
        obj = data["object"]
        before = prev.get(r["stream"])
        prev[r["stream"]] = obj
        if before is None or not t.endswith("Updated"):
            continue
        changed = field_changes(before, obj)
        r["changes"] = changed
        if not changed:
            r["summary"] = "object updated: no field changed"
            continue
        shown = "; ".join(
            f"{c['field']} {_show(c['from'])} -> {_show(c['to'])}" for c in changed[:MAX_FIELDS]
        )
        more = f"; …and {len(changed) - MAX_FIELDS} more field(s)" if len(changed) > MAX_FIELDS else ""
        r["summary"] = f"object updated: {shown}{more}"


ATTEMPTS = ("PodGroupUnschedulable", "PodGroupScheduled", "PodGroupRetried")
NODE_ROWS = 5  # node changes listed one by one between two attempts; more are one counted row


def _with_inputs(conn: Any, rows: list[dict[str, Any]], ns: str) -> list[dict[str, Any]]:
    """The timeline plus the inputs (quotas, quota trees, nodes, PDBs, priority classes) that
    changed between the group's first attempt and its last one, or the head while it is still
    pending (issue 21): each change between two attempts as a row of type ``InputChanged``, the
    node changes of one gap as one counted row when there are more than ``NODE_ROWS``."""
    attempts = [r["position"] for r in rows if r["type"] in ATTEMPTS]
    if not attempts:
        return rows
    last = next(r for r in reversed(rows) if r["type"] in ATTEMPTS)
    # once scheduled, later input changes are not part of its story; while pending, they are
    upto = attempts[-1] if last["type"] == "PodGroupScheduled" else log_q.head(conn)
    changes = inputs_q.input_changes(conn, ns, [], attempts[0], upto)
    if not changes:
        return rows
    gaps: dict[int, list[dict[str, Any]]] = {}
    for c in changes:
        gap = sum(1 for a in attempts if a < c["position"])
        gaps.setdefault(gap, []).append(c)
    extra: list[dict[str, Any]] = []
    for gap in sorted(gaps):
        nodes = [c for c in gaps[gap] if c["kind"] == "Node"]
        for c in gaps[gap]:
            if c["kind"] == "Node" and len(nodes) > NODE_ROWS:
                continue
            extra.append(_input_row(c, f"input changed: {c['kind']} {c['name']} {c['change']}"))
        if len(nodes) > NODE_ROWS:
            s = inputs_q.summarise(nodes, max_names=NODE_ROWS)[0]
            more = f", …and {s['more']} more" if s["more"] else ""
            extra.append(
                _input_row(
                    nodes[-1],
                    f"inputs changed: {s['objects']} node(s), {s['events']} change(s) since position "
                    f"{s['first']}: {', '.join(s['names'])}{more}",
                )
            )
    return sorted(rows + extra, key=lambda r: r["position"])


def _input_row(c: dict[str, Any], summary: str) -> dict[str, Any]:
    return {
        "position": c["position"],
        "type": "InputChanged",
        "stream": c["stream"],
        "data": {"kind": c["kind"], "name": c["name"], "change": c["change"], "event": c["type"]},
        "meta": {},
        "at": c["at"],
        "summary": summary,
    }


__all__ = ["canonical_kind", "field_changes", "history"]
