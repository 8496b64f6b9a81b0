"""Implementation of the audit services (see api/audit.py for the contract)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ledger import store
from ledger.projections.temporal import quota_used, shadow_objects
from ledger.store import StoredEvent
from scheduler.bridge import DECISION_TYPES, Bridge, config_from, ts

GROUP_DECISIONS = (
    "PodGroupUnschedulable",
    "PodGroupScheduled",
    "PodGroupConditionChanged",
    "PodGroupRetried",
)


def _kind(kind: str) -> str:
    k = kind.lower()
    if k in ("podgroup", "podgroups", "pg"):
        return "PodGroup"
    if k in ("compositepodgroup", "compositepodgroups", "cpg"):
        return "CompositePodGroup"
    if k in ("pod", "pods", "po"):
        return "Pod"
    from ledger.resources.kinds import resolve_kind

    return resolve_kind(kind).kind


def _resolve_at(conn: Connection, at: int | str | None) -> int:
    """A position, an ISO time (the last event at or before it), or None (the head)."""
    head = int(conn.execute(sa.text("SELECT coalesce(max(position), 0) FROM events")).scalar_one())
    if at is None or at == "":
        return head
    if isinstance(at, int) or str(at).isdigit():
        return min(int(at), head)
    try:
        when = datetime.fromisoformat(str(at).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--at must be a log position or an ISO time, got {at!r}") from None
    pos = conn.execute(
        sa.text("SELECT max(position) FROM events WHERE effective_at <= :t"), {"t": when}
    ).scalar()
    return int(pos or 0)


# ----------------------------------------------------------------------------- state at a position


@contextmanager
def objects_at(engine: Engine, position: int) -> Iterator[Connection]:
    """A connection on which ``objects`` is the projection as of ``position`` (rolled back after).

    A temporary view named ``objects`` over the temporal projection shadows the real table for
    this session only (pg_temp is searched first): no fold, whatever the position.
    """
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            shadow_objects(conn, position)
            yield conn
        finally:
            trans.rollback()


def state_at(engine: Engine, position: int | str | None) -> dict[str, Any]:
    with engine.connect() as c:
        position = _resolve_at(c, position)
    with objects_at(engine, position) as conn:
        rows = conn.execute(
            sa.text(
                "SELECT kind, namespace, name, object, status FROM objects ORDER BY kind, namespace, name"
            )
        )
        objs = [{"kind": r[0], "namespace": r[1], "name": r[2], "object": r[3], "status": r[4]} for r in rows]
    return {"position": position, "objects": objs}


# ----------------------------------------------------------------------------- explain


def _fmt_rel(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"+{seconds:.0f}s" if seconds >= 1 or seconds == 0 else f"+{seconds * 1000:.0f}ms"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"+{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"+{h}h{m:02d}m"


def _events(conn: Connection, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = conn.execute(sa.text(sql), dict(params))
    return [
        {"position": r[0], "type": r[1], "stream": r[2], "data": r[3], "meta": r[4], "at": r[5]} for r in rows
    ]


_COLS = "position, type, stream, data, meta, effective_at"


def explain(
    engine: Engine, kind: str, namespace: str, name: str, *, at: int | str | None = None, nodes: bool = False
) -> dict[str, Any]:
    kind = _kind(kind)
    if kind not in ("PodGroup", "Pod", "CompositePodGroup"):
        raise ValueError(f"explain supports podgroup, compositepodgroup and pod, not {kind}")
    namespace = namespace or "default"
    key = f"{namespace}/{name}"
    with engine.connect() as conn:
        head = store.head(conn)
        pos = _resolve_at(conn, at)
    with objects_at(engine, pos) if pos < head else _live(engine) as conn:
        row = conn.execute(
            sa.text(
                "SELECT object, status, created_at FROM objects WHERE kind = :k AND namespace = :n AND name = :m"
            ),
            {"k": kind, "n": namespace, "m": name},
        ).first()
        if row is None:
            raise LookupError(f"{kind} {key} not found at position {pos}")
        obj, status, created_at = row
        if kind == "Pod":
            pods = [(name, obj, status)]
            group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        else:
            group = name if kind == "PodGroup" else None
            if kind == "PodGroup":
                members = conn.execute(
                    sa.text(
                        "SELECT name, object, status FROM objects WHERE kind = 'Pod' AND namespace = :n "
                        "AND object->'spec'->'schedulingGroup'->>'podGroupName' = :g ORDER BY name"
                    ),
                    {"n": namespace, "g": name},
                ).all()
            else:
                members = conn.execute(
                    sa.text(
                        "SELECT p.name, p.object, p.status FROM objects p JOIN objects g ON g.kind = 'PodGroup' "
                        "AND g.namespace = p.namespace AND g.object->'spec'->>'parentCompositePodGroupName' = :c "
                        "AND p.object->'spec'->'schedulingGroup'->>'podGroupName' = g.name "
                        "WHERE p.kind = 'Pod' AND p.namespace = :n ORDER BY p.name"
                    ),
                    {"n": namespace, "c": name},
                ).all()
            pods = [(r[0], r[1], r[2]) for r in members]
        quota = conn.execute(
            sa.text("SELECT name, object FROM objects WHERE kind = 'ElasticQuota' AND namespace = :n"),
            {"n": namespace},
        ).first()
        used = quota_used(conn, namespace, pos if pos < head else None) if quota is not None else {}

    with engine.connect() as conn:
        subject = f"{namespace}/{group}" if group else None
        if kind == "CompositePodGroup":
            decisions = _events(
                conn,
                f"SELECT {_COLS} FROM events WHERE stream = :s AND position <= :p ORDER BY position",
                {"s": f"sched/compositepodgroup/{key}", "p": pos},
            )
        elif subject:
            decisions = _events(
                conn,
                f"SELECT {_COLS} FROM events WHERE data->>'group' = :g AND type = ANY(:t) "
                "AND position <= :p ORDER BY position",
                {"g": subject, "t": list(GROUP_DECISIONS), "p": pos},
            )
        else:
            decisions = []
        pod_keys = [f"{namespace}/{p[0]}" for p in pods]
        pod_events = (
            _events(
                conn,
                f"SELECT {_COLS} FROM events WHERE stream = ANY(:s) AND position <= :p ORDER BY position",
                {"s": [f"sched/pod/{k}" for k in pod_keys], "p": pos},
            )
            if pod_keys
            else []
        )
        preemptor_keys = [subject] if subject else []
        if kind == "Pod":
            preemptor_keys.append(key)
        if kind == "CompositePodGroup":
            preemptor_keys.append(key)
        preempted = (
            _events(
                conn,
                f"SELECT {_COLS} FROM events WHERE type = 'PodPreempted' AND data->>'preemptor' = ANY(:k) "
                "AND position <= :p ORDER BY position",
                {"k": preemptor_keys, "p": pos},
            )
            if preemptor_keys
            else []
        )

    ctype = {
        "PodGroup": "PodGroupInitiallyScheduled",
        "CompositePodGroup": "CompositePodGroupInitiallyScheduled",
    }.get(kind)
    condition = None
    if ctype:
        condition = next((c for c in status.get("conditions") or [] if c.get("type") == ctype), None)
    elif kind == "Pod":
        condition = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)

    attempts = [
        e for e in decisions if e["type"] in ("PodGroupUnschedulable", "PodGroupScheduled", "PodGroupRetried")
    ]
    last = attempts[-1] if attempts else None
    if last and last["type"] == "PodGroupRetried":
        base = next(
            (e for e in reversed(decisions) if e["position"] == last["data"]["diagnosis_position"]), None
        )
        last = {**last, "data": {**(base["data"] if base else {}), "retried_at": last["position"]}}
    gates: list[dict[str, Any]] = []
    latest_gate: dict[str, dict[str, Any]] = {}
    for e in pod_events:
        if e["type"] == "PodGated":
            latest_gate[e["data"]["pod"]] = e
        elif e["type"] in ("PodBound", "PodUnschedulable"):
            latest_gate.pop(e["data"]["pod"], None)
    for pk, e in sorted(latest_gate.items()):
        gates.append(
            {
                "pod": pk,
                "plugin": e["data"]["plugin"],
                "message": e["data"]["message"],
                "position": e["position"],
                "since": e["at"].isoformat(),
            }
        )

    bound = [p for p in pods if (p[2] or {}).get("phase") == "Bound"]
    if kind == "Pod":
        phase = status.get("phase") or "Pending"
        if phase == "Bound":
            verdict = f"Scheduled on {status.get('nodeName')}"
        elif phase == "Preempted":
            verdict = f"Preempted by {status.get('preemptedBy')}"
        elif gates:
            verdict = f"Waiting (not attempted): {gates[-1]['message']}"
        elif condition:
            verdict = f"{condition.get('reason')}: {condition.get('message')}"
        else:
            verdict = "Pending: not attempted yet"
    elif condition and condition.get("status") == "True":
        verdict = "Scheduled" + (f" ({len(bound)}/{len(pods)} pods bound)" if kind == "PodGroup" else "")
    elif gates and (not condition or (last and gates[-1]["position"] > last["position"])):
        verdict = f"Waiting (not attempted): {gates[-1]['message']}"
    elif condition:
        verdict = f"{condition.get('reason')}: {condition.get('message')}"
    else:
        verdict = "Pending: not attempted yet"

    reasons: list[str] = []
    if last is not None:
        data = last["data"]
        if data.get("message"):
            reasons.append(data["message"])
        diag = data.get("diagnosis") or {}
        for plugin, count in (diag.get("rejected") or {}).items():
            reasons.append(f"{plugin} rejected {count} of {diag.get('nodes')} nodes")
        for reason, count in diag.get("reasons") or []:
            reasons.append(f"{count} × {reason}")
        if diag.get("feasible"):
            reasons.append(f"PlacementFeasible: {diag['feasible']}")
        for line in (diag.get("placements") or {}).get("results") or []:
            reasons.append(f"placement {line}")
    elif condition and condition.get("message"):
        reasons.append(condition["message"])

    preemption: dict[str, Any] | None = None
    msg = (condition or {}).get("message") or ""
    if preempted or "preemption" in msg:
        tried = (
            msg[msg.find("pod group preemption:") :]
            if "pod group preemption:" in msg
            else (msg[msg.find("preemption:") :] if "preemption:" in msg else "")
        )
        preemption = {
            "tried": True,
            "message": tried,
            "taken": bool(preempted),
            "victims": [
                {
                    "victim": e["data"]["victim"],
                    "node": e["data"]["node"],
                    "rule": e["data"]["rule"],
                    "unit": e["data"]["unit"],
                    "position": e["position"],
                }
                for e in preempted
            ],
        }
    elif last is not None and last["type"] == "PodGroupUnschedulable":
        preemption = {
            "tried": False,
            "message": "no preemption was attempted (or none was recorded) for the last attempt",
            "taken": False,
            "victims": [],
        }

    quota_doc = None
    if quota is not None:
        spec = quota[1].get("spec") or {}
        quota_doc = {"name": quota[0], "min": spec.get("min") or {}, "max": spec.get("max"), "used": used}

    doc: dict[str, Any] = {
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "position": pos,
        "verdict": verdict,
        "condition": condition,
        "reasons": reasons,
        "gates": gates,
        "attempts": len(attempts),
        "lastAttempt": (
            {
                "position": last["position"],
                "type": last["type"],
                "at": last["at"].isoformat(),
                "cycle": (last["meta"] or {}).get("cycle"),
                "data": last["data"],
            }
            if last
            else None
        ),
        "preemption": preemption,
        "quota": quota_doc,
        "pods": [
            {
                "name": p[0],
                "phase": (p[2] or {}).get("phase", "Pending"),
                "node": (p[2] or {}).get("nodeName"),
                "nominatedNode": (p[2] or {}).get("nominatedNodeName"),
            }
            for p in pods
        ],
    }
    if nodes:
        snap = (last or {}).get("meta", {}).get("snapshot_position") if last else None
        doc["nodes"] = node_table(
            engine,
            int(snap) if snap is not None else pos,
            [f"{namespace}/{p[0]}" for p in pods if (p[2] or {}).get("phase") != "Bound"]
            or [f"{namespace}/{p[0]}" for p in pods],
        )
        doc["nodesAt"] = int(snap) if snap is not None else pos
    return doc


@contextmanager
def _live(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn:
        yield conn


def node_table(engine: Engine, position: int, pod_keys: list[str]) -> list[dict[str, Any]]:
    """Recompute, at ``position``, every node's verdict per filter plugin for the given pods."""
    from scheduler.plugins.reference import filter_node, ref_nodes
    from scheduler.snapshot import make_demand

    bridge = Bridge(engine, config_from(None))
    bridge.catch_up(upto=position)
    nodes = sorted(bridge.nodes.values(), key=lambda n: (n.seq, n.name))
    refs = {r.node.name: r for r in ref_nodes(nodes)}
    for p in bridge.scheduler.pods():
        if p.node_name and p.node_name in refs:
            refs[p.node_name].add(make_demand(p.requests))
    table = []
    for key in pod_keys:
        pod = bridge.scheduler.pod(key)
        if pod is None:
            continue
        demand = make_demand(pod.requests)
        for n in nodes:
            res = filter_node(pod, demand, refs[n.name])
            table.append(
                {
                    "pod": key,
                    "node": n.name,
                    "fits": res is None,
                    "plugin": res[0] if res else "",
                    "reasons": res[1] if res else [],
                }
            )
    return table


