"""Group commit (``db.unit_of_work(grouped=True)``, Bridge.joined): several requests and the
scheduling run they cause in one transaction, the inline projection written once per group."""

from __future__ import annotations

import pytest

from api.services.commands import objects as commands
from api.services.objects import list_objects, load_documents
from api.services.replay import verify_replay
from ledger.database import Database
from ledger.resources.parse import Document
from ledger.sql import scalar
from scheduler.edge.bridge import Bridge, from_ts
from tests.ledger.manifests import pod
from tests.ledger_helpers import apply

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _objects(*raws: dict) -> list:
    objs, errors = load_documents([Document(index=i + 1, source="test", raw=r) for i, r in enumerate(raws)])
    assert not errors, errors
    return objs


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
}


def _count(database: Database, sql: str) -> int:
    with database.connect() as conn:  # another session than the unit of work's
        return int(scalar(conn, sql))


def test_grouped_defers_the_projection_and_settles_before_a_read_of_the_same_object(
    database: Database,
) -> None:
    with database.unit_of_work(grouped=True) as uow:
        assert commands.apply_objects(uow, _objects(pod("a"), pod("b"))).ok
        # appended, not yet projected: the projection of the group is deferred
        assert scalar(uow.conn, "SELECT count(*) FROM events WHERE type = 'PodCreated'") == 2
        assert scalar(uow.conn, "SELECT count(*) FROM objects WHERE kind = 'Pod'") == 0
        # a request that reads pod "a" makes the group's projection land first (else: NotFound)
        commands.delete_objects(uow, [("Pod", "ns", "a")])
        # a and b are projected now; the deletion of a is deferred in its turn
        assert scalar(uow.conn, "SELECT count(*) FROM objects WHERE kind = 'Pod'") == 2
        assert commands.apply_objects(uow, _objects(pod("c"))).ok
        uow.commit()
    # the commit wrote the rest of the projection and made all of it visible
    with database.connect() as conn:
        assert [r.name for r in list_objects(conn, "Pod")] == ["b", "c"]
    assert _count(database, "SELECT count(*) FROM object_versions WHERE kind = 'Pod'") == 3


def test_a_failed_group_leaves_nothing(database: Database) -> None:
    with pytest.raises(LookupError), database.unit_of_work(grouped=True) as uow:  # a missing pod
        assert commands.apply_objects(uow, _objects(pod("x"))).ok
        commands.delete_objects(uow, [("Pod", "ns", "missing")])
        uow.commit()
    assert _count(database, "SELECT count(*) FROM events") == 0
    assert _count(database, "SELECT count(*) FROM objects") == 0


def test_inputs_and_the_run_they_cause_share_one_transaction_and_replay(database: Database) -> None:
    apply(database, _objects(NODE), effective_at=from_ts(T0))
    bridge = Bridge(database, actor="test")
    bridge.run_until_idle(T0)
    before = _count(database, "SELECT count(*) FROM events")
    steps = (
        (["p1", "p2"], ["scheduled"] * 2),
        (["p3"], ["scheduled"]),
        (["p4", "p5"], ["scheduled", "unschedulable"]),
    )
    for step, (names, expected) in enumerate(steps):
        at = T0 + 10 * (step + 1)
        with database.unit_of_work(grouped=True) as uow:
            with bridge.joined(uow):
                res = commands.apply_objects(
                    uow, _objects(*(pod(n) for n in names)), effective_at=from_ts(at)
                )
                bridge.fold_stored(res.events)
                results = bridge.run_until_idle(at)
                assert [r.result for r in results] == expected
                # nothing is visible to another session before the commit
                assert _count(database, "SELECT count(*) FROM events") == before
            uow.commit()
        before = _count(database, "SELECT count(*) FROM events")
    # the 5th pod does not fit (4 CPUs); every decision, bound or not, follows from the log
    bound = _count(database, "SELECT count(*) FROM events WHERE type = 'PodBound'")
    assert bound == 4
    assert (
        _count(database, "SELECT count(*) FROM objects WHERE kind = 'Pod' AND status->>'phase' = 'Bound'")
        == 4
    )
    rep = verify_replay(database)
    assert rep.ok, rep.mismatches
    assert rep.runs >= 3 and rep.decisions > 0
