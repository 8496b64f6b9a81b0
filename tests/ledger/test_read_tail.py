"""``store.read_tail`` (the scheduler's catch-up read on a pooled connection in autocommit mode)
returns what ``read_all`` returns and leaves the pooled connection as it found it."""

from __future__ import annotations

from datetime import UTC, datetime

from psycopg import pq

from ledger import store
from ledger.sql import scalar
from ledger.store import NewEvent


def test_read_tail_matches_read_all_and_restores_the_connection(database, conn):
    eff = datetime(2026, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)
    store.append(
        conn,
        [
            NewEvent(f"t/{i}", "NoteRecorded", {"text": str(i)}, meta={"i": i}, effective_at=eff)
            for i in range(30)
        ],
    )

    def key(evs: list[store.StoredEvent]) -> list[tuple[object, ...]]:
        return [
            (e.position, e.stream, e.version, e.type, e.event_id, e.data, e.meta, e.effective_at) for e in evs
        ]

    assert key(store.read_tail(conn, 0, 1000)) == key(store.read_all(conn, 0, 1000))
    assert key(store.read_tail(conn, 25, 3)) == key(store.read_all(conn, 25, 3))
    assert [e.position for e in store.read_tail(conn, 25, 3)] == [26, 27, 28]
    assert store.read_tail(conn, 30) == []
    # the connection is as it was: autocommit, no transaction left open
    assert conn.autocommit and conn.info.transaction_status == pq.TransactionStatus.IDLE
    with database.transaction() as tx:  # and a pooled transaction still rolls back
        # a transaction-local setting outlives its statement and ends with the rollback
        tx.execute("SELECT set_config('podledger.probe', 'rt', true)")
        assert scalar(tx, "SELECT current_setting('podledger.probe')") == "rt"
        tx.rollback()
        assert scalar(tx, "SELECT current_setting('podledger.probe', true)") in ("", None)