def render_explain(doc: dict[str, Any]) -> str:
    lines = [
        f"{doc['kind']} {doc['namespace']}/{doc['name']} (as of position {doc['position']})",
        f"  Verdict:   {doc['verdict']}",
    ]
    if doc.get("condition"):
        c = doc["condition"]
        lines.append(f"  Condition: {c.get('type')}={c.get('status')} reason={c.get('reason')}")
    if doc.get("attempts"):
        la = doc["lastAttempt"]
        lines.append(
            f"  Attempts:  {doc['attempts']} (last: {la['type']} at {la['at']}, cycle {la.get('cycle')}, "
            f"position {la['position']})"
        )
    else:
        lines.append("  Attempts:  none recorded")
    if doc.get("reasons"):
        lines.append("  Why:")
        lines.extend(f"    - {r}" for r in doc["reasons"])
    if doc.get("gates"):
        lines.append("  Waiting before any attempt (PreEnqueue; upstream shows this nowhere):")
        lines.extend(
            f"    - {g['pod']}: {g['plugin']}: {g['message']} (since {g['since']})" for g in doc["gates"]
        )
    pre = doc.get("preemption")
    if pre:
        if pre["taken"]:
            lines.append(
                f"  Preemption: taken, {len(pre['victims'])} victim(s): "
                + ", ".join(f"{v['victim']} on {v['node']} ({v['rule']})" for v in pre["victims"])
            )
        else:
            lines.append(f"  Preemption: not taken: {pre['message'] or 'n/a'}")
    q = doc.get("quota")
    if q:
        from ledger.resources.quantity import format_resources

        def fmt(res: Any) -> str:
            if res is None:
                return "unlimited"
            return ", ".join(f"{k}={v}" for k, v in format_resources(res).items()) or "-"

        lines.append(f"  Quota {q['name']}: used {fmt(q['used'])}; min {fmt(q['min'])}; max {fmt(q['max'])}")
    if doc.get("pods"):
        lines.append("  Pods:")
        for p in doc["pods"]:
            where = p["node"] or (f"nominated {p['nominatedNode']}" if p.get("nominatedNode") else "-")
            lines.append(f"    {p['name']:<32} {p['phase']:<10} {where}")
    if doc.get("nodes") is not None:
        lines.append(f"  Per node × plugin (recomputed at position {doc.get('nodesAt')}):")
        for r in doc["nodes"]:
            verdict = "fits" if r["fits"] else f"{r['plugin']}: {', '.join(r['reasons'])}"
            lines.append(f"    {r['pod']:<36} {r['node']:<20} {verdict}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- history


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
        "CompositePodGroupConditionChanged": lambda: (
            f"{d.get('type')}={d.get('status')} {d.get('reason')}: {d.get('message')}"
        ),
        "PodGroupScheduled": lambda: (
            f"scheduled {len(d.get('pods') or [])} pod(s)"
            + (f" in {d['placement']}" if d.get("placement") else "")
        ),
        "PodGroupUnschedulable": lambda: f"{d.get('reason')}: {d.get('message')}",
        "PodGroupRetried": lambda: f"retried, same inputs as position {d.get('diagnosis_position')}",
        "PodGroupRequeued": lambda: f"requeued to {d.get('queue')} (attempt {d.get('attempts')})",
        "PodRequeued": lambda: f"requeued to {d.get('queue')} (attempt {d.get('attempts')})",
    }.get(t, lambda: "")()


