"""An idle-in-transaction client that holds the ledger lock cannot stall appends past a bound.

The client appends and then sleeps without committing (as a hung process or a forgotten psql
session would). Migration 0004 and ``ledger.store`` give every transaction that appended a
transaction-local ``idle_in_transaction_session_timeout`` (5 s by default): PostgreSQL
terminates the idle client, its append is rolled back, and the blocked append goes through.
A transaction that only read is not affected by that timeout.
"""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest

from ledger import store
from ledger.store import NewEvent
from ledger.verify import verify_chain

from .conftest import apply_text, nodes_yaml, rows, scalar, stream_gaps, wait_until

BOUND = 10.0  # seconds an append may be stalled by an idle lock holder (timeout 5 s + slack)


def _note(stream: str, eid: uuid.UUID) -> NewEvent:
    return NewEvent(stream, "NoteRecorded", {"text": stream}, {"actor": "test"}, eid)


@pytest.mark.timeout(60)
def test_idle_lock_holder_cannot_stall_appends(database, db_url):
    apply_text(database, nodes_yaml(1))
    idle_id, other_id, api_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

    # two clients of their own, as the application logs in (transactional, like psql)
    reader = psycopg.connect(database.login_url)  # a transaction that only reads, idle as long as the holder
    reader.execute("SELECT count(*) FROM events").fetchone()
    holder = psycopg.connect(database.login_url)
    store.append(holder, [_note("idle/holder", idle_id)])  # holds the ledger lock, never commits
    t_idle = time.monotonic()

    done: dict[str, float | BaseException] = {}

    def blocked_append() -> None:
        try:
            with database.connect() as other:  # a pooled connection: its own transaction
                store.append(other, [_note("other/writer", other_id)])
            done["t"] = time.monotonic()
        except BaseException as exc:
            done["error"] = exc

    t = threading.Thread(target=blocked_append, daemon=True)
    t.start()
    try:
        wait_until(lambda: done, BOUND + 5, "the blocked append to finish")
    finally:
        t.join(BOUND + 10)
    assert "error" not in done, done
    waited = done["t"] - t_idle
    assert 3.0 <= waited <= BOUND, f"append waited {waited:.1f}s"  # it was blocked, then freed

    # the idle client was terminated and its uncommitted append is gone
    with pytest.raises(psycopg.Error) as exc_info:  # IdleInTransactionSessionTimeout
        holder.execute("SELECT 1")
    assert "idle-in-transaction" in str(exc_info.value), exc_info.value
    holder.close()
    # the reader (no append) survived the same idle time
    assert reader.execute("SELECT 1").fetchone() == (1,)
    reader.close()

    found = dict(rows(database, "SELECT event_id::text, count(*) FROM events GROUP BY 1"))
    assert str(idle_id) not in found
    assert found[str(other_id)] == 1
    assert scalar(database, "SELECT count(*) FROM streams WHERE stream = 'idle/holder'") == 0
    # later appends are unaffected
    with database.connect() as c:
        store.append(c, [_note("after/writer", api_id)])
    assert stream_gaps(database) == []
    assert verify_chain(database).ok
