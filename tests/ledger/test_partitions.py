"""The partitioned log (migration 0016): conversion both ways, partitions ahead, the default
partition, detach (archive and drop), verify after a detach, uniqueness through event_keys."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from alembic import command
from ledger import db, partitions, store
from ledger.database import Database
from ledger.errors import IdempotencyConflict
from ledger.store import NewEvent
from ledger.verify import verify_chain
from tests.ledger_helpers import append_events

ROOT = Path(__file__).resolve().parents[2]
PODLEDGER = str(Path(sys.executable).parent / "podledger")


def note(stream: str, text: str = "x", **kw: object) -> NewEvent:
    return NewEvent(stream, "NoteRecorded", {"text": text}, **kw)  # type: ignore[arg-type]


def append(database: Database, events: list[NewEvent], expected: dict[str, int] | None = None) -> list[int]:
    """``store.append`` on a pooled connection in autocommit mode: an append of its own."""
    with database.connect() as c:
        return store.append(c, events, expected)


def su(db_url: str) -> psycopg.Connection:
    return psycopg.connect(db.libpq_url(db_url), autocommit=True)


def relkind(db_url: str, name: str = "events") -> str:
    with su(db_url) as c:
        return str(
            c.execute("SELECT relkind::text FROM pg_class WHERE oid = %s::regclass", (name,)).fetchone()[0]
        )


def ranges(db_url: str) -> list[tuple[int | None, int | None]]:
    with su(db_url) as c:
        return [(r[1], r[2]) for r in c.execute("SELECT * FROM ledger_event_partitions()").fetchall()]


def views(db_url: str) -> list[str]:
    with su(db_url) as c:
        return [
            r[0]
            for r in c.execute(
                "SELECT relname FROM pg_class WHERE relkind = 'v' AND relname LIKE 'v\\_%' ORDER BY 1"
            ).fetchall()
        ]


NOW_VIEWS = {"v_group_below_min_count", "v_group_wait_times", "v_pending_now"}  # waits up to now()
# the columns later migrations added to views that exist at 0015 (left out to compare with it)
ADDED_AFTER_0015 = {
    "v_pending_now": {
        "predicted_start_p50",
        "predicted_start_p90",
        "prediction_cases",
        "predicted_as_of_position",
        "predicted_as_of",
    },  # 0031
}


def view_rows(db_url: str, leave_out: dict[str, set[str]] | None = None) -> dict[str, list[str]]:
    """Every reporting view's rows, read as the reporting role (its grants must survive); in
    the views that measure up to now(), durations and numbers are left out, and so are the
    columns ``leave_out`` names."""
    out = {}
    with su(db_url) as c:
        c.execute("SET ROLE podledger_reporting")
        for v in views(db_url):
            cols = [
                r[0]
                for r in c.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 ORDER BY attnum",
                    (v,),
                )
                if r[0] not in (leave_out or {}).get(v, set())
            ]
            query = psycopg.sql.SQL("SELECT {} FROM {}").format(
                psycopg.sql.SQL(", ").join(map(psycopg.sql.Identifier, cols)), psycopg.sql.Identifier(v)
            )
            rows = c.execute(query).fetchall()
            if v in NOW_VIEWS:
                rows = [tuple(x for x in r if not isinstance(x, timedelta | float | Decimal)) for r in rows]
            out[v] = sorted(str(r) for r in rows)
    return out


def log_rows(db_url: str) -> list[tuple]:
    with su(db_url) as c:
        return c.execute(
            "SELECT position, stream, version, type, event_id, data::text, prev_hash, hash FROM events ORDER BY 1"
        ).fetchall()


@pytest.fixture()
def small(db_url, monkeypatch):
    """A ledger converted with partitions of 10 positions, 1 ahead."""
    monkeypatch.setenv("PODLEDGER_PARTITION_SIZE", "10")
    monkeypatch.setenv("PODLEDGER_PARTITIONS_AHEAD", "1")
    cfg = db.alembic_config(db_url)
    command.downgrade(cfg, "0015")
    command.upgrade(cfg, "head")
    return db.get_database(db_url, migrate_on_start=False)


def test_conversion_keeps_rows_chain_views_and_grants_both_ways(db_url, database, monkeypatch):
    from api.services.simulate import Simulation
    from tests.api.test_audit import STEPS

    cfg = db.alembic_config(db_url)
    Simulation(database, {}, "part-story").run(STEPS)  # a real log: inputs and scheduling
    rows, before = log_rows(db_url), view_rows(db_url)
    before_0015 = view_rows(db_url, ADDED_AFTER_0015)
    assert len(rows) >= 30 and any(before.values())
    db.dispose_all()
    command.downgrade(cfg, "0015")  # to a plain table, with the rows
    assert relkind(db_url) == "r"
    at_0015 = view_rows(db_url)  # the views that exist at 0015 (later migrations add more)
    assert log_rows(db_url) == rows and at_0015 == {v: before_0015[v] for v in at_0015}
    monkeypatch.setenv("PODLEDGER_PARTITION_SIZE", "10")
    monkeypatch.setenv("PODLEDGER_PARTITIONS_AHEAD", "2")
    command.upgrade(cfg, "head")

    assert relkind(db_url) == "p"
    assert log_rows(db_url) == rows
    assert view_rows(db_url) == before
    head = rows[-1][0]
    bounds = ranges(db_url)
    assert bounds[-1] == (None, None)  # the default partition
    assert bounds[0] == (0, 10) and all(hi - lo == 10 for lo, hi in bounds[:-1])
    assert bounds[-2][1] > head + 2 * 10  # two empty partitions ahead of the head's
    database = db.get_database(db_url, migrate_on_start=False)  # its pool was closed above
    assert verify_chain(database).ok
    with su(db_url) as c:
        assert c.execute("SELECT count(*) FROM event_keys").fetchone()[0] == len(rows)
        assert c.execute("SELECT has_any_column_privilege('podledger_app', 'events', 'INSERT')").fetchone()[0]
        assert not c.execute(
            "SELECT has_column_privilege('podledger_app', 'events', 'position', 'INSERT')"
        ).fetchone()[0]
        assert not c.execute("SELECT has_table_privilege('podledger_app', 'events', 'UPDATE')").fetchone()[0]
        assert not c.execute(
            "SELECT has_table_privilege('podledger_app', 'event_keys', 'INSERT')"
        ).fetchone()[0]
        triggers = {
            r[0] for r in c.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = 'events'::regclass")
        }
        assert {"events_serialize", "events_no_update", "events_no_truncate", "events_notify"} <= triggers

    # the log goes on across partitions; the views and the chain with it
    Simulation(database, {}, "part-story-2").run(
        [{"apply": [STEPS[0]["apply"][0] | {"metadata": {"name": "n2"}}]}]
    )
    more = log_rows(db_url)
    assert len(more) > len(rows) and verify_chain(database).ok
    assert view_rows(db_url).keys() == before.keys()

    db.dispose_all()
    command.downgrade(cfg, "0015")
    assert relkind(db_url) == "r" and log_rows(db_url) == more
    with su(db_url) as c:
        names = {
            r[0] for r in c.execute("SELECT conname FROM pg_constraint WHERE conrelid = 'events'::regclass")
        }
        assert {"events_event_id_key", "events_stream_version_key", "events_pkey"} <= names
    database = db.get_database(db_url, migrate_on_start=False)
    assert verify_chain(database).ok
    db.dispose_all()
    command.upgrade(cfg, "head")
    assert relkind(db_url) == "p" and log_rows(db_url) == more


def test_appends_cross_partition_boundaries_and_the_default_partition(small, db_url):
    database = small
    assert ranges(db_url) == [(0, 10), (10, 20), (None, None)]
    positions = append(database, [note(f"s/{i % 3}", str(i)) for i in range(7)])  # batch (INSERT)
    positions += [append(database, [note("one", str(i))])[0] for i in range(6)]  # single appends
    positions += append(database, [note(f"c/{i % 5}", str(i)) for i in range(100)])  # COPY, past 20
    assert positions == list(range(1, 114))
    assert verify_chain(database).ok
    with su(db_url) as c:
        in_default = c.execute("SELECT count(*) FROM events_default").fetchone()[0]
    assert in_default == 113 - 19

    made = partitions.ensure(database)  # as the application role, like the worker
    assert made[0] == "events_p20"  # the default's rows became [20, 120)
    bounds = ranges(db_url)
    assert (20, 120) in bounds and bounds[-2] == (120, 130) and bounds[-1] == (None, None)
    with su(db_url) as c:
        assert c.execute("SELECT count(*) FROM events_default").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM events_p20").fetchone()[0] == 94
        # the re-attached table carries the row triggers and the TRUNCATE guard again
        with pytest.raises(psycopg.Error, match="immutable"):
            c.execute("DELETE FROM events_p20 WHERE position = 50")
        with pytest.raises(psycopg.Error, match="immutable"):
            c.execute("TRUNCATE events_p20")
    assert partitions.ensure(database) == []  # nothing more to do
    assert partitions.ensure(database, ahead=3, size=50) == ["events_p130", "events_p180", "events_p230"]
    assert [e.position for e in store.iter_all(database)] == list(range(1, 114))
    assert verify_chain(database).ok


def test_duplicate_event_id_and_stream_version_fail_as_before(small, db_url):
    database = small
    eid = uuid.uuid4()
    [pos] = append(database, [note("a/1", event_id=eid)])
    assert append(database, [note("a/1", event_id=eid)]) == [pos]  # idempotent re-send
    with pytest.raises(IdempotencyConflict):
        append(database, [note("a/1", event_id=eid), note("a/2")])
    row = log_rows(db_url)[0]
    with psycopg.connect(db.app_url(db_url), autocommit=True) as app:
        insert = (
            "INSERT INTO events (stream, version, type, event_id, data, effective_at, recorded_at, prev_hash, hash) "
            "VALUES (%s, %s, 'NoteRecorded', %s, '{}', now(), now(), ''::bytea, ''::bytea)"
        )
        with pytest.raises(psycopg.errors.UniqueViolation) as exc:
            app.execute(insert, ("b/1", 1, eid))
        assert exc.value.diag.constraint_name == "events_event_id_key"
        with pytest.raises(psycopg.errors.UniqueViolation) as exc:
            app.execute(insert, (row[1], row[2], uuid.uuid4()))
        assert exc.value.diag.constraint_name == "events_stream_version_key"
        with pytest.raises(psycopg.Error, match="permission denied"):
            app.execute("DELETE FROM event_keys")
    assert len(log_rows(db_url)) == 1


def test_detach_archive_then_verify_and_append(small, db_url):
    database = small
    assert partitions.ensure(database, ahead=4) == ["events_p20", "events_p30", "events_p40"]
    append(database, [note("old/1", "only early")])  # a stream wholly in the detached part
    append(database, [note(f"s/{i % 4}", str(i)) for i in range(33)])
    owner = db.get_database(db_url, migrate_on_start=False, owner=True)
    assert partitions.detach(owner, before=15, archive=True) == [partitions.Detached("events_p0", 0, 10, 9)]
    res = verify_chain(database)
    assert res.ok and res.start == 10 and res.checked == 34 - 9
    gone = partitions.detach(owner, before=20, archive=False)
    assert [(d.name, d.events) for d in gone] == [("events_p10", 10)]
    # a partition holding positions after the head is never detached
    assert partitions.detach(owner, before=10_000, archive=True) == [
        partitions.Detached("events_p20", 20, 30, 10)
    ]
    assert ranges(db_url)[0] == (30, 40)
    res = verify_chain(database)
    assert res.ok and res.start == 30 and res.checked == 5
    res = verify_chain(database, archive=True)  # the whole chain: not with a dropped partition
    assert not res.ok and res.checked == 9 and "events_p10 was dropped" in res.reason

    listed = {p.name: p for p in partitions.list_partitions(owner)}
    assert listed["events_p0"].state == "archived" and listed["events_p0"].events == 9
    assert listed["events_p10"].state == "dropped" and listed["events_p30"].first == 30
    with su(db_url) as c:
        assert c.execute("SELECT count(*) FROM event_archive.events_p0").fetchone()[0] == 9
        with pytest.raises(psycopg.Error, match="immutable"):
            c.execute("DELETE FROM event_archive.events_p0")
    # ids and stream versions of detached events still count
    with database.connect() as c:
        [early] = store.read_all(c, after=29, limit=1)
    first_id = uuid.uuid4()
    assert append(database, [note("new/1", event_id=first_id)]) == [35]
    assert append(database, [note("s/0")], {"s/0": 9}) == [36]  # versions go on past the archive
    assert partitions.ensure(database) == []  # never below the detached ranges
    assert verify_chain(database).ok
    assert view_rows(db_url).keys()  # the views still read the (partial) log

    # the first retained event must link to the recorded head of the detached prefix
    with su(db_url) as c:
        c.execute("SET session_replication_role = replica")
        c.execute("DELETE FROM events WHERE position = %s", (early.position,))
    res = verify_chain(database)
    assert not res.ok and res.first_bad_position == early.position + 1 and "detached" in res.reason


def test_detach_keeps_old_event_ids_idempotent(small, db_url):
    database = small
    eid = uuid.uuid4()
    append(database, [note("a/1", event_id=eid)])
    append(database, [note("b/1", str(i)) for i in range(20)])
    owner = db.get_database(db_url, migrate_on_start=False, owner=True)
    assert [d.name for d in partitions.detach(owner, before=10, archive=False)] == ["events_p0"]
    assert append(database, [note("a/1", event_id=eid)]) == [1]  # still known: nothing appended
    with database.connect() as c:
        assert store.head(c) == 21


def test_downgrade_refuses_after_a_dropped_partition(small, db_url):
    database = small
    append(database, [note("b/1", str(i)) for i in range(15)])
    owner = db.get_database(db_url, migrate_on_start=False, owner=True)
    partitions.detach(owner, before=10, archive=False)
    db.dispose_all()
    with pytest.raises(RuntimeError, match="refusing to downgrade"):
        command.downgrade(db.alembic_config(db_url), "0015")


def test_cli_partitions_list_ensure_detach(small, db_url):
    database = small
    append(database, [note("b/1", str(i)) for i in range(25)])

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PODLEDGER_DATABASE_URL=db_url)
        return subprocess.run(
            [PODLEDGER, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
        )

    res = cli("db", "partitions", "ensure")
    assert res.returncode == 0 and "events_p20" in res.stdout  # the default's rows, folded
    res = cli("db", "partitions", "detach", "--before", "20")
    assert res.returncode == 1 and "--archive" in res.stderr
    res = cli("db", "partitions", "detach", "--before", "20", "--archive")
    assert (
        res.returncode == 0 and "events_p0: positions [0, 10), 9 events, moved to event_archive" in res.stdout
    )
    res = cli("db", "partitions", "list")
    assert res.returncode == 0
    lines = [line.split() for line in res.stdout.splitlines()]
    assert ["events_p0", "archived", "0", "10", "1", "9"] == lines[1][:6]
    assert lines[-1][:2] == ["events_default", "default"]
    res = cli("verify")
    assert res.returncode == 0 and "from position 20" in res.stdout
    res = cli("verify", "--archive")
    assert res.returncode == 0 and "ok: 25 events, hash chain intact" in res.stdout


def test_partition_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv("PODLEDGER_PARTITION_SIZE", raising=False)
    monkeypatch.delenv("PODLEDGER_PARTITIONS_AHEAD", raising=False)
    monkeypatch.delenv("PODLEDGER_PARTITION_CHECK_INTERVAL", raising=False)
    assert partitions.partition_size() is None and partitions.partitions_ahead() == 2
    assert partitions.check_interval() == 60.0
    monkeypatch.setenv("PODLEDGER_PARTITION_SIZE", "1_000_000")
    monkeypatch.setenv("PODLEDGER_PARTITIONS_AHEAD", "3")
    monkeypatch.setenv("PODLEDGER_PARTITION_CHECK_INTERVAL", "5")
    assert partitions.partition_size() == 1_000_000 and partitions.partitions_ahead() == 3
    assert partitions.check_interval() == 5.0


def test_worker_ensures_partitions(small, db_url):
    from scheduler.edge.worker import Worker

    database = small
    append(database, [note("b/1", str(i)) for i in range(25)])
    worker = Worker(database, db.app_url(db_url), name="t")
    worker.ensure_partitions()
    assert ranges(db_url) == [(0, 10), (10, 20), (20, 30), (30, 40), (None, None)]
    with su(db_url) as c:
        assert c.execute("SELECT count(*) FROM events_default").fetchone()[0] == 0


def test_detach_waits_for_the_merkle_tree(small, db_url):
    from ledger import anchor

    database = small
    append(database, [note("b/1", str(i)) for i in range(15)])
    owner = db.get_database(db_url, migrate_on_start=False, owner=True)
    anchor.update_tree(owner)  # anchored history in use, up to position 15
    append(database, [note("b/1", str(i)) for i in range(10)])
    partitions.ensure(database)
    with pytest.raises(psycopg.Error, match="Merkle tree does not reach position 19"):
        partitions.detach(owner, before=20, archive=True)
    assert [d.name for d in partitions.detach(owner, before=10, archive=True)] == ["events_p0"]
    anchor.update_tree(owner)  # the tree extends from its last leaf, still in the log
    assert [d.name for d in partitions.detach(owner, before=20, archive=True)] == ["events_p10"]


def test_conversion_carries_any_dependent_read_from_the_catalog(db_url, database):
    """Not only the v_* views the migrations made: a view on a view, a materialized view with
    its index, comments with quotes and colons, grants to another role, a disabled trigger."""
    append(database, [note(f"s/{i % 3}", str(i)) for i in range(12)])
    with su(db_url) as c:
        c.execute("CREATE VIEW x_streams AS SELECT stream, count(*) AS n FROM events GROUP BY stream")
        c.execute("CREATE VIEW x_busy WITH (security_barrier) AS SELECT * FROM x_streams WHERE n > 3")
        c.execute("CREATE MATERIALIZED VIEW x_types AS SELECT type, count(*) AS n FROM events GROUP BY type")
        c.execute("CREATE UNIQUE INDEX x_types_type ON x_types (type)")
        c.execute("COMMENT ON VIEW x_busy IS 'it''s busy: streams with :n > 3'")
        c.execute("COMMENT ON TABLE events IS 'the log'")
        c.execute("GRANT SELECT ON x_busy TO podledger_reporting")
        c.execute("CREATE FUNCTION x_noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$")
        c.execute("CREATE TRIGGER x_noop AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION x_noop()")
        c.execute("ALTER TABLE events DISABLE TRIGGER x_noop")

    def state() -> tuple:
        with su(db_url) as c:
            return (
                c.execute("SELECT * FROM x_busy ORDER BY 1").fetchall(),
                c.execute("SELECT * FROM x_types ORDER BY 1").fetchall(),
                c.execute("SELECT obj_description('x_busy'::regclass, 'pg_class')").fetchone(),
                c.execute("SELECT obj_description('events'::regclass, 'pg_class')").fetchone(),
                c.execute("SELECT has_table_privilege('podledger_reporting', 'x_busy', 'SELECT')").fetchone(),
                c.execute("SELECT reloptions FROM pg_class WHERE relname = 'x_busy'").fetchone(),
                c.execute(
                    "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'x_types'::regclass"
                ).fetchall(),
                c.execute("SELECT tgenabled FROM pg_trigger WHERE tgname = 'x_noop'").fetchall(),
            )

    before = state()
    assert (
        before[0] == [("s/0", 4), ("s/1", 4), ("s/2", 4)] and before[4] == (True,) and before[7] == [("D",)]
    )
    db.dispose_all()
    cfg = db.alembic_config(db_url)
    command.downgrade(cfg, "0015")
    assert relkind(db_url) == "r" and state() == before
    command.upgrade(cfg, "head")
    assert relkind(db_url) == "p" and state() == before


def test_appends_never_fail_while_partitions_are_made(small, db_url):
    """Writers (single appends and batches, three threads) while ensure makes 10-position
    partitions and folds the default one over and over: no append fails, no deadlock, the chain
    holds and every row ends in a range partition."""
    import threading

    database = small
    errors: list[BaseException] = []

    def writer(wid: int) -> None:
        try:
            for i in range(40):
                if i % 5 == 0:
                    append(database, [note(f"w{wid}/{j % 3}", f"{i}.{j}") for j in range(70)])  # COPY
                else:
                    append(database, [note(f"w{wid}/single", str(i))])
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    made = 0
    while any(t.is_alive() for t in threads):
        made += len(partitions.ensure(database, ahead=1, size=10))
    for t in threads:
        t.join()
    assert errors == []
    partitions.ensure(database, ahead=1, size=10)
    total = 3 * (8 * 70 + 32)
    with database.connect() as c:
        assert store.head(c) == total
    assert verify_chain(database).ok
    with su(db_url) as c:
        assert c.execute("SELECT count(*) FROM events_default").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM event_keys").fetchone()[0] == total
    assert made > 0


def test_verify_archive_walks_the_archived_partitions_too(small, db_url):
    database = small
    append(database, [note(f"s/{i % 4}", str(i)) for i in range(25)])
    partitions.ensure(database)
    owner = db.get_database(db_url, migrate_on_start=False, owner=True)
    assert [d.name for d in partitions.detach(owner, before=20, archive=True)] == ["events_p0", "events_p10"]
    res = verify_chain(database, archive=True)
    assert res.ok and res.checked == 25 and res.start == 0
    with su(db_url) as c:
        c.execute("SET session_replication_role = replica")
        c.execute('UPDATE event_archive.events_p10 SET data = \'{"text": "forged"}\' WHERE position = 12')
    assert verify_chain(database).ok  # the retained log alone is intact
    res = verify_chain(database, archive=True)
    assert not res.ok and res.first_bad_position == 12 and "modified" in res.reason
    with su(db_url) as c:
        c.execute("SET session_replication_role = replica")
        c.execute("DELETE FROM event_archive.events_p10 WHERE position = 19")
    res = verify_chain(database, archive=True)
    assert not res.ok and res.first_bad_position in (12, 19)


def test_appends_go_on_after_every_partition_was_detached(small, db_url):
    """With no event left in ``events``, the next append chains to the hash recorded for the
    last detached event (the insert trigger of migration 0024 requires that link)."""
    database = small
    append_events(database, [note(f"s/{i}", str(i)) for i in range(9)])  # positions 1-9: all of events_p0
    owner = db.get_database(db_url, migrate_on_start=False, owner=True)
    assert partitions.detach(owner, before=10, archive=True) == [partitions.Detached("events_p0", 0, 10, 9)]
    assert log_rows(db_url) == []
    append_events(database, [note("after/1")])  # one server call
    append_events(database, [note(f"after/{i}") for i in range(2, 5)])  # a batch
    res = verify_chain(database)
    assert res.ok and res.start == 10 and res.checked == 4
    assert verify_chain(database, archive=True).ok
