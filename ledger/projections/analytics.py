"""Windowed analytics (issue 34): hourly buckets maintained by the inline projection, in the
append's transaction (``project`` in ledger/projections/current.py calls ``Analytics.step`` for
every event with the touched row before and after it, and ``Analytics.write`` in its pipeline).

One table, ``analytics_hourly`` (migration 0025), one row per (metric, hour, k1, k2, k3):

- count metrics (``n``): ``unschedulable`` (k1 reason code, k2 binding resource, k3 namespace;
  group attempts and plain-pod attempts, a retry counting with the verdict it points at, which
  the write resolves in SQL), ``preemptions`` (k1 preemptor namespace, k2 victim namespace,
  k3 rule);
- level metrics (``delta``: the sum of the level's changes in the hour; ``tail``: the sum of each
  change times the seconds from it to the hour's end, so the integral of the level over the hour
  is ``level_at_start * 3600 + tail``, exact): ``pending_pods``/``pending_groups`` (k1
  namespace), ``allocated`` (k1 resource ``cpu`` (milli) | ``memory`` (bytes) | ``gpu``, k2
  namespace), ``capacity`` (k1 resource; the nodes' allocatable), ``below_min`` (k1 namespace:
  PodGroups whose PodGroupSatisfied is False).

And ``analytics_waits``: one row per PodGroup's first start (PodGroupInitiallyScheduled=True)
and per plain pod's bind after it was pending, with its namespace, priority and wait, so wait
percentiles over any window are exact (a range scan on ``at``).

The write is two statements in the projection's pipeline (no round trip of its own) and
never reads the bucket table: changes are added with ``ON CONFLICT DO UPDATE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import orjson

from ledger.resources.quantity import parse_quantity
from ledger.store import StoredEvent

Key = tuple[str, str, str]
Bucket = tuple[str, str, str, str, str]  # metric, hour (ISO), k1, k2, k3

GPU_KEYS = ("nvidia.com/gpu",)
RESOURCES = ("cpu", "memory", "gpu")

# the attempts of one batch, summed per bucket in SQL after each retry's verdict is looked up
_ATTEMPTS_WRITE = """
WITH a AS (
    SELECT x.h, x.ns, x.n, coalesce(x.c, e.data->'codes') AS codes
    FROM jsonb_to_recordset(%s::jsonb) AS x(h timestamptz, ns text, n bigint, c jsonb, dp bigint)
    LEFT JOIN events e ON x.dp IS NOT NULL AND e.position = x.dp
), coded AS (
    SELECT h, ns, n, coalesce(codes->>0, 'Unclassified') AS code,
           coalesce(substring(codes::text FROM 'InsufficientResource\\(([^)]*)\\)'), '') AS res
    FROM a
)
INSERT INTO analytics_hourly AS t (metric, hour, k1, k2, k3, n)
SELECT 'unschedulable', date_trunc('hour', h, 'UTC'), code, res, ns, sum(n) FROM coded GROUP BY 2, 3, 4, 5
UNION ALL
SELECT 'unschedulable_minute', h, code, res, ns, sum(n) FROM coded GROUP BY 2, 3, 4, 5
ORDER BY 1, 2, 3, 4, 5
ON CONFLICT (metric, hour, k1, k2, k3) DO UPDATE SET n = t.n + excluded.n
"""
_BUCKETS_WRITE = """
INSERT INTO analytics_hourly AS t (metric, hour, k1, k2, k3, n, delta, tail)
SELECT m, h, a, b, c, n, d, t FROM jsonb_to_recordset(%s::jsonb)
    AS x(m text, h timestamptz, a text, b text, c text, n bigint, d double precision, t double precision)
ON CONFLICT (metric, hour, k1, k2, k3) DO UPDATE
SET n = t.n + excluded.n, delta = t.delta + excluded.delta, tail = t.tail + excluded.tail
"""
_WAITS_WRITE = """
INSERT INTO analytics_waits (position, at, kind, namespace, name, priority, wait_seconds)
SELECT p, at, k, ns, nm, pr, w FROM jsonb_to_recordset(%s::jsonb)
    AS x(p bigint, at timestamptz, k text, ns text, nm text, pr int, w double precision)