def history(engine: Engine, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
    kind = _kind(kind)
    from ledger.resources.kinds import get_kind

    info = get_kind(kind)
    ns = (namespace or "default") if info.namespaced else ""
    key = f"{ns}/{name}" if ns else name
    streams = [f"{kind.lower()}/{key}", f"sched/{kind.lower()}/{key}"]
    with engine.connect() as conn:
        rows = _events(
            conn,
            f"SELECT {_COLS} FROM events WHERE stream = ANY(:s) OR (type = 'PodPreempted' AND "
            "data->>'preemptor' = :k) OR (type = 'AdmissionRejected' AND data->'rejected' @> "
            "jsonb_build_array(jsonb_build_object('kind', CAST(:kind AS text), 'name', CAST(:n AS text)))) "
            "ORDER BY position",
            {"s": streams, "k": key, "kind": kind, "n": name},
        )
    if not rows:
        raise LookupError(f"no events for {kind} {key}")
    t0 = rows[0]["at"]
    return [
        {
            "position": r["position"],
            "time": r["at"].isoformat(),
            "relative": _fmt_rel((r["at"] - t0).total_seconds()),
            "type": r["type"],
            "stream": r["stream"],
            "summary": _summary(r),
            "data": r["data"],
        }
        for r in rows
    ]


# ----------------------------------------------------------------------------- replay


@dataclass
class VerifyReport:
    runs: int = 0
    cycles: int = 0
    decisions: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _produced(bridge: Bridge, now: float) -> list[tuple[str, str, dict[str, Any]]]:
    results = bridge.scheduler.run_until_idle(now)
    bridge._pending.clear()
    for res in results:
        bridge.record(res)
    out = [(e.stream, e.type, _canon(e.data)) for e in bridge._pending]
    bridge._pending.clear()
    return out


def _canon(data: Mapping[str, Any]) -> dict[str, Any]:
    import orjson

    return dict(orjson.loads(orjson.dumps(data)))


def _runs(engine: Engine, config_override: Any = None) -> Iterator[tuple[str, Any]]:
    """Walk the log yielding ("input", event), ("start", event) and ("run", [decision events])."""
    group: list[StoredEvent] = []
    gkey: tuple[Any, ...] | None = None
    for ev in store.iter_all(engine):
        if ev.type in DECISION_TYPES:
            key = ((ev.meta or {}).get("snapshot_position"), ev.effective_at)
            if group and key != gkey:
                yield "run", group
                group = []
            gkey = key
            group.append(ev)
            continue
        if group:
            yield "run", group
            group = []
        yield ("start" if ev.type == "SchedulerStarted" else "input"), ev
    if group:
        yield "run", group


def verify_replay(engine: Engine, progress: Any = None) -> VerifyReport:
    """Re-run every recorded scheduling run from its snapshot and compare decisions byte for byte.

    Inputs are folded lazily, up to each run's recorded ``snapshot_position``: another writer's
    events can commit while a run is being computed, so they precede the run's decisions in the
    log although the run did not see them. They are folded before the next run, as the live
    scheduler did at its next catch-up.
    """
    rep = VerifyReport()
    bridge: Bridge | None = None
    pending: list[StoredEvent] = []

    def fold_upto(pos: int) -> None:
        while pending and pending[0].position <= pos:
            ev = pending.pop(0)
            if bridge is not None:
                bridge.fold(ev)

    for kind, item in _runs(engine):
        if kind == "start":
            snap = int(item.data["snapshot_position"])
            bridge = Bridge(engine, config_from(None))
            bridge.catch_up(upto=snap)
            pending = [e for e in pending if e.position > snap]
            continue
        if kind == "input":
            pending.append(item)
            continue
        recorded = [(e.stream, e.type, _canon(e.data)) for e in item]
        if bridge is None:
            rep.mismatches.append(
                {"position": item[0].position, "problem": "decisions without a SchedulerStarted"}
            )
            continue
        snap = int((item[0].meta or {}).get("snapshot_position", item[0].position - 1))
        fold_upto(snap)
        bridge.position = snap
        produced = _produced(bridge, ts(item[0].effective_at))
        rep.runs += 1
        rep.cycles += sum(1 for e in item if e.type == "SchedulingCycleCompleted")
        rep.decisions += len(recorded)
        if produced != recorded:
            first = next(
                (i for i, (a, b) in enumerate(zip(produced, recorded, strict=False)) if a != b),
                min(len(produced), len(recorded)),
            )
            rep.mismatches.append(
                {
                    "position": item[min(first, len(item) - 1)].position,
                    "recorded": recorded[first] if first < len(recorded) else None,
                    "replayed": produced[first] if first < len(produced) else None,
                    "recorded_count": len(recorded),
                    "replayed_count": len(produced),
                }
            )
        bridge.note_stored(item)
        if progress:
            progress(rep)
    return rep


# ----------------------------------------------------------------------------- what-if


def _outcomes(
    decisions: list[tuple[float, str, dict[str, Any]]],
) -> tuple[dict[str, dict[str, Any]], set[str]]:
    groups: dict[str, dict[str, Any]] = {}
    victims: set[str] = set()
    for when, typ, data in decisions:
        if typ == "PodGroupConditionChanged":
            g = groups.setdefault(data["group"], {"status": None, "reason": None, "scheduled_at": None})
            g["status"], g["reason"], g["message"] = data["status"], data["reason"], data["message"]
            if data["status"] == "True" and g["scheduled_at"] is None:
                g["scheduled_at"] = when
        elif typ == "PodPreempted":
            victims.add(data["victim"])
    return groups, victims


def whatif(engine: Engine, config: dict[str, Any]) -> dict[str, Any]:
    """Re-run the recorded inputs under ``config`` at the recorded run times (plus any timer the
    new configuration sets before the next input) and compare outcomes with the recorded ones."""
    new_cfg = config_from({"spec": config} if "spec" not in config else config)
    recorded: list[tuple[float, str, dict[str, Any]]] = []
    replayed: list[tuple[float, str, dict[str, Any]]] = []
    created: dict[str, float] = {}
    bridge = Bridge(engine, new_cfg)
    bridge.follow_config = False

    def run_at(now: float) -> None:
        for _stream, typ, data in _produced(bridge, now):
            replayed.append((now, typ, data))

    def drain(until: float | None) -> None:
        # timers of the new configuration that fall before the next input
        for _ in range(10_000):
            nxt = bridge.scheduler.next_timer(last_now[0])
            if nxt is None or (until is not None and nxt >= until):
                break
            last_now[0] = nxt
            run_at(nxt)

    last_now = [0.0]
    pending: list[StoredEvent] = []

    def fold_upto(pos: int | None) -> None:
        # Inputs are folded lazily, up to each run's recorded snapshot (as in verify_replay);
        # timers of the new configuration that fall before an input fire first.
        while pending and (pos is None or pending[0].position <= pos):
            ev = pending.pop(0)
            t = ts(ev.effective_at)
            drain(t)
            if ev.type == "PodGroupCreated":
                obj = ev.data["object"]["metadata"]
                created.setdefault(f"{obj.get('namespace') or 'default'}/{obj['name']}", t)
            bridge.fold(ev)
            last_now[0] = max(last_now[0], t)

    for kind, item in _runs(engine):
        if kind == "start":
            continue
        if kind == "input":
            pending.append(item)
            continue
        t = ts(item[0].effective_at)
        for e in item:
            recorded.append((t, e.type, e.data))
        fold_upto(int((item[0].meta or {}).get("snapshot_position", item[0].position - 1)))
        drain(t)
        last_now[0] = t
        run_at(t)
    fold_upto(None)
    drain(last_now[0] + 3600)

    before, v_before = _outcomes(recorded)
    after, v_after = _outcomes(replayed)
    changed = []
    for g in sorted(set(before) | set(after) | set(created)):
        b, a = before.get(g, {}), after.get(g, {})
        if (b.get("status"), b.get("reason")) != (a.get("status"), a.get("reason")) or b.get(
            "scheduled_at"
        ) != a.get("scheduled_at"):
            c0 = created.get(g)
            wb = (b["scheduled_at"] - c0) if b.get("scheduled_at") is not None and c0 is not None else None
            wa = (a["scheduled_at"] - c0) if a.get("scheduled_at") is not None and c0 is not None else None
            changed.append(
                {
                    "group": g,
                    "before": {"status": b.get("status"), "reason": b.get("reason"), "waitSeconds": wb},
                    "after": {"status": a.get("status"), "reason": a.get("reason"), "waitSeconds": wa},
                    "waitDelta": (wa - wb) if wa is not None and wb is not None else None,
                    "outcomeChanged": (b.get("status"), b.get("reason"))
                    != (a.get("status"), a.get("reason")),
                }
            )
    return {
        "changed": changed,
        "preemptionsAdded": sorted(v_after - v_before),
        "preemptionsAvoided": sorted(v_before - v_after),
        "recordedDecisions": len(recorded),
        "replayedDecisions": len(replayed),
    }
