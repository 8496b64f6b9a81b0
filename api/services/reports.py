"""The dashboard's figures: groups with their wait, distributions and series over time, node
and quota utilization, and one-line summaries of events.

The charts over time read the reporting views that Grafana reads too (``v_group_wait_times``,
``v_unschedulable_reasons``, ``v_preemptions``) when the database has them and the role may
read them, and otherwise compute the same figures from the ``events`` table. Node and quota
utilization show the current state, so they come from the ``objects`` projection (the views
``v_node_utilization`` / ``v_quota_usage`` hold the same figures over time, for Grafana). The
SQL lives in ``ledger.queries.reports``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger.queries import objects as objects_q
from ledger.queries import reports as reports_q
from ledger.sql import Conn
from scheduler.edge.bridge import pod_requests

GROUP_KINDS = ("PodGroup", "CompositePodGroup")
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = max(0.0, seconds)
    if s < 1:
        return f"{s * 1000:.0f}ms"
    if s < 60:
        return f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    if s < 86400:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    return f"{int(s // 86400)}d{int(s % 86400 // 3600)}h"


def fmt_quantity(resource: str, value: float) -> str:
    if resource == "cpu":
        return f"{value / 1000:g}"
    if resource == "memory":
        return f"{value / 2**30:.0f}Gi"
    return f"{value:g}"


def _parse_ts(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


@dataclass
class GroupRow:
    kind: str
    namespace: str
    name: str
    condition_status: str  # "True", "False" or "" (never attempted)
    reason: str
    message: str
    created_at: datetime
    scheduled_at: datetime | None
    pods: int
    bound: int
    min_count: int | None
    priority_class: str
    wait_seconds: float
    waiting: bool

    @property
    def state(self) -> str:
        if self.condition_status == "True":
            return "scheduled"
        if self.condition_status == "False":
            return "unschedulable"
        return "pending"

    @property
    def wait(self) -> str:
        return fmt_duration(self.wait_seconds)

    @property
    def url(self) -> str:
        suffix = "?kind=composite" if self.kind == "CompositePodGroup" else ""
        return f"/groups/{self.namespace}/{self.name}{suffix}"


def initially_scheduled(status: Mapping[str, Any]) -> Mapping[str, Any]:
    for c in status.get("conditions") or []:
        if str(c.get("type", "")).endswith("InitiallyScheduled"):
            return dict(c)
    return {}


def groups(conn: Conn, *, now: datetime | None = None) -> list[GroupRow]:
    """Every PodGroup and CompositePodGroup with its condition, members and wait so far."""
    now = now or datetime.now(UTC)
    rows = reports_q.group_rows(conn)
    out = []
    for kind, ns, name, obj, status, created, n, bound in rows:
        cond = initially_scheduled(status or {})
        spec = obj.get("spec") or {}
        gang = ((spec.get("schedulingPolicy") or {}).get("gang") or {}).get("minCount")
        scheduled = _parse_ts((status or {}).get("scheduledAt")) if cond.get("status") == "True" else None
        waiting = scheduled is None
        wait = ((scheduled or now) - created).total_seconds()
        out.append(
            GroupRow(
                kind=kind,
                namespace=ns,
                name=name,
                condition_status=str(cond.get("status", "")),
                reason=str(cond.get("reason", "")),
                message=str(cond.get("message", "") or ""),
                created_at=created,
                scheduled_at=scheduled,
                pods=int(n),
                bound=int(bound),
                min_count=int(gang) if isinstance(gang, int) else None,
                priority_class=str(spec.get("priorityClassName") or ""),
                wait_seconds=wait,
                waiting=waiting,
            )
        )
    return out


def filter_groups(rows: Iterable[GroupRow], q: str = "", state: str = "") -> list[GroupRow]:
    q = q.strip().lower()
    out = []
    for r in rows:
        if state and r.state != state:
            continue
        if q and not any(q in s.lower() for s in (r.namespace, r.name, r.reason, r.message, r.kind)):
            continue
        out.append(r)
    return out


# ---------------------------------------------------------------------------------- charts

WAIT_BUCKETS: tuple[tuple[str, float], ...] = (
    ("<1s", 1),
    ("1-10s", 10),
    ("10s-1m", 60),
    ("1-10m", 600),
    ("10m-1h", 3600),
    (">1h", float("inf")),
)


def wait_distribution(
    rows: Iterable[GroupRow], conn: Conn | None = None
) -> tuple[list[str], list[float], list[float]]:
    """Counts per wait bucket: (labels, scheduled groups, groups still waiting); from
    ``v_group_wait_times`` (PodGroups) when given a connection that can read it."""
    waits: list[tuple[float, bool]]
    from_view = reports_q.view_wait_times(conn) if conn is not None else None
    if from_view is not None:
        waits = [(w, not scheduled) for w, scheduled in from_view]
    else:
        waits = [(r.wait_seconds, r.waiting) for r in rows]
    labels = [b[0] for b in WAIT_BUCKETS]
    done = [0.0] * len(labels)
    waiting = [0.0] * len(labels)
    for seconds, is_waiting in waits:
        for i, (_, upper) in enumerate(WAIT_BUCKETS):
            if seconds < upper:
                (waiting if is_waiting else done)[i] += 1
                break
    return labels, done, waiting


def _bucketize(
    points: list[tuple[datetime, str]], n_buckets: int = 12
) -> tuple[list[str], dict[str, list[float]]]:
    if not points:
        return [], {}
    t0 = min(p[0] for p in points)
    t1 = max(p[0] for p in points)
    span = max((t1 - t0).total_seconds(), 1.0)
    n = n_buckets if span > 1.0 else 1
    step = span / n
    labels = []
    for i in range(n):
        start = t0 + timedelta(seconds=step * i)
        labels.append(start.strftime("%H:%M:%S") if span < 86400 else start.strftime("%m-%d %H:%M"))
    series: dict[str, list[float]] = {}
    for t, key in points:
        i = min(int((t - t0).total_seconds() / step), n - 1)
        series.setdefault(key, [0.0] * n)[i] += 1
    ordered = dict(sorted(series.items(), key=lambda kv: -sum(kv[1])))
    return labels, ordered


def unschedulable_over_time(conn: Conn) -> tuple[list[str], dict[str, list[float]]]:
    """Unschedulable attempts: per day and plugin from ``v_unschedulable_reasons`` (attempts
    rejected before any node was filtered appear by reason), else by reason from the events."""
    rows = reports_q.view_unschedulable_by_day(conn)
    if rows is not None:
        days = sorted({d for d, _, _ in rows})[-14:]
        series: dict[str, list[float]] = {}
        for d, key, n in rows:
            if d in days:
                series.setdefault(key, [0.0] * len(days))[days.index(d)] += n
        ordered = dict(sorted(series.items(), key=lambda kv: -sum(kv[1])))
        return [d.strftime("%Y-%m-%d") for d in days], ordered
    pts = reports_q.event_times(conn, ["PodGroupUnschedulable", "PodUnschedulable", "PodRetried"], "reason")
    return _bucketize(pts)


def attempts_over_time(conn: Conn) -> tuple[list[str], dict[str, list[float]]]:
    pts = reports_q.event_times(conn, ["SchedulingCycleCompleted", *reports_q.RETRY_TYPES], "result")
    return _bucketize(pts)


def preemptions_over_time(conn: Conn) -> tuple[list[str], dict[str, list[float]]]:
    rows = reports_q.view_preemption_times(conn)
    if rows is not None:
        return _bucketize(rows)
    pts = reports_q.event_times(conn, ["PodPreempted"], "rule")
    return _bucketize(pts)


def _bound_requests(conn: Conn) -> list[tuple[str, str, dict[str, int]]]:
    """(namespace, node, requests) of every bound pod."""
    return [(ns, node, pod_requests(spec)) for ns, node, spec in objects_q.bound_pod_specs(conn)]


@dataclass
class Usage:
    label: str
    used: dict[str, float] = field(default_factory=dict)
    total: dict[str, float] = field(default_factory=dict)
    low: dict[str, float] = field(default_factory=dict)  # quota min

    def bars(self) -> list[tuple[str, float, str]]:
        out = []
        for r in RESOURCES:
            total = self.total.get(r)
            if not total:
                continue
            used = self.used.get(r, 0.0)
            out.append((r, used / total, f"{fmt_quantity(r, used)}/{fmt_quantity(r, total)}"))
        return out


def node_utilization(conn: Conn) -> list[Usage]:
    usage = {
        name: Usage(
            name,
            total={k: float(v) for k, v in alloc.items() if k in RESOURCES and isinstance(v, int | float)},
        )
        for name, alloc in reports_q.node_allocatable(conn)
    }
    for _ns, node, req in _bound_requests(conn):
        if node in usage:
            for k, v in req.items():
                if k in RESOURCES:
                    usage[node].used[k] = usage[node].used.get(k, 0.0) + v
    return list(usage.values())


def quota_usage(conn: Conn) -> list[Usage]:
    quotas = reports_q.quota_specs(conn)
    used_ns: dict[str, dict[str, float]] = {}
    for ns, _node, req in _bound_requests(conn):
        acc = used_ns.setdefault(ns, {})
        for k, v in req.items():
            acc[k] = acc.get(k, 0.0) + v
    out = []
    for ns, name, spec in quotas:
        mx = {k: float(v) for k, v in (spec.get("max") or {}).items() if isinstance(v, int | float)}
        mn = {k: float(v) for k, v in (spec.get("min") or {}).items() if isinstance(v, int | float)}
        out.append(Usage(f"{ns}/{name}", used=dict(used_ns.get(ns, {})), total=mx or mn, low=mn))
    return out


# ---------------------------------------------------------------------------------- group page


def group_pods(conn: Conn, ns: str, name: str) -> list[dict[str, Any]]:
    """The group's pods as the group page lists them (phase, node, requests, why pending)."""
    out = []
    for pod, obj, status in objects_q.group_pods(conn, ns, name):
        status = status or {}
        req = pod_requests(obj.get("spec") or {})
        cond: dict[str, Any] = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
        )
        out.append(
            {
                "name": pod,
                "phase": status.get("phase") or "Pending",
                "node": status.get("nodeName") or "",
                "nominated": status.get("nominatedNodeName") or "",
                "requests": ", ".join(f"{k} {fmt_quantity(k, v)}" for k, v in sorted(req.items()) if v),
                "message": cond.get("message", "") if cond.get("status") == "False" else "",
            }
        )
    return out


