"""The unit of work's contract (ledger/uow.py), against the test session's PostgreSQL.

What every command relies on: a commit appends and projects (and its COMMIT rides with the
projection: the connection is idle right after ``commit()``); anything else leaves no trace; a
dry run runs everything and keeps nothing; an expected-version mismatch and an idempotent
re-send behave as the store promises; an idempotency key's lock serialises two units; a group
commit defers the projection until ``settle`` needs it; a savepoint undoes only its own part; a
unit is used only inside its block, and committed once.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from psycopg import pq

from api.services.commands import objects as commands
from api.services.objects import load_documents
from ledger import store
from ledger.database import Database
from ledger.errors import ConcurrencyError
from ledger.resources.parse import Document
from ledger.sql import Conn, scalar
from ledger.store import NewEvent
from ledger.uow import UnitOfWorkError, write
from tests.ledger import manifests


def pod(name: str, namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 100}}}]},
    }


def created(name: str, **kw: Any) -> NewEvent:
    """A PodCreated event: the inline projection gets a row for it."""
    return NewEvent(f"pod/ns/{name}", "PodCreated", {"object": pod(name)}, **kw)


def note(stream: str, text: str = "x", **kw: Any) -> NewEvent:
    """An event the inline projection does not touch."""
    return NewEvent(stream, "NoteRecorded", {"text": text}, **kw)


def head(database: Database) -> int:
    """The log's head as another session sees it (committed events only)."""
    with database.connect() as c:
        return store.head(c)


def pods(conn: Conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM objects WHERE kind = 'Pod' ORDER BY name")]


def committed_pods(database: Database) -> list[str]:
    with database.connect() as c:
        return pods(c)


def idle(conn: Conn) -> bool:
    return conn.info.transaction_status == pq.TransactionStatus.IDLE


# ---------------------------------------------------------------------------- commit / rollback


@pytest.mark.parametrize(
    "events",
    [[created("a"), note("n/1")], [note("n/1"), note("n/2")]],
    ids=["projected", "not-projected"],
)
def test_commit_appends_and_projects(database: Database, events: list[NewEvent]) -> None:
    with database.unit_of_work() as uow:
        stored = uow.append(events)
        assert [e.position for e in stored] == [1, 2]
        assert head(database) == 0  # nothing visible to another session before the commit
        assert uow.commit() == stored == uow.appended
        assert uow.committed
        assert head(database) == 2  # committed inside the block, not at its end
    with database.connect() as c:
        assert [(e.stream, e.type) for e in store.read_all(c)] == [(e.stream, e.type) for e in events]
    assert committed_pods(database) == (["a"] if events[0].type == "PodCreated" else [])


def test_the_commit_rides_with_the_projection_and_leaves_the_connection_idle(database: Database) -> None:
    with database.unit_of_work() as uow:
        conn = uow.conn  # taken before the append (a read after it writes the projection first)
        uow.append([created("a")])
        assert not idle(conn)
        uow.commit()
        # the projection's pipeline ended with COMMIT: no transaction is left open, and the
        # connection is back in autocommit mode for reads after the commit
        assert idle(conn) and conn.autocommit
        assert pods(uow.conn) == ["a"]
        assert idle(conn)
    assert committed_pods(database) == ["a"]


def test_leaving_without_commit_appends_and_projects_nothing(database: Database) -> None:
    write(database, [note("n/0")])
    with database.unit_of_work() as uow:
        uow.append([created("a"), note("n/1")])
        assert pods(uow.conn) == ["a"]  # projected inside the unit
    assert head(database) == 1 and committed_pods(database) == []
    with database.connect() as c:
        assert store.stream_version(c, "pod/ns/a") == 0 and store.stream_version(c, "n/1") == 0
    # the connection went back to the pool clean: the next unit appends and commits
    [after] = write(database, [note("n/2")])
    assert after.position > 1 and head(database) == after.position


def test_raising_out_of_the_block_appends_and_projects_nothing(database: Database) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), database.unit_of_work() as uow:
        uow.append([created("a")])
        assert pods(uow.conn) == ["a"]
        raise Boom
    assert head(database) == 0 and committed_pods(database) == []
    with database.connect() as c:
        assert idle(c) and c.autocommit


# ------------------------------------------------------------------------------------- dry run