"""


def _time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


@lru_cache(maxsize=4096)
def _minute(ts: datetime) -> str:
    return ts.astimezone(UTC).replace(second=0, microsecond=0).isoformat()


@lru_cache(maxsize=4096)  # a batch's events share a handful of times
def _hour(ts: datetime) -> tuple[str, float]:
    """The bucket (its start, ISO) and the seconds from ``ts`` to the bucket's end."""
    utc = ts.astimezone(UTC)
    start = utc.replace(minute=0, second=0, microsecond=0)
    return start.isoformat(), (start + timedelta(hours=1) - utc).total_seconds()


def _amount(value: Any, milli: bool) -> int:
    if isinstance(value, int):
        return value
    q = parse_quantity(value)
    return int(q * 1000) if milli else int(q)


def node_capacity(row: Mapping[str, Any] | None) -> dict[str, int]:
    """What a Node row offers: allocatable cpu (milli), memory (bytes) and GPUs."""
    if row is None:
        return {}
    status = (row.get("object") or {}).get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    out: dict[str, int] = {}
    if "cpu" in alloc:
        out["cpu"] = _amount(alloc["cpu"], True)
    if "memory" in alloc:
        out["memory"] = _amount(alloc["memory"], False)
    gpus = sum(_amount(alloc[k], False) for k in GPU_KEYS if k in alloc)
    if gpus:
        out["gpu"] = gpus
    return out


def _resources(requests: Mapping[str, int]) -> dict[str, int]:
    if not requests:  # a pending pod's (most events of a batch)
        return {}
    out = {r: int(requests[r]) for r in ("cpu", "memory") if requests.get(r)}
    gpus = sum(int(requests[k]) for k in GPU_KEYS if requests.get(k))
    if gpus:
        out["gpu"] = gpus
    return out


def _group_pending(row: Mapping[str, Any] | None) -> bool:
    return row is not None and not (row.get("status") or {}).get("scheduledAt")


