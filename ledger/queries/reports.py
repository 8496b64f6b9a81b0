"""The dashboard's and the metrics' figures. Charts over time read the reporting views that
Grafana reads too (``v_group_wait_times``, ``v_unschedulable_reasons``, ``v_preemptions``) when
the database has them and the role may read them; callers fall back to the events otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from ledger.queries.schema import view_readable
from ledger.sql import Conn, scalar


def group_rows(conn: Conn) -> list[tuple[Any, ...]]:
    """(kind, namespace, name, manifest, status, created_at, members, members done) of every
    PodGroup (members = pods, done = bound) and CompositePodGroup (members = child groups,
    done = scheduled), by (namespace, name, kind)."""
    rows = conn.execute(
        """
            WITH pods AS (
              SELECT namespace, object->'spec'->'schedulingGroup'->>'podGroupName' AS grp,
                     count(*) AS n, count(*) FILTER (WHERE status->>'phase' = 'Bound') AS bound
              FROM objects WHERE kind = 'Pod' AND object->'spec'->'schedulingGroup' ? 'podGroupName'
              GROUP BY 1, 2
            ), children AS (
              SELECT namespace, object->'spec'->>'parentCompositePodGroupName' AS parent, count(*) AS n,
                     count(*) FILTER (WHERE EXISTS (
                       SELECT 1 FROM jsonb_array_elements(coalesce(status->'conditions', '[]')) c
                       WHERE c->>'type' LIKE '%InitiallyScheduled' AND c->>'status' = 'True')) AS bound
              FROM objects WHERE kind = 'PodGroup' AND object->'spec' ? 'parentCompositePodGroupName'
              GROUP BY 1, 2
            )
            SELECT o.kind, o.namespace, o.name, o.object, o.status, o.created_at,
                   coalesce(p.n, c.n, 0), coalesce(p.bound, c.bound, 0)
            FROM objects o
            LEFT JOIN pods p ON o.kind = 'PodGroup' AND p.namespace = o.namespace AND p.grp = o.name
            LEFT JOIN children c ON o.kind = 'CompositePodGroup' AND c.namespace = o.namespace AND c.parent = o.name
            WHERE o.kind IN ('PodGroup', 'CompositePodGroup')
            ORDER BY o.namespace, o.name, o.kind
            """
    ).fetchall()
    return [tuple(r) for r in rows]


def view_wait_times(conn: Conn) -> list[tuple[float, bool]] | None:
    """(wait seconds, scheduled) of every PodGroup from ``v_group_wait_times``; None when the
    view is not readable."""
    if not view_readable(conn, "v_group_wait_times"):
        return None
    return [
        (float(w), bool(done))
        for w, done in conn.execute("SELECT wait_seconds, scheduled FROM v_group_wait_times")
    ]


# the key each chart over time groups events by, read from the event data
# A retry that changed nothing is one PodRetried, or one PodGroupRetried with `attempts` (issue
# 14): it stands for a whole cycle whose result was unschedulable (reason Unschedulable).
RETRY_TYPES = ("PodRetried", "PodGroupRetried")
WHOLE_CYCLE = "(type <> 'PodGroupRetried' OR data->'attempts' IS NOT NULL)"
_RETRY = "CASE WHEN type IN ('PodRetried', 'PodGroupRetried') THEN '{}' END"
_EVENT_KEYS = {
    "reason": f"coalesce(data->>'reason', {_RETRY.format('Unschedulable')})",
    "result": f"coalesce(data->>'result', {_RETRY.format('unschedulable')})",
    "rule": "coalesce(data->>'rule', 'preempted')",
}


def event_times(conn: Conn, types: Sequence[str], key: str, limit: int = 20000) -> list[tuple[datetime, str]]:
    """(effective time, data[key]) of the newest ``limit`` events of ``types``, oldest first;
    ``key`` is reason, result or rule."""
    rows = conn.execute(
        f"SELECT effective_at, {_EVENT_KEYS[key]} FROM ("
        f"SELECT position, effective_at, type, data FROM events WHERE type = ANY(%(t)s) AND {WHOLE_CYCLE} "
        "ORDER BY position DESC LIMIT %(lim)s) e ORDER BY position",
        {"t": list(types), "lim": limit},
    ).fetchall()
    return [(t, str(k or "unknown")) for t, k in rows]


def view_unschedulable_by_day(conn: Conn) -> list[tuple[date, str, float]] | None:
    """(day, plugin or reason, attempts) from ``v_unschedulable_reasons``, newest days first
    (attempts rejected before any node was filtered appear by reason); None when unreadable."""
    if not view_readable(conn, "v_unschedulable_reasons"):
        return None
    rows = conn.execute(
        "SELECT day, CASE WHEN plugin = '(none)' THEN reason ELSE plugin END, sum(attempts) "
        "FROM v_unschedulable_reasons GROUP BY 1, 2 ORDER BY 1 DESC LIMIT 500"
    ).fetchall()
    return [(d, str(k or "unknown"), float(n)) for d, k, n in rows]


def view_preemption_times(conn: Conn) -> list[tuple[datetime, str]] | None:
    """(time, rule) of the newest 20000 preemptions from ``v_preemptions``, oldest first; None
    when unreadable."""
    if not view_readable(conn, "v_preemptions"):
        return None
    rows = conn.execute(
        "SELECT at, coalesce(rule, 'preempted') FROM "
        "(SELECT position, at, rule FROM v_preemptions ORDER BY position DESC LIMIT 20000) p ORDER BY position"
    ).fetchall()
    return [(t, str(k)) for t, k in rows]


def node_allocatable(conn: Conn) -> list[tuple[str, dict[str, Any]]]:
    """(name, status.allocatable) of every node, by name."""
    rows = conn.execute(
        "SELECT name, object->'status'->'allocatable' FROM objects WHERE kind = 'Node' ORDER BY name"
    ).fetchall()
    return [(name, alloc or {}) for name, alloc in rows]


def quota_specs(conn: Conn) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, name, spec) of every ElasticQuota, by (namespace, name)."""
    rows = conn.execute(
        "SELECT namespace, name, object->'spec' FROM objects WHERE kind = 'ElasticQuota' ORDER BY namespace, name"
    ).fetchall()
    return [(ns, name, spec or {}) for ns, name, spec in rows]


