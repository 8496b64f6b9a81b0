"""``store.read_tail`` (the scheduler's catch-up read on a raw pooled connection) returns what
``read_all`` returns and leaves the pooled connection as it found it."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from ledger import store
from ledger.store import NewEvent


def test_read_tail_matches_read_all_and_restores_the_connection(engine):
    eff = datetime(2026, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)
    store.append(
        engine,
        [
            NewEvent(f"t/{i}", "NoteRecorded", {"text": str(i)}, meta={"i": i}, effective_at=eff)
            for i in range(30)
        ],
    )

    def key(evs: list[store.StoredEvent]) -> list[tuple[object, ...]]:
        return [
            (e.position, e.stream, e.version, e.type, e.event_id, e.data, e.meta, e.effective_at) for e in evs
        ]

    assert key(store.read_tail(engine, 0, 1000)) == key(store.read_all(engine, 0, 1000))
    assert key(store.read_tail(engine, 25, 3)) == key(store.read_all(engine, 25, 3))
    assert [e.position for e in store.read_tail(engine, 25, 3)] == [26, 27, 28]
    assert store.read_tail(engine, 30) == []
    with engine.connect() as conn:  # the pooled connection is transactional again
        # a transaction-local setting outlives its statement and ends with the rollback
        conn.execute(sa.text("SELECT set_config('podledger.probe', 'rt', true)"))
        assert conn.execute(sa.text("SELECT current_setting('podledger.probe')")).scalar() == "rt"
        conn.rollback()
        assert conn.execute(sa.text("SELECT current_setting('podledger.probe', true)")).scalar() in ("", None)