def _below(row: Mapping[str, Any] | None) -> bool:
    if row is None:
        return False
    for c in (row.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodGroupSatisfied":
            return bool(c.get("status") == "False")
    return False


def _group_of(row: Mapping[str, Any] | None) -> str | None:
    if row is None:
        return None
    sg = ((row.get("object") or {}).get("spec") or {}).get("schedulingGroup") or {}
    name = sg.get("podGroupName")
    return str(name) if name else None


def _priority(row: Mapping[str, Any] | None) -> int:
    spec = ((row or {}).get("object") or {}).get("spec") or {}
    try:
        return int(spec.get("priority") or 0)
    except (TypeError, ValueError):
        return 0


class IsoTimes:
    """ISO 8601 of event times, the last one kept: a batch's events share a few time objects
    (kept by identity, not equality: equal times in other zones print differently)."""

    __slots__ = ("_text", "_ts")

    def __init__(self) -> None:
        self._ts: datetime | None = None
        self._text = ""

    def __call__(self, ts: datetime) -> str:
        if ts is not self._ts:
            self._ts, self._text = ts, ts.isoformat()
        return self._text


class Before:
    """What the analytics need of a touched row before an event changes it (the fold mutates
    rows in place)."""

    __slots__ = ("below", "capacity", "group_pending", "phase", "requests")

    def __init__(self, kind: str, row: Mapping[str, Any] | None, requests: Mapping[str, int] | None) -> None:
        self.phase = (
            ((row.get("status") or {}).get("phase") if row is not None else None) if kind == "Pod" else None
        )
        self.requests = _resources(requests or {})
        self.group_pending = _group_pending(row) if kind == "PodGroup" else False
        self.below = _below(row) if kind == "PodGroup" else False
        self.capacity = node_capacity(row) if kind == "Node" else {}


class Analytics:
    """The analytics changes of one batch, folded event by event."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.buckets: dict[Bucket, list[float]] = {}
        self.attempts: dict[tuple[str, str, str | None, int | None], int] = {}
        self.waits: list[dict[str, Any]] = []
        self.iso = IsoTimes()

    def _count(self, metric: str, ts: datetime, k1: str, k2: str = "", k3: str = "") -> None:
        """A count in its hour and in its minute (``<metric>_minute``: the windows' edges)."""
        for m, bucket in ((metric, _hour(ts)[0]), (metric + "_minute", _minute(ts))):
            slot = self.buckets.setdefault((m, bucket, k1, k2, k3), [0, 0.0, 0.0])
            slot[0] += 1

    def _level(self, metric: str, ts: datetime, change: float, k1: str, k2: str = "", k3: str = "") -> None:
        if not change:
            return
        hour, rest = _hour(ts)
        slot = self.buckets.setdefault((metric, hour, k1, k2, k3), [0, 0.0, 0.0])
        slot[1] += change
        slot[2] += change * rest

    def event(self, ev: StoredEvent, rows: Mapping[Key, Mapping[str, Any] | None]) -> None:
        """Count metrics of an event (before the fold: a plain pod is one with no group)."""
        typ, data = ev.type, ev.data
        if not self.enabled or typ not in (
            "PodGroupUnschedulable",
            "PodGroupRetried",
            "PodUnschedulable",
            "PodRetried",
            "PodPreempted",
        ):
            return
        ts = _time(ev.effective_at)
        if typ == "PodPreempted":
            self._count(
                "preemptions",
                ts,
                str(data.get("preemptor", "")).partition("/")[0],
                str(data.get("victim", "")).partition("/")[0],
                str(data.get("rule", "")),
            )
            return
        if typ.startswith("PodGroup"):
            ns = str(data.get("group", "")).partition("/")[0]
        else:
            ns, _, name = str(data.get("pod", "")).partition("/")
            if _group_of(rows.get(("Pod", ns, name))) is not None:
                return  # a member's verdict: its group's attempt counts
        key: tuple[str, str, str | None, int | None]
        if typ.endswith("Retried"):
            dp = data.get("diagnosis_position")
            key = (_minute(ts), ns, None, int(dp) if dp is not None else None)
        else:
            key = (_minute(ts), ns, orjson.dumps(list(data.get("codes") or [])).decode(), None)
        self.attempts[key] = self.attempts.get(key, 0) + 1

    def change(
        self,
        key: Key,
        before: Before,
        row: Mapping[str, Any] | None,
        requests: Mapping[str, int] | None,
        ev: StoredEvent,
    ) -> None:
        """Level metrics: what an event changed in one touched row."""
        if not self.enabled:
            return
        kind, ns, name = key
        ts = _time(ev.effective_at)
        if kind == "Pod":
            phase = (row.get("status") or {}).get("phase") if row is not None else None
            if phase == before.phase and ev.type in ("PodNominated", "PodUnschedulable", "PodGated"):
                return  # a verdict that keeps the phase: same pending count, same allocation
            self._level("pending_pods", ts, (phase == "Pending") - (before.phase == "Pending"), ns)
            after = _resources(requests or {})
            if after != before.requests:
                for res in RESOURCES:
                    self._level("allocated", ts, after.get(res, 0) - before.requests.get(res, 0), res, ns)
            if (
                ev.type == "PodBound"
                and before.phase == "Pending"
                and row is not None
                and _group_of(row) is None
            ):
                self._wait(ev, "Pod", ns, name, row, ts)
        elif kind == "PodGroup":
            pending = _group_pending(row)
            self._level("pending_groups", ts, pending - before.group_pending, ns)
            self._level("below_min", ts, _below(row) - before.below, ns)
            if before.group_pending and row is not None and not pending:
                self._wait(ev, "PodGroup", ns, name, row, ts)
        elif kind == "Node":
            after = node_capacity(row)
            for res in RESOURCES:
                self._level("capacity", ts, after.get(res, 0) - before.capacity.get(res, 0), res)

    def _wait(
        self, ev: StoredEvent, kind: str, ns: str, name: str, row: Mapping[str, Any], ts: datetime
    ) -> None:
        waited = (ts - _time(row["created_at"])).total_seconds()
        self.waits.append(
            {
                "p": ev.position,
                "at": self.iso(ts),
                "k": kind,
                "ns": ns,
                "nm": name,
                "pr": _priority(row),
                "w": max(waited, 0.0),
            }
        )

    def write(self, cur: Any) -> None:
        if self.attempts:
            doc = [
                {"h": h, "ns": ns, "n": n, "c": orjson.loads(c) if c is not None else None, "dp": dp}
                for (h, ns, c, dp), n in sorted(self.attempts.items(), key=lambda kv: repr(kv[0]))
            ]
            cur.execute(_ATTEMPTS_WRITE, (orjson.dumps(doc).decode(),))
        if self.buckets:
            rows = [
                {"m": k[0], "h": k[1], "a": k[2], "b": k[3], "c": k[4], "n": int(v[0]), "d": v[1], "t": v[2]}
                for k, v in sorted(self.buckets.items())
            ]
            cur.execute(_BUCKETS_WRITE, (orjson.dumps(rows).decode(),))
        if self.waits:
            cur.execute(_WAITS_WRITE, (orjson.dumps(self.waits).decode(),))
