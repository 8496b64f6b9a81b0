"""Migrations 0022 and 0023: the admission read (``ledger_admission_read``), the projection's
read (``ledger_projection_read``) and explain's input changes (``ledger_input_changes``) plan
once per session and their plans are index probes, also when made on an empty ledger (a plan made while the tables are empty must not scan them once
they are large: migration 0019's lesson)."""

from __future__ import annotations

from ledger.database import Database
from ledger.queries import objects as objects_q
from ledger.sql import Conn, scalar

SETTINGS = (
    "enable_seqscan=off",
    "enable_hashjoin=off",
    "enable_mergejoin=off",
    "plan_cache_mode=force_generic_plan",
)


def _seq_scans(conn: Conn, tables: str = "objects|streams|quota_usage") -> dict[str, int]:
    """Sequential scans by this transaction so far of the tables whose names match ``tables``
    (a regular expression, anchored)."""
    rows = conn.execute(
        "SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname ~ %s", (f"^({tables})$",)
    )
    return {name: int(n) for name, n in rows}


def _analyze(database: Database, *tables: str) -> None:
    """Statistics of the (empty) ``tables``, so that the planner knows they are empty."""
    with database.transaction() as conn:
        for table in tables:
            conn.execute(f"ANALYZE {table}")  # type: ignore[arg-type]


def test_the_functions_pin_their_plan_settings(conn: Conn) -> None:
    for name in ("ledger_admission_read", "ledger_projection_read", "ledger_input_changes"):
        config = scalar(conn, "SELECT proconfig FROM pg_proc WHERE proname = %s", (name,))
        assert config is not None, name
        for setting in SETTINGS:
            assert setting in config, (name, setting, config)


def test_admission_read_on_an_empty_ledger_probes_the_keys(database: Database) -> None:
    _analyze(database, "objects", "streams")
    with database.transaction() as conn:
        before = _seq_scans(conn)
        # the session's first call makes the generic plan, on empty tables
        rows = objects_q.manifests_with_versions(
            conn, [("Pod", "ns", "a"), ("Node", "", "n1")], ["pod/ns/a", "node/n1"], "PriorityClass"
        )
        assert sorted(rows) == [
            ("Node", "", "n1", None, "node/n1", 0),
            ("Pod", "ns", "a", None, "pod/ns/a", 0),
        ]
        for _ in range(3):
            objects_q.manifests_with_versions(conn, [("Pod", "ns", "b")], ["pod/ns/b"], "PriorityClass")
        assert _seq_scans(conn) == before, "the admission read scanned objects or streams"


def test_admission_read_returns_manifests_versions_and_the_preloaded_kind(database: Database) -> None:
    from api.services.objects import load_documents
    from ledger.resources.parse import Document
    from tests.ledger_helpers import apply

    raws = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "hi"},
            "value": 10,
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        },
    ]
    objs, errors = load_documents([Document(index=i + 1, source="t", raw=r) for i, r in enumerate(raws)])
    assert not errors
    assert apply(database, objs).ok
    with database.transaction() as conn:
        rows = objects_q.manifests_with_versions(
            conn, [("Pod", "ns", "a"), ("Pod", "ns", "zz")], ["pod/ns/a", "pod/ns/zz"], "PriorityClass"
        )
    by_key = {(r[0], r[1], r[2], r[4]): r for r in rows}
    pod = by_key[("Pod", "ns", "a", "pod/ns/a")]
    assert pod[3]["metadata"]["name"] == "a" and pod[5] == 1
    assert by_key[("Pod", "ns", "zz", "pod/ns/zz")][3:] == (None, "pod/ns/zz", 0)
    pc = by_key[("PriorityClass", "", "hi", None)]
    assert pc[3]["value"] == 10 and pc[5] is None


def test_projection_writes_on_an_empty_ledger_read_by_key(database: Database) -> None:
    """Group commit's writes (the projection read made first on empty tables) scan nothing."""
    from api.services.commands import objects as commands
    from api.services.objects import load_documents
    from ledger.resources.parse import Document
    from tests.ledger.manifests import pod

    _analyze(database, "objects", "quota_usage")
    with database.unit_of_work(grouped=True) as uow:  # one transaction: pg_stat_xact_* counts it
        before = _seq_scans(uow.conn)
        for i in range(3):
            objs, errors = load_documents([Document(index=1, source="t", raw=pod(f"p{i}"))])
            assert not errors
            assert commands.apply_objects(uow, objs).ok  # projection deferred (grouped)
            # reads pod p{i}: the group's projection is written first
            commands.delete_objects(uow, [("Pod", "ns", f"p{i}")])
        uow.settle()  # the last deletion's projection
        assert _seq_scans(uow.conn) == before, "a projection read scanned a table"
        assert scalar(uow.conn, "SELECT count(*) FROM objects WHERE kind = 'Pod'") == 0
        uow.commit()


def test_input_changes_on_an_empty_ledger_read_by_index(database: Database) -> None:
    """explain's input changes: the plan made first on empty tables scans neither the log's
    partitions nor event_keys, and the rows are the inputs of the range in log order."""
    from ledger import store
    from ledger.queries import inputs as inputs_q
    from ledger.store import NewEvent

    _analyze(database, "events", "event_keys")
    with database.transaction() as conn:
        before = _seq_scans(conn, "events.*|event_keys")
        assert inputs_q.input_changes(conn, "ns", ["podgroup/ns/g"], 0, 10) == []
        assert _seq_scans(conn, "events.*|event_keys") == before, "input changes scanned the log"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
    }
    other = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}
    evs = [
        NewEvent("node/n1", "NodeCreated", {"object": node}),
        NewEvent("podgroup/ns/g", "PodGroupCreated", {"object": group}),
        NewEvent(
            "podgroup/ns/other", "PodGroupCreated", {"object": {**group, "metadata": {"name": "other"}}}
        ),
        NewEvent("node/n2", "NodeCreated", {"object": other}),
    ]
    with database.connect() as conn:
        positions = store.append(conn, evs)
    first, last = positions[0], positions[-1]
    with database.transaction() as conn:
        rows = inputs_q.input_changes(conn, "ns", ["podgroup/ns/g"], first - 1, last)
        assert [(r["stream"], r["change"]) for r in rows] == [
            ("node/n1", "created"),
            ("podgroup/ns/g", "created"),
            ("node/n2", "created"),
        ]
        assert [r["position"] for r in rows] == sorted(r["position"] for r in rows)
        # (first, last - 1]: the groups only, and without their streams nothing is an input
        assert inputs_q.input_changes(conn, "ns", [], first, last - 1) == []
