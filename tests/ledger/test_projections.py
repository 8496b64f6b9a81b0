"""Inline and async projections: a rebuild equals the incrementally built state."""

from __future__ import annotations

from ledger.database import Database
from ledger.projections.current import OPEN
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


def _versions(database: Database) -> list[tuple]:
    q = (
        "SELECT name, valid_from, valid_to, uid, object, status, created_position FROM object_versions"
        " ORDER BY kind, namespace, name, valid_from"
    )
    with database.connect() as c:
        return [tuple(r) for r in c.execute(q)]


def test_versions_keep_each_manifest_when_only_status_changes(database):
    """A status-only change sends no manifest (the write takes the ``objects`` row's): in a batch
    that creates and binds a pod, one that changes a pod's manifest between status changes and
    one that changes only statuses, every version and row still holds the manifest of its event."""
    labelled = pod("p2")
    labelled["metadata"]["labels"] = {"team": "a"}

    def ev(name: str, typ: str, data: dict) -> NewEvent:
        return NewEvent(f"sched/pod/default/{name}", typ, {"pod": f"default/{name}", **data})

    unsched = {"reason": "Unschedulable", "message": "0/1 nodes are available"}
    stored = write(
        database,
        [
            NewEvent("pod/default/p1", "PodCreated", {"object": pod("p1")}),
            NewEvent("pod/default/p2", "PodCreated", {"object": pod("p2")}),
            ev("p2", "PodBound", {"node": "n1"}),
        ],
    )
    stored += write(
        database,
        [
            ev("p1", "PodUnschedulable", unsched),
            NewEvent("pod/default/p2", "PodUpdated", {"object": labelled}),
            ev("p2", "PodNominated", {"node": "n2"}),
            ev("p1", "PodBound", {"node": "n2"}),
        ],
    )
    stored += write(
        database,
        [
            ev("p2", "PodUnschedulable", unsched),
            ev("p1", "PodGated", {"plugin": "x", "message": "m"}),
        ],
    )
    pos = [e.position for e in stored]
    versions = _versions(database)
    expected = [
        ("p1", pos[0], pod("p1")),
        ("p1", pos[3], pod("p1")),
        ("p1", pos[6], pod("p1")),
        ("p1", pos[8], pod("p1")),
        ("p2", pos[1], pod("p2")),
        ("p2", pos[2], pod("p2")),
        ("p2", pos[4], labelled),
        ("p2", pos[5], labelled),
        ("p2", pos[7], labelled),
    ]
    assert [(v[0], v[1], v[4]) for v in versions] == expected
    ends = [v[1] for v in versions[1:4]] + [OPEN] + [v[1] for v in versions[5:]] + [OPEN]
    assert [v[2] for v in versions] == ends
    phases = ["Pending", "Pending", "Bound", "Bound", "Pending", "Bound", "Bound", "Bound", "Bound"]
    assert [v[5]["phase"] for v in versions] == phases
    rows = {r[2]: r for r in snapshot(database, "objects")}
    assert rows["p1"][4] == pod("p1") and rows["p2"][4] == labelled
    assert rows["p2"][5] == versions[-1][5] and rows["p1"][5] == versions[3][5]
    # a rebuild folds all events in one batch (every manifest sent): the same rows
    before = (snapshot(database, "objects"), versions, snapshot(database, "quota_usage"))
    assert rebuild_current(database) == len(stored)
    assert (snapshot(database, "objects"), _versions(database), snapshot(database, "quota_usage")) == before
