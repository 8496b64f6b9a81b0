"""Inline and async projections: a rebuild equals the incrementally built state."""

from __future__ import annotations

import sqlalchemy as sa

from ledger import writer
from ledger.projections.runner import ASYNC_PROJECTIONS, Runner, rebuild_async, rebuild_current
from ledger.store import NewEvent


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


def snapshot(engine: sa.Engine, table: str) -> list[tuple]:
    with engine.connect() as c:
        if table == "objects":
            q = "SELECT kind, namespace, name, uid, object, status, created_position, updated_position FROM objects ORDER BY 1, 2, 3"
        else:
            q = f"SELECT * FROM {table} ORDER BY 1"
        return [tuple(r) for r in c.execute(sa.text(q))]


def test_rebuilt_projections_equal_incremental(engine):
    writer.write(
        engine, [NewEvent(f"pod/default/p{i}", "PodCreated", {"object": pod(f"p{i}")}) for i in range(20)]
    )
    writer.write(engine, [NewEvent("pod/default/p3", "PodUpdated", {"object": pod("p3", "n1")})])
    writer.write(engine, [NewEvent("sched/pod/default/p4", "PodBound", {"pod": "default/p4", "node": "n2"})])
    writer.write(
        engine,
        [NewEvent("pod/default/p5", "PodDeleted", {"kind": "Pod", "namespace": "default", "name": "p5"})],
    )
    writer.write(
        engine,
        [
            NewEvent(
                "sched/pod/default/p6",
                "PodUnschedulable",
                {"pod": "default/p6", "reason": "Unschedulable", "message": "0/1 nodes are available"},
            )
        ],
    )
    runner = Runner(engine, ASYNC_PROJECTIONS["event_type_counts"], batch_size=7)
    assert runner.catch_up() == 24
    before_objects = snapshot(engine, "objects")
    before_counts = snapshot(engine, "event_type_counts")
    assert len(before_objects) == 19
    by_name = {r[2]: r for r in before_objects}
    assert by_name["p3"][5]["nodeName"] == "n1" and by_name["p4"][5]["phase"] == "Bound"
    assert by_name["p6"][5]["conditions"][0]["reason"] == "Unschedulable"
    assert ("PodCreated", 20, 20) in before_counts
    assert rebuild_current(engine) == 24
    assert rebuild_async(engine, ASYNC_PROJECTIONS["event_type_counts"]) == 24
    assert snapshot(engine, "objects") == before_objects
    assert snapshot(engine, "event_type_counts") == before_counts


def test_checkpoint_is_fenced(engine):
    writer.write(engine, [NewEvent("n/1", "NoteRecorded", {"text": "a"})])
    proj = ASYNC_PROJECTIONS["event_type_counts"]
    r1 = Runner(engine, proj)
    assert r1.run_once() == 1
    assert r1.run_once() == 0
    with engine.begin() as c:
        assert (
            c.execute(
                sa.text("SELECT position FROM projection_checkpoints WHERE name = 'event_type_counts'")
            ).scalar()
            == 1
        )
