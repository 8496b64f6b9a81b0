"""Windowed analytics (issue 34): the hourly buckets the inline projection maintains, the views
and window functions over them, and historical capacity (a node added later does not change an
earlier bucket)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from api.services.simulate import Simulation
from ledger.projections.runner import rebuild_current
from ledger.sql import dicts, rows, scalar
from tests.api.test_reason_views import GANG, node, pod

T0 = datetime(2026, 1, 1, tzinfo=UTC)  # the simulation's virtual clock starts here

STEPS = [
    {"apply": [node("g1", "r1", "8", 4), node("g2", "r2", "8", 4), node("c1", "r2", "4")]},
    {"apply": [pod("small", "1"), pod("two-gpu", "1", 2)]},
    {"apply": [GANG, pod("w-1", "1", 3, "gpu-gang"), pod("w-2", "1", 3, "gpu-gang")]},
    {"apply": [pod("huge", "64")]},
    {"advance": "90m"},
    # a third GPU node, an hour and a half later: the gang fits (one rack with 2 x 3 GPUs? no:
    # g3 alone offers 8), and the first hour's capacity must stay 8 GPUs
    {"apply": [node("g3", "r3", "8", 8)]},
    {"advance": "30m"},
]


@pytest.fixture()
def cluster(database):
    Simulation(database, {}, "analytics").run(STEPS)
    return database


def _buckets(conn, sql: str) -> list:
    return rows(conn, sql)


def test_allocation_uses_the_capacity_of_its_time(cluster):
    with cluster.connect() as c:
        hourly = {
            (r.hour, r.resource): r
            for r in _buckets(c, "SELECT * FROM v_allocation_hourly WHERE resource = 'gpu' ORDER BY hour")
        }
        gpu_rows = rows(
            c, "SELECT pod, gpus_allocated, gpus_allocatable FROM v_gpu_allocation ORDER BY position"
        )
    first = hourly[(T0, "gpu")]
    assert first.capacity_end == 8 and first.capacity_avg == pytest.approx(8)
    assert first.allocated_end == 2 and float(first.fraction_end) == 0.25
    later = hourly[(T0 + timedelta(hours=1), "gpu")]
    assert later.capacity_end == 16
    # 8 GPUs for 90 of the 2nd hour's 60 min? no: g3 came at 1:30, so 30 min at 8 and 30 at 16
    assert later.capacity_avg == pytest.approx(12)
    # per change: the 2-GPU pod's bind against the 8 GPUs that existed then; the gang's
    # binds after g3 against 16
    assert gpu_rows[0].pod == "default/two-gpu" and gpu_rows[0].gpus_allocatable == 8
    assert [r.gpus_allocatable for r in gpu_rows[1:]] == [16, 16]
    assert gpu_rows[-1].gpus_allocated == 8


def test_pending_depth_waits_and_reasons(cluster):
    with cluster.connect() as c:
        pending = {
            r["hour"]: r
            for r in dicts(c, "SELECT * FROM v_pending_hourly WHERE namespace = 'default' ORDER BY hour")
        }
        waits = dicts(c, "SELECT kind, name, wait_seconds FROM v_waits ORDER BY position")
        top = dicts(c, "SELECT * FROM analytics_unschedulable(%s, %s)", (T0, T0 + timedelta(hours=3)))
        inner = dicts(
            c,
            "SELECT * FROM analytics_unschedulable(%s, %s)",
            (T0 + timedelta(minutes=10), T0 + timedelta(minutes=70)),
        )
        raw = scalar(
            c,
            "SELECT count(*) FROM events WHERE type IN ('PodGroupUnschedulable', 'PodGroupRetried') "
            "AND effective_at >= %s AND effective_at < %s",
            (T0 + timedelta(minutes=10), T0 + timedelta(minutes=70)),
        )
        raw_plain = scalar(
            c,
            "SELECT count(*) FROM events WHERE type IN ('PodUnschedulable', 'PodRetried') "
            "AND data->>'pod' = 'default/huge' AND effective_at >= %s AND effective_at < %s",
            (T0 + timedelta(minutes=10), T0 + timedelta(minutes=70)),
        )
        percentiles = dicts(c, "SELECT * FROM analytics_waits_between(%s, %s)", (T0, T0 + timedelta(hours=3)))
    # first hour: the gang (2 pods) and huge pending at its end; the gang starts at 1:30
    first = pending[T0]
    assert first["pods_end"] == 3 and first["groups_end"] == 1
    assert pending[T0 + timedelta(hours=1)]["pods_end"] == 1
    # the gang's wait: 90 minutes; the two plain pods that fit: no wait
    by_name = {(w["kind"], w["name"]): w["wait_seconds"] for w in waits}
    assert 5400 <= by_name[("PodGroup", "gpu-gang")] < 5460  # started on its first retry after g3
    assert by_name[("Pod", "small")] == 0 and by_name[("Pod", "two-gpu")] == 0
    assert ("Pod", "w-1") not in by_name  # members start with their group
    # the whole log: gang attempts on GPUs, huge's on cpu
    codes = {(r["reason"], r["resource"]) for r in top}
    assert ("InsufficientResource(cpu)", "cpu") in codes
    assert any(r["resource"] == "gpu" for r in top) or any(r["reason"] != "Unclassified" for r in top)
    # an off-hour window: buckets and raw edges together equal the raw count
    assert sum(r["attempts"] for r in inner) == raw + raw_plain
    pct = {r["namespace"]: r for r in percentiles}
    assert pct["default"]["starts"] == 3 and pct["default"]["p90_seconds"] > 0


def test_refold_rebuilds_the_same_buckets(cluster):
    sql = "SELECT metric, hour, k1, k2, k3, n, round(delta::numeric, 6) AS d, round(tail::numeric, 3) AS t FROM analytics_hourly ORDER BY 1, 2, 3, 4, 5"
    with cluster.connect() as c:
        before = rows(c, sql)
        waits = rows(c, "SELECT * FROM analytics_waits ORDER BY position")
    rebuild_current(cluster)
    with cluster.connect() as c:
        assert rows(c, sql) == before
        assert rows(c, "SELECT * FROM analytics_waits ORDER BY position") == waits
    assert before