def category(event_type: str, data: Mapping[str, Any] | None = None) -> str:
    data = data or {}
    if event_type.endswith(("Created", "Updated", "Deleted")):
        return "input"
    if "Unschedulable" in event_type or (
        event_type.endswith("ConditionChanged") and data.get("status") == "False"
    ):
        return "unschedulable"
    if "Preempt" in event_type:
        return "preemption"
    if event_type in ("PodGroupScheduled", "PodBound") or (
        event_type.endswith("ConditionChanged") and data.get("status") == "True"
    ):
        return "scheduled"
    return "other"


def summarize(event_type: str, data: Mapping[str, Any]) -> str:
    if event_type.endswith(("Created", "Updated")):
        return event_type
    if event_type == "PodGroupScheduled":
        placement = data.get("placement")
        return f"scheduled {len(data.get('pods') or [])} pods" + (f" in {placement}" if placement else "")
    if event_type == "PodGroupSatisfiedChanged":
        return f"PodGroupSatisfied={data.get('status')} ({data.get('reason')}): {data.get('message')}"
    if event_type.endswith("ConditionChanged"):
        msg = f"{data.get('type')}={data.get('status')} ({data.get('reason')})"
        return msg + (f": {data.get('message')}" if data.get("message") else "")
    if event_type in ("PodGroupUnschedulable", "PodUnschedulable"):
        return f"{data.get('reason')}: {data.get('message')}"
    if event_type == "PodPreempted":
        return f"{data.get('victim')} preempted by {data.get('preemptor')} on {data.get('node')} ({data.get('rule')})"
    if event_type.endswith("Requeued"):
        return f"requeued to {data.get('queue')} after {data.get('attempts')} attempt(s)"
    if event_type == "PodBound":
        return f"{data.get('pod')} → {data.get('node')}"
    items = list(data.items())
    text = ", ".join(f"{k}={v}" for k, v in items[:4])
    return text + (f", …and {len(items) - 4} more field(s)" if len(items) > 4 else "")
