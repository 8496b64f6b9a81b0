"""The hourly series of the windowed analytics (issue 34, migration 0025) for the dashboard's
plots over time: optional namespace and priority filters and a time range [since, until)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger.sql import Conn

_PENDING = """
SELECT hour, sum(pods_avg), sum(groups_avg) FROM v_pending_hourly
WHERE (%(ns)s::text IS NULL OR namespace = %(ns)s) AND hour >= %(since)s AND hour < %(until)s
GROUP BY 1 ORDER BY 1
"""
_ALLOCATION = """
SELECT hour, resource, allocated_avg, capacity_avg FROM v_allocation_hourly
WHERE resource IN ('gpu', 'cpu') AND hour >= %(since)s AND hour < %(until)s ORDER BY 1, 2
"""
_NS_ALLOCATION = """
SELECT hour, k1, level_avg FROM v_levels_hourly
WHERE metric = 'allocated' AND k1 IN ('gpu', 'cpu') AND k2 = %(ns)s AND hour >= %(since)s AND hour < %(until)s
ORDER BY 1, 2
"""
_WAITS = """
SELECT date_trunc('hour', at, 'UTC'), count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_seconds),
       percentile_cont(0.9) WITHIN GROUP (ORDER BY wait_seconds)
FROM v_waits
WHERE (%(ns)s::text IS NULL OR namespace = %(ns)s) AND (%(prio)s::int IS NULL OR priority = %(prio)s)
  AND (%(quota)s::text IS NULL OR quota = %(quota)s) AND at >= %(since)s AND at < %(until)s
GROUP BY 1 ORDER BY 1
"""
_PREEMPTIONS = """
SELECT hour, sum(preemptions) FROM v_preemptions_hourly
WHERE (%(ns)s::text IS NULL OR preemptor_namespace = %(ns)s OR victim_namespace = %(ns)s)
  AND hour >= %(since)s AND hour < %(until)s
GROUP BY 1 ORDER BY 1
"""
_SPAN = "SELECT min(hour), max(hour) FROM analytics_hourly WHERE metric NOT LIKE '%%minute'"
_NAMESPACES = "SELECT DISTINCT namespace FROM analytics_waits UNION SELECT DISTINCT k1 FROM analytics_hourly WHERE metric = 'pending_pods' ORDER BY 1"


def span(conn: Conn) -> tuple[datetime | None, datetime | None]:
    row = conn.execute(_SPAN).fetchone()
    return (row[0], row[1]) if row else (None, None)


def namespaces(conn: Conn) -> list[str]:
    return [str(r[0]) for r in conn.execute(_NAMESPACES).fetchall()]


def hourly(
    conn: Conn,
    since: datetime,
    until: datetime,
    namespace: str | None = None,
    priority: int | None = None,
    quota: str | None = None,
) -> dict[str, list[tuple[Any, ...]]]:
    """Rows of each series: pending (hour, pods avg, groups avg), allocation (hour, resource,
    allocated avg, capacity avg; the namespace's allocation without capacity when filtered),
    waits (hour, starts, p50, p90), preemptions (hour, count)."""
    args = {"ns": namespace, "prio": priority, "quota": quota, "since": since, "until": until}
    alloc = (
        [(h, r, a, None) for h, r, a in conn.execute(_NS_ALLOCATION, args).fetchall()]
        if namespace
        else [tuple(r) for r in conn.execute(_ALLOCATION, args).fetchall()]
    )
    return {
        "pending": [tuple(r) for r in conn.execute(_PENDING, args).fetchall()],
        "allocation": alloc,
        "waits": [tuple(r) for r in conn.execute(_WAITS, args).fetchall()],
        "preemptions": [tuple(r) for r in conn.execute(_PREEMPTIONS, args).fetchall()],
    }
