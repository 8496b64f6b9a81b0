"""The batched append (ledger/batch_append.py, migration 0010's ledger_begin_batch): new and
existing streams, a stream created concurrently, bad input after the bump was sent, and the
upgrade from revision 0009 of a database holding events."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from psycopg import pq

from alembic import command
from ledger import db, store
from ledger.batch_append import COPY_THRESHOLD, COPY_THRESHOLD_TX
from ledger.errors import ConcurrencyError, EventValidationError
from ledger.sql import Conn, scalar
from ledger.store import NewEvent
from ledger.verify import verify_chain


def note(stream: str, text: str = "x") -> NewEvent:
    return NewEvent(stream, "NoteRecorded", {"text": text})


def versions(conn: Conn, streams: list[str]) -> dict[str, int]:
    return {s: store.stream_version(conn, s) for s in streams}


def count(conn: Conn) -> int:
    return int(scalar(conn, "SELECT count(*) FROM events"))


@pytest.mark.parametrize("n", [6, COPY_THRESHOLD * 2])  # unnest INSERT and binary COPY
def test_mixed_new_and_existing_streams_get_the_next_versions(database, conn, n):
    store.append(conn, [note("m/a"), note("m/a"), note("m/c")])
    # "m/a" and "m/c" exist (versions 2 and 1), the others are new; "m/a" twice more
    batch = [note("m/a"), note("m/b"), note("m/c")] + [note(f"m/n{i}") for i in range(n - 4)] + [note("m/a")]
    positions = store.append(conn, batch, {"m/a": 2, "m/b": 0, "m/c": 1})
    assert len(positions) == n
    got = [(e.stream, e.version) for e in store.read_all(conn, after=positions[0] - 1, limit=n)]
    assert got[:3] == [("m/a", 3), ("m/b", 1), ("m/c", 2)] and got[-1] == ("m/a", 4)
    assert versions(conn, ["m/a", "m/b", "m/c", "m/n0"]) == {"m/a": 4, "m/b": 1, "m/c": 2, "m/n0": 1}
    # a stale expectation on an existing stream still conflicts, nothing appended
    before = count(conn)
    with pytest.raises(ConcurrencyError):
        store.append(conn, [note("m/new")] + [note(f"m/x{i}") for i in range(n)] + [note("m/c")], {"m/c": 1})
    assert count(conn) == before and versions(conn, ["m/new", "m/c"]) == {"m/new": 0, "m/c": 2}
    assert verify_chain(database).ok


@pytest.mark.parametrize("tags", [("$j$",), ("$j$", "$j0$", "$j1$")])  # dollar-quoted, hex fallback
def test_stream_names_with_quotes_and_dollar_tags(database, conn, tags):
    odd = ["q/'; DROP TABLE streams; --", 'q/"\\', "q/\u00e9\u2028", *(f"q/{t}x" for t in tags)]
    store.append(conn, [note(odd[0])])
    batch = [note(s) for s in odd] + [note(f"q/n{i}") for i in range(COPY_THRESHOLD)]
    positions = store.append(conn, batch, {odd[0]: 1, odd[1]: 0})
    got = [(e.stream, e.version) for e in store.read_all(conn, after=positions[0] - 1, limit=len(odd))]
    assert got == [(odd[0], 2)] + [(s, 1) for s in odd[1:]]
    assert verify_chain(database).ok


def test_bad_event_after_the_bump_was_sent_appends_nothing(conn):
    good = [note(f"v/{i}") for i in range(COPY_THRESHOLD)]
    bad = good[:10] + [NewEvent("v/bad", "NoteRecorded", {"nope": 1})] + good[10:]
    with pytest.raises(EventValidationError, match="NoteRecorded"):
        store.append(conn, bad)
    assert count(conn) == 0 and versions(conn, ["v/0", "v/bad"]) == {"v/0": 0, "v/bad": 0}
    assert store.append(conn, good)[0] >= 1  # the pooled connection is usable again
    assert versions(conn, ["v/0"]) == {"v/0": 1}


def _wait_until_blocked(admin: psycopg.Connection, pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        row = admin.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.01)  # polling for an observable state, not a timed synchronisation
    raise AssertionError("the second append never waited for the first one's stream row")


def test_stream_created_concurrently_is_bumped_not_duplicated(database, conn, db_url):
    # A (open transaction) creates "r/shared"; B's batch creates it too and must wait for A's
    # row, then (A committed) fall back from the plain INSERT to the upsert.
    result: dict[str, object] = {}

    with database.transaction() as a:
        # A waits for B on purpose: keep the ledger lock's idle limit out of the way
        a.execute("SET LOCAL podledger.ledger_idle_timeout = '600s'")
        store.append(a, [note("r/shared"), note("r/a")])

        def b() -> None:
            try:
                with database.transaction() as tx:
                    result["pid"] = tx.info.backend_pid
                    store.append(tx, [note("r/b"), note("r/shared"), note("r/shared")])
                result["ok"] = True
            except Exception as exc:  # reported by the assertion below
                result["error"] = exc

        t = threading.Thread(target=b)
        t.start()
        with psycopg.connect(db.libpq_url(db_url), autocommit=True) as admin:
            deadline = time.monotonic() + 60
            while "pid" not in result and t.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)
            _wait_until_blocked(admin, int(result["pid"]))  # type: ignore[call-overload]
        a.commit()
        t.join(60)
    assert result.get("ok") is True, result
    assert versions(conn, ["r/shared", "r/a", "r/b"]) == {"r/shared": 3, "r/a": 1, "r/b": 1}
    assert [e.version for e in store.read_stream(conn, "r/shared")] == [1, 2, 3]
    assert verify_chain(database).ok


def test_upgrade_from_0009_with_events(db_url):
    db.dispose_all()  # no pooled connection in the way of the migrations
    command.downgrade(db.alembic_config(db_url), "0009")
    with psycopg.connect(db.libpq_url(db_url)) as c:
        assert c.execute("SELECT to_regprocedure('ledger_begin_batch(text[], int[])')").fetchone() == (None,)
    database = db.get_database(db_url, migrate_on_start=False)
    with database.connect() as conn:
        for i in range(5):  # written at 0009 (the single-append function exists there)
            store.append(conn, [note(f"u/{i % 2}", str(i))])
    db.dispose_all()
    command.upgrade(db.alembic_config(db_url), "head")
    database = db.get_database(db_url, migrate_on_start=False)
    with database.connect() as conn:
        positions = store.append(
            conn, [note("u/0"), note("u/1")] + [note(f"u/new{i}") for i in range(COPY_THRESHOLD)]
        )
        assert positions[0] == 6
        assert versions(conn, ["u/0", "u/1", "u/new0"]) == {"u/0": 4, "u/1": 3, "u/new0": 1}
    assert verify_chain(database).ok


def test_batch_on_a_pooled_connection_killed_by_the_server(database, db_url):
    with database.connect() as c:
        store.append(c, [note("k/1"), note("k/2")])
        pid = scalar(c, "SELECT pg_backend_pid()")  # the pooled connection's backend
    with psycopg.connect(db.libpq_url(db_url), autocommit=True) as su:
        assert su.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        for _ in range(500):  # wait for the backend to be gone (bounded, no fixed sleep)
            if not su.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                break
    with database.connect() as c:
        positions = store.append(c, [note(f"k/{i}") for i in range(COPY_THRESHOLD)])
    assert positions == list(range(3, 3 + COPY_THRESHOLD))
    with database.connect() as c:  # handed back in autocommit and idle
        assert c.autocommit and c.info.transaction_status == pq.TransactionStatus.IDLE
    with database.transaction() as c:  # and a transaction on it still rolls back
        # a transaction-local setting outlives its statement and ends with the rollback
        c.execute("SELECT set_config('podledger.probe', 'kk', true)")
        assert scalar(c, "SELECT current_setting('podledger.probe')") == "kk"
        c.rollback()
        assert scalar(c, "SELECT current_setting('podledger.probe', true)") in ("", None)
    assert verify_chain(database).ok


def test_own_transaction_batch_streams_copy_in_chunks(database, conn, monkeypatch):
    from ledger import batch_append

    sizes: list[int] = []
    real = batch_append.chain_rows

    def spy(chunk, *args):  # type: ignore[no-untyped-def]
        sizes.append(len(chunk))
        return real(chunk, *args)

    monkeypatch.setattr(batch_append, "chain_rows", spy)
    n = batch_append.CHUNK * 2 + 7
    positions = store.append(conn, [note(f"c/{i % 50}", str(i)) for i in range(n)])
    assert sizes == [batch_append.CHUNK, batch_append.CHUNK, 7]  # binary COPY, three chunks
    assert positions == list(range(1, n + 1))
    got = store.read_all(conn, limit=n)
    assert [(e.stream, e.data["text"]) for e in got] == [(f"c/{i % 50}", str(i)) for i in range(n)]
    assert [e.version for e in got if e.stream == "c/0"] == list(range(1, len(range(0, n, 50)) + 1))
    assert verify_chain(database).ok
    # an invalid event in a later chunk: the COPY is aborted, nothing appended
    bad = [note(f"d/{i}") for i in range(n)]
    bad[batch_append.CHUNK + 3] = NewEvent("d/bad", "NoteRecorded", {"nope": 1})
    with pytest.raises(EventValidationError, match="NoteRecorded"):
        store.append(conn, bad)
    assert count(conn) == n and versions(conn, ["d/0", "d/bad"]) == {"d/0": 0, "d/bad": 0}
    # the aborted COPY may have drawn positions (a rollback leaves a hole, DESIGN.md §3)
    after = store.append(conn, [note("d/0"), note("d/1")])
    assert after[0] > n and after[1] == after[0] + 1 and count(conn) == n + 2
    assert verify_chain(database).ok


@pytest.mark.parametrize("n", [6, COPY_THRESHOLD * 2, COPY_THRESHOLD_TX + 3])  # INSERT, COPY (own tx), COPY
@pytest.mark.parametrize("own", [True, False])  # its own transaction / a caller's transaction
def test_resend_in_the_bump_round_trip_bumps_nothing(database, conn, n, own):
    """The idempotency check rides in the stream bump's message and gates it: a re-send returns
    the original positions without bumping a stream or burning a position, a partial re-send
    is refused, and the next append continues the versions."""
    import uuid

    from ledger.errors import IdempotencyConflict

    streams = [f"r/{i % 3}" for i in range(n)]
    batch = [NewEvent(s, "NoteRecorded", {"text": "x"}, event_id=uuid.uuid4()) for s in streams]

    def send(events: list[NewEvent]) -> list[int]:
        if own:
            with database.connect() as c:  # autocommit: the append is its own transaction
                return store.append(c, events)
        with database.transaction() as tx:
            return store.append(tx, events)

    first = send(batch)
    before = versions(conn, ["r/0", "r/1", "r/2"])
    assert send(batch) == first
    assert versions(conn, ["r/0", "r/1", "r/2"]) == before
    with pytest.raises(IdempotencyConflict):
        send([batch[0], note("r/0")])
    assert versions(conn, ["r/0", "r/1", "r/2"]) == before
    assert count(conn) == n
    again = send([note("r/0"), note("r/9")])
    assert again == [n + 1, n + 2]
    assert store.stream_version(conn, "r/0") == before["r/0"] + 1
    assert verify_chain(database).ok


def test_copy_in_a_callers_transaction_reports_the_drawn_positions(database):
    """A COPY-sized batch in a caller's transaction learns its positions from the last position
    drawn before it (read under the lock), without ``currval``: right after a rollback burned
    positions too."""
    import uuid

    n = COPY_THRESHOLD_TX + 5
    with pytest.raises(RuntimeError), database.transaction() as conn:
        store.append(conn, [note(f"h/{i}") for i in range(n)])  # draws n positions, then rolls back
        raise RuntimeError
    for _ in range(2):
        batch = [
            NewEvent(f"c/{i % 5}", "NoteRecorded", {"text": "x"}, event_id=uuid.uuid4()) for i in range(n)
        ]
        with database.transaction() as conn:
            got = store.append(conn, batch)
        with database.connect() as c:
            rows = dict(
                c.execute(
                    "SELECT event_id, position FROM events WHERE event_id = ANY(%s)",
                    ([ev.event_id for ev in batch],),
                ).fetchall()
            )
        assert got == [rows[ev.event_id] for ev in batch]
    assert verify_chain(database).ok
