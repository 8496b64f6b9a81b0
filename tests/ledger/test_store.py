"""The event store against a real PostgreSQL: ordering, concurrency, idempotency, immutability."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from ledger import db, events, store
from ledger.errors import ConcurrencyError, EventValidationError, IdempotencyConflict
from ledger.store import NewEvent
from ledger.verify import verify_chain

GOLDEN = Path(__file__).parent / "golden"


def note(stream: str, text: str = "x", **kw: object) -> NewEvent:
    return NewEvent(stream, "NoteRecorded", {"text": text}, **kw)  # type: ignore[arg-type]


def count(engine: sa.Engine) -> int:
    with engine.connect() as c:
        return int(c.execute(sa.text("SELECT count(*) FROM events")).scalar_one())


def test_append_and_read_back(engine):
    pos = store.append(engine, [note("a/1", "one"), note("b/1", "two"), note("a/1", "three")])
    assert pos == [1, 2, 3]
    evs = store.read_all(engine)
    assert [(e.stream, e.version, e.data["text"]) for e in evs] == [
        ("a/1", 1, "one"),
        ("b/1", 1, "two"),
        ("a/1", 2, "three"),
    ]
    assert [e.version for e in store.read_stream(engine, "a/1")] == [1, 2]
    assert [e.position for e in store.iter_all(engine, after=1)] == [2, 3]
    assert store.read_all(engine, types=["PodBound"]) == []
    assert store.head(engine) == 3 and store.stream_version(engine, "a/1") == 2


def test_large_batch_uses_copy_and_keeps_order(engine):
    batch = [note(f"s/{i % 7}", str(i)) for i in range(500)]
    pos = store.append(engine, batch)
    assert pos == list(range(1, 501))
    evs = list(store.iter_all(engine, batch=64))
    assert [e.data["text"] for e in evs] == [str(i) for i in range(500)]
    assert [e.version for e in evs if e.stream == "s/3"] == list(
        range(1, len([i for i in range(500) if i % 7 == 3]) + 1)
    )
    assert verify_chain(engine).ok


def test_expected_version_conflict_appends_nothing(engine):
    store.append(engine, [note("a/1")], {"a/1": 0})
    with pytest.raises(ConcurrencyError) as exc:
        store.append(engine, [note("b/1"), note("a/1")], {"a/1": 0})
    assert exc.value.expected == 0 and exc.value.actual == 1
    assert count(engine) == 1
    assert store.stream_version(engine, "b/1") == 0  # the stream row rolled back too
    store.append(engine, [note("a/1")], {"a/1": 1})
    assert store.stream_version(engine, "a/1") == 2


def test_idempotent_resend_returns_original_positions(engine):
    ids = [uuid.uuid4(), uuid.uuid4()]
    batch = [note("a/1", event_id=ids[0]), note("a/2", event_id=ids[1])]
    first = store.append(engine, batch)
    again = store.append(engine, batch)
    assert first == again == [1, 2]
    assert count(engine) == 2
    with pytest.raises(IdempotencyConflict):
        store.append(engine, [note("a/1", event_id=ids[0]), note("a/3")])
    assert count(engine) == 2


@pytest.mark.parametrize(
    ("event", "needle"),
    [
        (NewEvent("p/1", "PodBound", {"pod": "default/p1"}), "node"),
        (NewEvent("p/1", "PodBound", {"pod": "default/p1", "node": 5}), "node"),
        (NewEvent("p/1", "NoSuchThing", {}), "unknown event type"),
        (NewEvent("p/1", "NoteRecorded", {"text": "x" * (1 << 20)}), "1 MiB"),
        (NewEvent("p/1", "NoteRecorded", {"text": "x", "attributes": {"when": object()}}), "JSON"),
        (NewEvent("p/1", "NoteRecorded", {"text": "x"}, meta={"s": {1, 2}}), "JSON"),
    ],
)
def test_bad_payloads_name_the_problem_and_append_nothing(engine, event, needle):
    with pytest.raises(EventValidationError) as exc:
        store.append(engine, [note("ok/1"), event])
    assert needle in str(exc.value)
    assert count(engine) == 0


def test_update_delete_truncate_are_rejected_even_for_superuser(engine, db_url):
    store.append(engine, [note("a/1")])
    with engine.connect() as c:  # the application role: no UPDATE privilege at all
        with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
            c.execute(sa.text("UPDATE events SET type = 'X'"))
    with psycopg.connect(db_url, autocommit=True) as su:  # login role (superuser here): the trigger
        for stmt in ("UPDATE events SET type = 'X'", "DELETE FROM events", "TRUNCATE events"):
            with pytest.raises(psycopg.Error, match="immutable"):
                su.execute(stmt)
    assert count(engine) == 1


def test_verify_finds_a_modified_and_a_deleted_event(engine, db_url):
    store.append(engine, [note(f"a/{i}", str(i)) for i in range(10)])
    assert verify_chain(engine).ok
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")  # bypasses triggers (superuser only)
        su.execute('UPDATE events SET data = \'{"text": "forged", "attributes": {}}\' WHERE position = 4')
    res = verify_chain(engine)
    assert not res.ok and res.first_bad_position == 4 and "modified" in res.reason
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")
        su.execute('UPDATE events SET data = \'{"text": "3", "attributes": {}}\' WHERE position = 4')
        su.execute("DELETE FROM events WHERE position = 7")
    res = verify_chain(engine)
    assert not res.ok and res.first_bad_position == 8 and "missing" in res.reason


def _writer(url: str, wid: int, n: int, seed: int) -> None:
    engine = db.get_engine(url, migrate_on_start=False)
    rnd = random.Random(seed)
    for i in range(n):
        with engine.begin() as conn:
            store.append(conn, [NewEvent(f"w/{wid}", "NoteRecorded", {"text": f"{wid}:{i}"})])
            time.sleep(rnd.random() * 0.004)  # hold the transaction open a little before COMMIT
    engine.dispose()


def test_concurrent_writers_and_tailing_reader_see_every_position_once(engine, db_url):
    writers, per = 4, 60
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(db_url, w, per, w)) for w in range(writers)]
    for p in procs:
        p.start()
    seen: list[int] = []
    deadline = time.time() + 120
    while time.time() < deadline:
        batch = store.read_all(engine, after=seen[-1] if seen else 0, limit=50)
        seen.extend(e.position for e in batch)
        if not batch and not any(p.is_alive() for p in procs):
            break
        if not batch:
            time.sleep(0.002)
    for p in procs:
        p.join(10)
        assert p.exitcode == 0
    with engine.connect() as c:
        committed = [r[0] for r in c.execute(sa.text("SELECT position FROM events ORDER BY position"))]
    assert len(committed) == writers * per
    assert seen == committed  # every committed position seen exactly once, ascending
    for w in range(writers):
        assert [e.version for e in store.read_stream(engine, f"w/{w}")] == list(range(1, per + 1))


def test_killed_writer_leaves_no_partial_batch(engine, db_url):
    script = textwrap.dedent(
        f"""
        import sys, time
        from ledger import db, store
        from ledger.store import NewEvent
        engine = db.get_engine({db_url!r}, migrate_on_start=False)
        with engine.begin() as conn:
            store.append(conn, [NewEvent("k/%d" % i, "NoteRecorded", {{"text": "kill"}}) for i in range(2000)])
            print("appended", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "appended"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    time.sleep(0.5)
    assert count(engine) == 0
    # the ledger lock died with the session: appends go on
    assert store.append(engine, [note("after/1")])
    assert verify_chain(engine).ok


def test_listener_is_woken_by_append(engine, db_url):
    from ledger.listen import Listener

    lis = Listener(db_url)
    lis.start()
    store.append(engine, [note("a/1"), note("a/2")])
    got = lis.wait(5.0)
    lis.close()
    assert got == 2


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.json")), ids=lambda p: p.name)
def test_golden_payloads_upcast_to_the_current_model(path):
    doc = json.loads(path.read_text())
    model = events.load(doc["type"], doc["schema_version"], doc["data"])
    dumped = model.model_dump(mode="json")
    upcast = events.upcast(doc["type"], doc["schema_version"], doc["data"])
    assert {k: dumped[k] for k in upcast} == upcast  # later optional fields take their defaults
    if doc["type"] == "PodBound" and doc["schema_version"] == 1:
        assert model.model_dump()["group"] is None


def test_schema_matches_table_metadata(engine, db_url):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from ledger.tables import PARTITION_NAME, metadata

    su = sa.create_engine(db.sqlalchemy_url(db_url))
    with su.connect() as conn:
        # the partitions of events (migration 0016) are not in the metadata
        skip = {"include_name": lambda name, kind, _p: not (kind == "table" and PARTITION_NAME.match(name))}
        diffs = compare_metadata(MigrationContext.configure(conn, opts=skip), metadata)
    su.dispose()
    diffs = [
        d
        for d in diffs
        if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == "alembic_version")
    ]
    assert diffs == []
