"""Group commit (ledger.writer.grouped, Bridge.joined): several requests and the scheduling run
they cause in one transaction, the inline projection written once per group."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from api.services import objects as services
from api.services.replay import verify_replay
from ledger import writer
from ledger.resources.parse import Document
from scheduler.edge.bridge import Bridge, from_ts
from tests.ledger.manifests import pod

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _objects(*raws: dict) -> list:
    objs, errors = services.load_documents(
        [Document(index=i + 1, source="test", raw=r) for i, r in enumerate(raws)]
    )
    assert not errors, errors
    return objs


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
}


def _count(engine: Engine, sql: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text(sql)).scalar_one())


def test_grouped_defers_the_projection_and_settles_before_a_read_of_the_same_object(engine: Engine) -> None:
    with engine.begin() as conn, writer.grouped(conn):
        tx = services._InTransaction(conn)
        assert services.apply_objects(tx, _objects(pod("a"), pod("b"))).ok
        # appended, not yet projected: the projection of the group is deferred
        assert (
            conn.execute(sa.text("SELECT count(*) FROM events WHERE type = 'PodCreated'")).scalar_one() == 2
        )
        assert conn.execute(sa.text("SELECT count(*) FROM objects WHERE kind = 'Pod'")).scalar_one() == 0
        # a request that reads pod "a" makes the group's projection land first (else: NotFound)
        services.delete_objects(tx, [("Pod", "ns", "a")])
        # a and b are projected now; the deletion of a is deferred in its turn
        assert conn.execute(sa.text("SELECT count(*) FROM objects WHERE kind = 'Pod'")).scalar_one() == 2
        assert services.apply_objects(tx, _objects(pod("c"))).ok
    # the block's end wrote the rest of the projection; the commit made all of it visible
    assert [r.name for r in services.list_objects(engine, "Pod")] == ["b", "c"]
    assert _count(engine, "SELECT count(*) FROM object_versions WHERE kind = 'Pod'") == 3


def test_a_failed_group_leaves_nothing(engine: Engine) -> None:
    try:
        with engine.begin() as conn, writer.grouped(conn):
            tx = services._InTransaction(conn)
            assert services.apply_objects(tx, _objects(pod("x"))).ok
            services.delete_objects(tx, [("Pod", "ns", "missing")])
    except LookupError:
        pass
    else:
        raise AssertionError("the delete of a missing pod must fail")
    assert _count(engine, "SELECT count(*) FROM events") == 0
    assert _count(engine, "SELECT count(*) FROM objects") == 0


def test_inputs_and_the_run_they_cause_share_one_transaction_and_replay(engine: Engine) -> None:
    services.apply_objects(engine, _objects(NODE), effective_at=from_ts(T0))
    bridge = Bridge(engine, actor="test")
    bridge.run_until_idle(T0)
    before = _count(engine, "SELECT count(*) FROM events")
    steps = (
        (["p1", "p2"], ["scheduled"] * 2),
        (["p3"], ["scheduled"]),
        (["p4", "p5"], ["scheduled", "unschedulable"]),
    )
    for step, (names, expected) in enumerate(steps):
        at = T0 + 10 * (step + 1)
        with engine.begin() as conn, bridge.joined(conn), writer.grouped(conn):
            tx = services._InTransaction(conn)
            res = services.apply_objects(tx, _objects(*(pod(n) for n in names)), effective_at=from_ts(at))
            bridge.fold_stored(res.events)
            results = bridge.run_until_idle(at)
            assert [r.result for r in results] == expected
            # nothing is visible to another session before the commit
            assert _count(engine, "SELECT count(*) FROM events") == before
        before = _count(engine, "SELECT count(*) FROM events")
    # the 5th pod does not fit (4 CPUs); every decision, bound or not, follows from the log
    bound = _count(engine, "SELECT count(*) FROM events WHERE type = 'PodBound'")
    assert bound == 4
    assert (
        _count(engine, "SELECT count(*) FROM objects WHERE kind = 'Pod' AND status->>'phase' = 'Bound'") == 4
    )
    rep = verify_replay(engine)
    assert rep.ok, rep.mismatches
    assert rep.runs >= 3 and rep.decisions > 0