def test_dry_run_runs_everything_and_keeps_nothing(database: Database) -> None:
    write(database, [note("n/0")])
    objs, errors = load_documents([Document(index=1, source="t", raw=manifests.pod("a"))])
    assert not errors
    with database.unit_of_work(dry_run=True) as uow:
        result = commands.apply_objects(uow, objs)  # admission, the append with its checks
        assert result.ok and len(result.lines) == 1 and result.lines[0].endswith(" created")
        assert [(e.position, e.stream, e.type) for e in uow.appended] == [(2, "pod/ns/a", "PodCreated")]
        assert result.events == uow.appended
        # reads in the unit see the state it would make
        assert pods(uow.conn) == ["a"] and store.head(uow.conn) == 2
        assert uow.commit() == uow.appended
        assert pods(uow.conn) == ["a"] and store.head(uow.conn) == 2  # still, after the "commit"
        assert head(database) == 1  # never visible to another session
    assert head(database) == 1 and committed_pods(database) == []
    with database.connect() as c:
        assert store.stream_version(c, "pod/ns/a") == 0
        assert scalar(c, "SELECT count(*) FROM object_versions") == 0


def test_dry_run_checks_expected_versions_too(database: Database) -> None:
    write(database, [note("n/1")])
    with pytest.raises(ConcurrencyError), database.unit_of_work(dry_run=True) as uow:
        uow.append([note("n/1")], expect={"n/1": 0})
    assert head(database) == 1


# ------------------------------------------------------------------ expect= and idempotency


def test_expected_version_mismatch_raises_and_appends_nothing(database: Database) -> None:
    write(database, [note("n/1")])
    with pytest.raises(ConcurrencyError) as exc, database.unit_of_work() as uow:
        uow.append([created("a")])  # an earlier append of the same unit goes too
        uow.append([note("n/1"), note("n/2")], expect={"n/1": 0})
        uow.commit()  # never reached
    assert (exc.value.stream, exc.value.expected, exc.value.actual) == ("n/1", 0, 1)
    assert head(database) == 1 and committed_pods(database) == []
    with database.connect() as c:
        assert store.stream_version(c, "n/1") == 1 and store.stream_version(c, "n/2") == 0
    assert [e.version for e in write(database, [note("n/1")], expect={"n/1": 1})] == [2]


def test_an_idempotent_resend_returns_the_original_events(database: Database) -> None:
    ids = [uuid.uuid4(), uuid.uuid4()]
    batch = [created("a", event_id=ids[0]), note("n/1", event_id=ids[1])]
    first = write(database, batch)
    with database.unit_of_work() as uow:
        again = uow.append(batch, expect={"n/1": 0})  # the original's expectation: no conflict
        assert uow.replayed and uow.appended == []
        # the store's promise for a re-send: the original positions (and the events' ids, streams,
        # types and payloads); the version of a re-sent event is not read back
        assert [(e.position, e.event_id, e.stream, e.type, e.data) for e in again] == [
            (e.position, e.event_id, e.stream, e.type, e.data) for e in first
        ]
        assert uow.commit() == []
    assert head(database) == 2 and committed_pods(database) == ["a"]
    with database.unit_of_work() as uow:
        uow.append([note("n/2")])
        assert not uow.replayed


# ------------------------------------------------------------------------------------ lock_key


def _lock_waiter(database: Database, pid: int, deadline: float = 30.0) -> None:
    """Until the backend ``pid`` waits for an advisory lock (pg_locks: not granted). Polls an
    observable state; never a timed synchronisation."""
    end = time.monotonic() + deadline
    with database.connect() as c:
        while time.monotonic() < end:
            q = "SELECT 1 FROM pg_locks WHERE pid = %s AND locktype = 'advisory' AND NOT granted"
            if c.execute(q, (pid,)).fetchone():
                return
            time.sleep(0.005)
    raise AssertionError(f"backend {pid} never waited for the key's lock")


def test_lock_key_serialises_two_units_with_the_same_key(database: Database) -> None:
    a_locked, a_go, b_locked = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def first() -> None:
        try:
            with database.unit_of_work() as uow:
                uow.lock_key("request-1")
                a_locked.set()
                assert a_go.wait(60)
                uow.append([note("k/1", "first")])
                uow.commit()
        except BaseException as exc:  # reported below
            seen["a-error"] = exc
            a_locked.set()

    def second() -> None:
        try:
            with database.unit_of_work() as uow:
                seen["b-pid"] = uow.conn.info.backend_pid
                uow.lock_key("request-1")
                b_locked.set()
                # the first unit committed before this one got the lock: its event is visible
                seen["b-saw"] = store.stream_version(uow.conn, "k/1")
                uow.append([note("k/1", "second")], expect={"k/1": seen["b-saw"]})
                uow.commit()
        except BaseException as exc:  # reported below
            seen["b-error"] = exc

    ta = threading.Thread(target=first)
    ta.start()
    assert a_locked.wait(60) and "a-error" not in seen, seen
    tb = threading.Thread(target=second)
    tb.start()
    try:
        for _ in range(6000):  # until B asked for the lock (bounded)
            if "b-pid" in seen or not tb.is_alive():
                break
            time.sleep(0.005)
        _lock_waiter(database, seen["b-pid"])
        assert not b_locked.is_set()  # B waits for A's key
        # another key is not held up by A
        with database.unit_of_work() as other:
            other.lock_key("request-2")
            other.append([note("k/other")])
            other.commit()
        assert not b_locked.is_set()
    finally:
        a_go.set()
        ta.join(60)
        tb.join(60)
    assert "a-error" not in seen and "b-error" not in seen, seen
    assert b_locked.is_set() and seen["b-saw"] == 1
    with database.connect() as c:
        assert [e.data["text"] for e in store.read_stream(c, "k/1")] == ["first", "second"]