COUNTED_TYPES = ("SchedulingCycleCompleted", "PodPreempted", *RETRY_TYPES)


def counted_events_after(conn: Conn, position: int, limit: int = 50000) -> list[tuple[int, str, str | None]]:
    """(position, type, data.result) of cycle and preemption events after ``position``; a retry
    that changed nothing (a whole cycle in one event) reads as a SchedulingCycleCompleted whose
    result is unschedulable."""
    rows = conn.execute(
        f"SELECT position, type, {_EVENT_KEYS['result']} FROM events "
        f"WHERE type = ANY(%(t)s) AND position > %(p)s AND {WHOLE_CYCLE} ORDER BY position LIMIT %(lim)s",
        {"t": list(COUNTED_TYPES), "p": position, "lim": limit},
    ).fetchall()
    return [(int(p), "SchedulingCycleCompleted" if t in RETRY_TYPES else t, r) for p, t, r in rows]


def pending_pods(conn: Conn) -> int:
    """How many pods are pending (no phase or phase Pending)."""
    return int(
        scalar(
            conn,
            "SELECT count(*) FROM objects WHERE kind = 'Pod' AND coalesce(status->>'phase', 'Pending') = 'Pending'",
        )
    )


def unscheduled_groups(conn: Conn) -> dict[str, int]:
    """kind -> how many PodGroups / CompositePodGroups have no InitiallyScheduled=True condition."""
    rows = conn.execute(
        "SELECT kind, count(*) FROM objects o WHERE kind IN ('PodGroup', 'CompositePodGroup') "
        "AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(o.status->'conditions', '[]')) c "
        "WHERE c->>'type' LIKE '%InitiallyScheduled' AND c->>'status' = 'True') GROUP BY kind"
    ).fetchall()
    return {k: int(n) for k, n in rows}


__all__ = [
    "COUNTED_TYPES",
    "RETRY_TYPES",
    "counted_events_after",
    "event_times",
    "group_rows",
    "node_allocatable",
    "pending_pods",
    "quota_specs",
    "unscheduled_groups",
    "view_preemption_times",
    "view_unschedulable_by_day",
    "view_wait_times",
]
