"""PodGroupSatisfied history in SQL (issue 16): ``v_group_below_min_count`` (migration 0013)."""

from __future__ import annotations

from typing import Any

import pytest

from api.services.simulate import Simulation
from ledger.sql import rows, scalar

CONFIG = {"featureGates": {"PodGroupSatisfiedCondition": True}}


def node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "2"}},
    }


def group(name: str, min_count: int) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def pod(name: str, grp: str, cpu: str = "1") -> dict:
    spec = {
        "schedulingGroup": {"podGroupName": grp},
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


STEPS = [
    {"apply": [node("n1"), group("pg", 2), pod("p1", "pg"), pod("p2", "pg")]},  # t=0: 0 of 2, then 2 of 2
    {"advance": "60s"},
    {"delete": [{"kind": "Pod", "namespace": "default", "name": "p2"}]},  # t=60: 1 of 2
    {"advance": "45s"},
    {"apply": [pod("p3", "pg")]},  # t=105: 2 of 2 again
    {"advance": "10s"},
    {"apply": [group("waiting", 3), pod("w1", "waiting", "0")]},  # quorum never met: below now
    {"advance": "5s"},
]


@pytest.fixture()
def ledger(database):
    report = Simulation(database, {"config": CONFIG}, "below-min-count").run(STEPS)
    assert report.passed, report.failures
    return database


def _rows(database) -> dict[str, Any]:
    with database.connect() as c:
        found = rows(c, "SELECT * FROM v_group_below_min_count ORDER BY namespace, name")
    return {f"{r.namespace}/{r.name}": r for r in found}


def test_time_below_min_count_per_group(ledger):
    rows = _rows(ledger)
    pg = rows["default/pg"]
    # below at creation (0 s, bound in the same instant) and for 45 s after p2 was deleted
    assert pg.seconds_below_min_count == pytest.approx(45.0)
    assert pg.times_below_min_count == 2
    assert not pg.below_now and (pg.scheduled_now, pg.min_count_now) == (2, 2)
    waiting = rows["default/waiting"]
    assert waiting.below_now and (waiting.scheduled_now, waiting.min_count_now) == (0, 3)
    assert waiting.times_below_min_count == 1 and waiting.seconds_below_min_count > 0  # open: up to now()


def test_history_is_in_the_log(ledger):
    with ledger.connect() as c:
        hist = c.execute(
            "SELECT data->>'status', data->>'message' FROM events "
            "WHERE type = 'PodGroupSatisfiedChanged' AND data->>'group' = 'default/pg' ORDER BY position"
        ).fetchall()
    assert [tuple(h) for h in hist] == [
        ("False", "0 of 2 members scheduled"),
        ("True", "2 of 2 members scheduled"),
        ("False", "1 of 2 members scheduled"),
        ("True", "2 of 2 members scheduled"),
    ]


def test_a_deleted_group_is_not_below_now(ledger):
    sim = Simulation(ledger, {"config": CONFIG}, "below-min-count-2")
    sim.steps_done = len(STEPS)
    assert sim.run([{"delete": [{"kind": "PodGroup", "namespace": "default", "name": "waiting"}]}]).passed
    assert not _rows(ledger)["default/waiting"].below_now


def test_reporting_roles_read_the_view(ledger):
    with ledger.connect() as c:
        for role in ("podledger_reporting", "podledger_app"):
            ok = scalar(
                c, "SELECT has_table_privilege(%(r)s, 'v_group_below_min_count', 'SELECT')", {"r": role}
            )
            assert ok, role


def test_group_history_shows_the_condition_changes(ledger):
    from api.services.history import history

    lines = [r["summary"] for r in history(ledger, "podgroup", "default", "pg")]
    sat = [s for s in lines if s.startswith("PodGroupSatisfied=")]
    assert sat == [
        "PodGroupSatisfied=False BelowMinCount: 0 of 2 members scheduled",
        "PodGroupSatisfied=True MinCountSatisfied: 2 of 2 members scheduled",
        "PodGroupSatisfied=False BelowMinCount: 1 of 2 members scheduled",
        "PodGroupSatisfied=True MinCountSatisfied: 2 of 2 members scheduled",
    ]
