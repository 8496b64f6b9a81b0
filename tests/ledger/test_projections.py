"""Inline and async projections: a rebuild equals the incrementally built state."""

from __future__ import annotations

from ledger.database import Database
from ledger.projections.runner import ASYNC_PROJECTIONS, Runner, rebuild_async, rebuild_current
from ledger.sql import scalar
from ledger.store import NewEvent
from ledger.uow import write


def pod(name: str, node: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": 100}}}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": spec,
    }


def snapshot(database: Database, table: str) -> list[tuple]:
    with database.connect() as c:
        if table == "objects":
            q = "SELECT kind, namespace, name, uid, object, status, created_position, updated_position FROM objects ORDER BY 1, 2, 3"
        else:
            q = f"SELECT * FROM {table} ORDER BY 1"
        return [tuple(r) for r in c.execute(q)]


def test_rebuilt_projections_equal_incremental(database):
    write(
        database, [NewEvent(f"pod/default/p{i}", "PodCreated", {"object": pod(f"p{i}")}) for i in range(20)]
    )
    write(database, [NewEvent("pod/default/p3", "PodUpdated", {"object": pod("p3", "n1")})])
    write(database, [NewEvent("sched/pod/default/p4", "PodBound", {"pod": "default/p4", "node": "n2"})])
    write(
        database,
        [NewEvent("pod/default/p5", "PodDeleted", {"kind": "Pod", "namespace": "default", "name": "p5"})],
    )
    write(
        database,
        [
            NewEvent(
                "sched/pod/default/p6",
                "PodUnschedulable",
                {"pod": "default/p6", "reason": "Unschedulable", "message": "0/1 nodes are available"},
            )
        ],
    )
    runner = Runner(database, ASYNC_PROJECTIONS["event_type_counts"], batch_size=7)
    assert runner.catch_up() == 24
    before_objects = snapshot(database, "objects")
    before_counts = snapshot(database, "event_type_counts")
    assert len(before_objects) == 19
    by_name = {r[2]: r for r in before_objects}
    assert by_name["p3"][5]["nodeName"] == "n1" and by_name["p4"][5]["phase"] == "Bound"
    assert by_name["p6"][5]["conditions"][0]["reason"] == "Unschedulable"
    assert ("PodCreated", 20, 20) in before_counts
    assert rebuild_current(database) == 24
    assert rebuild_async(database, ASYNC_PROJECTIONS["event_type_counts"]) == 24
    assert snapshot(database, "objects") == before_objects
    assert snapshot(database, "event_type_counts") == before_counts


def test_checkpoint_is_fenced(database):
    write(database, [NewEvent("n/1", "NoteRecorded", {"text": "a"})])
    proj = ASYNC_PROJECTIONS["event_type_counts"]
    r1 = Runner(database, proj)
    assert r1.run_once() == 1
    assert r1.run_once() == 0
    with database.transaction() as c:
        assert scalar(c, "SELECT position FROM projection_checkpoints WHERE name = 'event_type_counts'") == 1