# ------------------------------------------------------------------------------------- grouped


def test_grouped_defers_the_projection_until_settle_or_commit(database: Database) -> None:
    with database.unit_of_work(grouped=True) as uow:
        uow.append([created("a")])
        assert pods(uow.conn) == []  # a read through the unit does not write it
        uow.settle([("Pod", "ns", "other")], ["Node"])  # touches neither: still deferred
        assert pods(uow.conn) == []
        uow.settle([("Pod", "ns", "a")])  # a reader of pod a: written now
        assert pods(uow.conn) == ["a"]
        uow.append([created("b")])
        uow.settle([], ["Pod"])  # a reader of every pod
        assert pods(uow.conn) == ["a", "b"]
        uow.append([created("c")])
        assert pods(uow.conn) == ["a", "b"]
        assert committed_pods(database) == []
        uow.commit()  # writes the rest of the projection, and commits
        assert idle(uow.conn)
    assert committed_pods(database) == ["a", "b", "c"]
    with database.unit_of_work(grouped=True) as uow:
        uow.append([created("d")])
        uow.settle()  # everything
        assert pods(uow.conn) == ["a", "b", "c", "d"]


def test_ungrouped_reads_see_the_projection_of_every_append(database: Database) -> None:
    with database.unit_of_work() as uow:
        uow.append([created("a")])
        assert pods(uow.conn) == ["a"]
        uow.append([created("b")])
        assert pods(uow.conn) == ["a", "b"]
        uow.commit()
    assert committed_pods(database) == ["a", "b"]


# ----------------------------------------------------------------------------------- savepoint


def test_a_savepoint_rollback_undoes_only_its_own_appends(database: Database) -> None:
    with database.unit_of_work() as uow:
        before = uow.append([created("a")])
        with uow.savepoint() as sp:
            uow.append([created("b"), note("n/1")])
            assert pods(uow.conn) == ["a", "b"]
            sp.rollback()
        assert pods(uow.conn) == ["a"] and store.stream_version(uow.conn, "n/1") == 0
        after = uow.append([created("c")])
        with pytest.raises(KeyError), uow.savepoint():  # an exception undoes it too, and re-raises
            uow.append([created("d")])
            raise KeyError("d")
        with uow.savepoint():  # released: its appends stay
            kept = uow.append([created("e")])
        assert uow.appended == before + after + kept
        uow.commit()
    assert committed_pods(database) == ["a", "c", "e"]
    with database.connect() as c:
        assert [e.stream for e in store.read_all(c)] == ["pod/ns/a", "pod/ns/c", "pod/ns/e"]


# ---------------------------------------------------------------------------------- misuse


def test_a_unit_is_used_only_inside_its_block(database: Database) -> None:
    outside = database.unit_of_work()
    with pytest.raises(UnitOfWorkError):
        outside.append([note("n/1")])
    with database.unit_of_work() as uow:
        uow.append([note("n/1")])
        uow.commit()
    for use in (
        lambda: uow.append([note("n/2")]),
        lambda: uow.conn,
        lambda: uow.commit(),
        lambda: uow.settle(),
        lambda: uow.lock_key("k"),
        lambda: uow.lock_appends(),
    ):
        with pytest.raises(UnitOfWorkError):
            use()
    assert head(database) == 1


def test_commit_twice_raises_and_append_after_commit_too(database: Database) -> None:
    with database.unit_of_work() as uow:
        uow.append([note("n/1")])
        uow.commit()
        with pytest.raises(UnitOfWorkError, match="twice"):
            uow.commit()
        with pytest.raises(UnitOfWorkError):
            uow.append([note("n/2")])
    assert head(database) == 1
