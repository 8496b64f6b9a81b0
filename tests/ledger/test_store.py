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

from ledger import db, events, store
from ledger.errors import ConcurrencyError, EventValidationError, IdempotencyConflict
from ledger.sql import Conn, scalar
from ledger.store import NewEvent
from ledger.verify import verify_chain

GOLDEN = Path(__file__).parent / "golden"


def note(stream: str, text: str = "x", **kw: object) -> NewEvent:
    return NewEvent(stream, "NoteRecorded", {"text": text}, **kw)  # type: ignore[arg-type]


def count(conn: Conn) -> int:
    return int(scalar(conn, "SELECT count(*) FROM events"))


def test_append_and_read_back(database, conn):
    pos = store.append(conn, [note("a/1", "one"), note("b/1", "two"), note("a/1", "three")])
    assert pos == [1, 2, 3]
    evs = store.read_all(conn)
    assert [(e.stream, e.version, e.data["text"]) for e in evs] == [
        ("a/1", 1, "one"),
        ("b/1", 1, "two"),
        ("a/1", 2, "three"),
    ]
    assert [e.version for e in store.read_stream(conn, "a/1")] == [1, 2]
    assert [e.position for e in store.iter_all(database, after=1)] == [2, 3]
    assert store.read_all(conn, types=["PodBound"]) == []
    assert store.head(conn) == 3 and store.stream_version(conn, "a/1") == 2


def test_large_batch_uses_copy_and_keeps_order(database, conn):
    batch = [note(f"s/{i % 7}", str(i)) for i in range(500)]
    pos = store.append(conn, batch)
    assert pos == list(range(1, 501))
    evs = list(store.iter_all(database, batch=64))
    assert [e.data["text"] for e in evs] == [str(i) for i in range(500)]
    assert [e.version for e in evs if e.stream == "s/3"] == list(
        range(1, len([i for i in range(500) if i % 7 == 3]) + 1)
    )
    assert verify_chain(database).ok


def test_expected_version_conflict_appends_nothing(conn):
    store.append(conn, [note("a/1")], {"a/1": 0})
    with pytest.raises(ConcurrencyError) as exc:
        store.append(conn, [note("b/1"), note("a/1")], {"a/1": 0})
    assert exc.value.expected == 0 and exc.value.actual == 1
    assert count(conn) == 1
    assert store.stream_version(conn, "b/1") == 0  # the stream row rolled back too
    store.append(conn, [note("a/1")], {"a/1": 1})
    assert store.stream_version(conn, "a/1") == 2


def test_idempotent_resend_returns_original_positions(conn):
    ids = [uuid.uuid4(), uuid.uuid4()]
    batch = [note("a/1", event_id=ids[0]), note("a/2", event_id=ids[1])]
    first = store.append(conn, batch)
    again = store.append(conn, batch)
    assert first == again == [1, 2]
    assert count(conn) == 2
    with pytest.raises(IdempotencyConflict):
        store.append(conn, [note("a/1", event_id=ids[0]), note("a/3")])
    assert count(conn) == 2


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
def test_bad_payloads_name_the_problem_and_append_nothing(conn, event, needle):
    with pytest.raises(EventValidationError) as exc:
        store.append(conn, [note("ok/1"), event])
    assert needle in str(exc.value)
    assert count(conn) == 0


def test_update_delete_truncate_are_rejected_even_for_superuser(conn, db_url):
    store.append(conn, [note("a/1")])
    # the application role (the pool's login): no UPDATE privilege at all
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
        conn.execute("UPDATE events SET type = 'X'")
    with psycopg.connect(db_url, autocommit=True) as su:  # login role (superuser here): the trigger
        for stmt in ("UPDATE events SET type = 'X'", "DELETE FROM events", "TRUNCATE events"):
            with pytest.raises(psycopg.Error, match="immutable"):
                su.execute(stmt)
    assert count(conn) == 1


def test_verify_finds_a_modified_and_a_deleted_event(database, conn, db_url):
    store.append(conn, [note(f"a/{i}", str(i)) for i in range(10)])
    assert verify_chain(database).ok
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")  # bypasses triggers (superuser only)
        su.execute('UPDATE events SET data = \'{"text": "forged", "attributes": {}}\' WHERE position = 4')
    res = verify_chain(database)
    assert not res.ok and res.first_bad_position == 4 and "modified" in res.reason
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")
        su.execute('UPDATE events SET data = \'{"text": "3", "attributes": {}}\' WHERE position = 4')
        su.execute("DELETE FROM events WHERE position = 7")
    res = verify_chain(database)
    assert not res.ok and res.first_bad_position == 8 and "missing" in res.reason


def _writer(url: str, wid: int, n: int, seed: int) -> None:
    database = db.get_database(url, migrate_on_start=False)
    rnd = random.Random(seed)
    for i in range(n):
        with database.transaction() as conn:
            store.append(conn, [NewEvent(f"w/{wid}", "NoteRecorded", {"text": f"{wid}:{i}"})])
            time.sleep(rnd.random() * 0.004)  # hold the transaction open a little before COMMIT
    database.close()


def test_concurrent_writers_and_tailing_reader_see_every_position_once(conn, db_url):
    writers, per = 4, 60
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(db_url, w, per, w)) for w in range(writers)]
    for p in procs:
        p.start()
    seen: list[int] = []
    deadline = time.time() + 120
    while time.time() < deadline:
        batch = store.read_all(conn, after=seen[-1] if seen else 0, limit=50)
        seen.extend(e.position for e in batch)
        if not batch and not any(p.is_alive() for p in procs):
            break
        if not batch:
            time.sleep(0.002)
    for p in procs:
        p.join(10)
        assert p.exitcode == 0
    committed = [r[0] for r in conn.execute("SELECT position FROM events ORDER BY position")]
    assert len(committed) == writers * per
    assert seen == committed  # every committed position seen exactly once, ascending
    for w in range(writers):
        assert [e.version for e in store.read_stream(conn, f"w/{w}")] == list(range(1, per + 1))


def test_killed_writer_leaves_no_partial_batch(database, conn, db_url):
    script = textwrap.dedent(
        f"""
        import sys, time
        from ledger import db, store
        from ledger.store import NewEvent
        database = db.get_database({db_url!r}, migrate_on_start=False)
        with database.transaction() as conn:
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
    assert count(conn) == 0
    # the ledger lock died with the session: appends go on
    assert store.append(conn, [note("after/1")])
    assert verify_chain(database).ok


def test_listener_is_woken_by_append(conn, db_url):
    from ledger.listen import Listener

    lis = Listener(db_url)
    lis.start()
    store.append(conn, [note("a/1"), note("a/2")])
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
