"""What the dashboard pages show: the data of the groups, group, charts and log pages (the
HTTP layer renders it into templates and SVG charts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from api.services import reports
from api.services.explain import explain, render_explain
from api.services.history import history
from ledger.projections.temporal import shadow_objects
from ledger.queries import analytics as analytics_q
from ledger.queries import log as log_q
from ledger.queries import objects as objects_q

if TYPE_CHECKING:
    from ledger.database import Database


def groups_page(
    db: Database,
    q: str = "",
    state: str = "",
    *,
    at: int | None = None,
    at_when: datetime | None = None,
    namespace: str = "",
    priority_class: str = "",
) -> dict[str, Any]:
    """Groups (filtered by text ``q``, ``state``, ``namespace`` and ``priority_class``) as of
    position ``at`` (None: now), counts per state, the wait distribution and attempts over time."""
    with db.snapshot() as conn:
        if at is not None:
            shadow_objects(conn, at)  # ``objects`` as of the position for this transaction
        rows = reports.groups(conn, now=at_when) if at is not None else reports.groups(conn)
        if namespace:
            rows = [r for r in rows if r.namespace == namespace]
        if priority_class:
            rows = [r for r in rows if r.priority_class == priority_class]
        wait = reports.wait_distribution(rows)
        attempts = reports.attempts_over_time(conn)
    counts = {s: sum(1 for r in rows if r.state == s) for s in ("scheduled", "unschedulable", "pending")}
    return {
        "rows": reports.filter_groups(rows, q, state),
        "total": len(rows),
        "counts": counts,
        "wait": wait,
        "attempts": attempts,
    }


def plain_explanation(
    kind: str,
    ns: str,
    name: str,
    status: dict[str, Any],
    pods: list[dict[str, Any]],
    events: list[dict[str, Any]],
) -> str:
    """A short explanation from the projection and the group's events, for the groups
    ``explain`` does not describe on this page (CompositePodGroups)."""
    cond = reports.initially_scheduled(status)
    lines = []
    if cond.get("status") == "True":
        where = sorted({p["node"] for p in pods if p["node"]})
        lines.append(f"{kind} {ns}/{name} is scheduled ({cond.get('reason') or 'Scheduled'}).")
        if where:
            lines.append(f"Its pods run on {len(where)} node(s): {', '.join(where)}.")
    elif cond:
        lines.append(f"{kind} {ns}/{name} is not scheduled: {cond.get('reason')}.")
        if cond.get("message"):
            lines.append(str(cond["message"]))
    else:
        lines.append(f"{kind} {ns}/{name} has not been scheduled yet.")
    last_diag = next((e for e in reversed(events) if e["type"] == "PodGroupUnschedulable"), None)
    if last_diag and cond.get("status") != "True":
        lines.append(
            f"Last diagnosis (position {last_diag['position']}): {last_diag['data'].get('message', '')}"
        )
    attempts = [e for e in events if e["type"].endswith("Requeued")]
    if attempts and cond.get("status") != "True":
        a = attempts[-1]["data"]
        lines.append(f"Attempted {a.get('attempts')} time(s); now in the {a.get('queue')} queue.")
    pending = [p for p in pods if p["phase"] != "Bound"]
    if pending and cond.get("status") != "True":
        lines.append(f"{len(pending)} of {len(pods)} pods are waiting.")
    return "\n".join(lines)


def _timeline(
    db: Database, kind: str, namespace: str, name: str, events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The object's history (or, when the log names it nowhere else, its group events)."""
    try:
        items = history(db, kind.lower(), namespace, name)
    except LookupError:
        items = []
    if items:
        return [
            {
                "position": h.get("position"),
                "time": h.get("time"),
                "type": h.get("type", ""),
                "summary": h.get("summary") or reports.summarize(h.get("type", ""), h.get("data") or {}),
                "category": reports.category(h.get("type", ""), h.get("data") or {}),
            }
            for h in items
        ]
    return [
        {
            "position": e["position"],
            "time": e["time"],
            "type": e["type"],
            "summary": reports.summarize(e["type"], e["data"]),
            "category": reports.category(e["type"], e["data"]),
        }
        for e in events
    ]


def group_page(
    db: Database, kind: str, namespace: str, name: str, at: int | None = None
) -> dict[str, Any] | None:
    """One group as of position ``at`` (None: now): manifest, status, condition, pods (or child
    groups), timeline (entries after ``at`` marked ``future``), explanation (with the predicted
    start while pending) and pods per node; None if it does not exist then."""
    with db.snapshot() as conn:
        if at is not None:
            shadow_objects(conn, at)
        found = objects_q.get_object(conn, kind, namespace, name)
        if found is None:
            return None
        obj, status, created = found
        status = status or {}
        pods = reports.group_pods(conn, namespace, name) if kind == "PodGroup" else []
        children = objects_q.child_groups(conn, namespace, name) if kind == "CompositePodGroup" else []
        events = log_q.group_timeline(conn, kind, namespace, name)
    explanation = None
    if kind == "PodGroup":
        try:
            explanation = render_explain(explain(db, "podgroup", namespace, name, at=at))
        except LookupError:
            explanation = None
    timeline = _timeline(db, kind, namespace, name, events)
    for t in timeline:
        t["future"] = at is not None and int(t["position"] or 0) > at
    if not explanation:
        explanation = plain_explanation(kind, namespace, name, status, pods, events)
    per_node: dict[str, int] = {}
    for p in pods:
        if p["node"]:
            per_node[p["node"]] = per_node.get(p["node"], 0) + 1
    return {
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "object": obj,
        "status": status,
        "condition": reports.initially_scheduled(status),
        "created": created,
        "pods": pods,
        "children": children,
        "timeline": timeline,
        "explanation": explanation,
        "per_node": {n: per_node[n] for n in sorted(per_node)},
    }


def charts_page(db: Database) -> dict[str, Any]:
    """Every figure of the charts page: wait distribution, unschedulable reasons, attempts and
    preemptions over time, node and quota utilization."""
    with db.snapshot() as conn:
        rows = reports.groups(conn)
        return {
            "wait": reports.wait_distribution(rows, conn),
            "unschedulable": reports.unschedulable_over_time(conn),
            "attempts": reports.attempts_over_time(conn),
            "preemptions": reports.preemptions_over_time(conn),
            "nodes": reports.node_utilization(conn),
            "quotas": reports.quota_usage(conn),
        }


def log_page(
    db: Database, *, after: int | None, before: int | None, limit: int, type_: str, stream: str
) -> tuple[list[dict[str, Any]], int]:
    """A page of the log (see ``ledger.queries.log.log_page``) and the head."""
    with db.snapshot() as conn:
        return log_q.log_page(conn, after=after, before=before, limit=limit, type_=type_, stream=stream)


def head(db: Database) -> int:
    """The log's last position."""
    with db.connect() as conn:
        return log_q.head(conn)


def at_time(db: Database, at: str | None) -> tuple[int | None, datetime | None]:
    """``?at=POSITION|TIME`` as (position, the time of its event); (None, None) without one.
    Raises ValueError for anything else."""
    if not at:
        return None, None
    from api.services.explain import resolve_at

    with db.connect() as conn:
        pos = resolve_at(conn, at)
        row = conn.execute(
            "SELECT effective_at FROM events WHERE position <= %s ORDER BY position DESC LIMIT 1", (pos,)
        ).fetchone()
    return pos, (row[0] if row else None)


def time_series(
    db: Database,
    *,
    namespace: str | None = None,
    priority: int | None = None,
    quota: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, Any]:
    """The hourly series of the plots over time (issue 34), aligned on every hour of [since,
    until) (default: the whole history): pending pods and groups (hour averages), GPU and CPU
    allocation against the capacity of that hour, wait p50/p90 of the starts in the hour, and
    preemptions per hour."""
    with db.snapshot() as conn:
        lo, hi = analytics_q.span(conn)
        names = analytics_q.namespaces(conn)
        if lo is None or hi is None:
            return {"times": [], "series": {}, "namespaces": names}
        start = max(lo, _hour(since)) if since else lo
        end = min(hi + timedelta(hours=1), until) if until else hi + timedelta(hours=1)
        rows = analytics_q.hourly(conn, start, end, namespace, priority, quota)
    times: list[datetime] = []
    t = start
    while t < end and len(times) < 24 * 400:
        times.append(t)
        t += timedelta(hours=1)
    idx = {h: i for i, h in enumerate(times)}

    def col(n: int) -> list[float | None]:
        return [None] * len(times) if n else [0.0] * len(times)

    pods, groups = col(0), col(0)
    for h, p, g in rows["pending"]:
        if h in idx:
            pods[idx[h]], groups[idx[h]] = float(p or 0), float(g or 0)
    gpu_a, gpu_c, cpu_a, cpu_c = col(1), col(1), col(1), col(1)
    for h, res, a, c in rows["allocation"]:
        if h not in idx:
            continue
        i = idx[h]
        if res == "gpu":
            gpu_a[i], gpu_c[i] = float(a or 0), (float(c) if c is not None else None)
        else:
            cpu_a[i], cpu_c[i] = float(a or 0) / 1000, (float(c) / 1000 if c is not None else None)
    p50, p90 = col(1), col(1)
    for h, _n, a, b in rows["waits"]:
        if h in idx:
            p50[idx[h]], p90[idx[h]] = float(a), float(b)
    pre = col(0)
    for h, n in rows["preemptions"]:
        if h in idx:
            pre[idx[h]] = float(n)
    return {
        "times": times,
        "namespaces": names,
        "series": {
            "pending": {"pending pods (avg)": pods, "pending groups (avg)": groups},
            "gpu": {"GPUs allocated (avg)": gpu_a, "GPUs that existed (avg)": gpu_c},
            "cpu": {"cores allocated (avg)": cpu_a, "cores that existed (avg)": cpu_c},
            "waits": {"wait p50 (s)": p50, "wait p90 (s)": p90},
            "preemptions": {"preemptions": pre},
        },
    }


def _hour(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


__all__ = [
    "at_time",
    "charts_page",
    "group_page",
    "groups_page",
    "log_page",
    "plain_explanation",
    "time_series",
]
