"""Async projections: tail the log in batches, fold, and move a fenced checkpoint atomically.

Each batch is one transaction: the read-model writes and ``UPDATE projection_checkpoints SET
position = :new WHERE name = :name AND position = :old``. Zero rows updated means another
runner (or a stale restart) moved the checkpoint: the batch rolls back and nothing is applied
twice. One active runner per projection is elected with a session advisory lock.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from ledger.replay_rows import read_rows
from ledger.sql import Conn, scalar
from ledger.store import StoredEvent

if TYPE_CHECKING:
    from ledger.database import Database


class CheckpointMoved(Exception):
    pass


class AsyncProjection(Protocol):
    name: str

    def reset(self, conn: Conn) -> None: ...

    def apply(self, conn: Conn, events: Sequence[StoredEvent]) -> None: ...


class EventTypeCounts:
    """Counts of events per type and the last position of each (feeds dashboards and tests)."""

    name = "event_type_counts"

    def reset(self, conn: Conn) -> None:
        conn.execute("DELETE FROM event_type_counts")

    def apply(self, conn: Conn, events: Sequence[StoredEvent]) -> None:
        agg: dict[str, list[int]] = {}
        for ev in events:
            slot = agg.setdefault(ev.type, [0, 0])
            slot[0] += 1
            slot[1] = ev.position
        if not agg:
            return
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO event_type_counts (type, count, last_position) VALUES (%s, %s, %s) "
                "ON CONFLICT (type) DO UPDATE SET count = event_type_counts.count + excluded.count, "
                "last_position = excluded.last_position",
                [(t, c, p) for t, (c, p) in sorted(agg.items())],
            )


ASYNC_PROJECTIONS: dict[str, AsyncProjection] = {"event_type_counts": EventTypeCounts()}


def _rows(conn: Conn, after: int, limit: int) -> Sequence[StoredEvent]:
    """A page of lean rows (ledger/replay_rows.py) in the caller's transaction. The folds read
    ``position``, ``type``, ``data`` and ``effective_at``, which ``ReplayRow`` provides lazily."""
    return cast(Sequence[StoredEvent], read_rows(conn, after, limit))


def _lock_key(name: str) -> int:
    return 7243150100 + zlib.crc32(name.encode())


def checkpoint(conn: Conn, name: str) -> int:
    conn.execute(
        "INSERT INTO projection_checkpoints (name, position) VALUES (%s, 0) ON CONFLICT DO NOTHING", (name,)
    )
    return int(scalar(conn, "SELECT position FROM projection_checkpoints WHERE name = %s", (name,)))


@dataclass
class Runner:
    db: Database
    projection: AsyncProjection
    batch_size: int = 1000

    def run_once(self) -> int:
        """Apply at most one batch; return how many events it folded."""
        with self.db.transaction() as conn:
            old = checkpoint(conn, self.projection.name)
            events = _rows(conn, old, self.batch_size)
            if not events:
                return 0
            self.projection.apply(conn, events)
            new = events[-1].position
            moved = conn.execute(
                "UPDATE projection_checkpoints SET position = %s, updated_at = now() "
                "WHERE name = %s AND position = %s",
                (new, self.projection.name, old),
            ).rowcount
            if moved != 1:
                raise CheckpointMoved(
                    f"projection {self.projection.name}: checkpoint moved by another runner"
                )
            return len(events)

    def catch_up(self) -> int:
        """Run batches until the projection is at the head. Holds the single-runner lock."""
        total = 0
        with self.db.connect() as lock_conn:
            got = scalar(lock_conn, "SELECT pg_try_advisory_lock(%s)", (_lock_key(self.projection.name),))
            if not got:
                return 0
            try:
                while True:
                    n = self.run_once()
                    total += n
                    if n == 0:
                        return total
            finally:
                lock_conn.execute("SELECT pg_advisory_unlock(%s)", (_lock_key(self.projection.name),))


def rebuild_async(db: Database, projection: AsyncProjection) -> int:
    with db.transaction() as conn:
        projection.reset(conn)
        conn.execute("UPDATE projection_checkpoints SET position = 0 WHERE name = %s", (projection.name,))
    return Runner(db, projection, batch_size=5000).catch_up()


def refold_current(conn: Conn, batch: int = 5000, *, analytics: bool = True) -> int:
    """Re-fold the inline projections (``objects``, ``object_versions``, ``quota_usage``, the
    analytics buckets of migration 0025) from
    position 0 in the caller's transaction; returns the number of events folded."""
    from ledger.projections.current import project

    tables = ["objects", "object_versions", "quota_usage"]
    if analytics:
        tables += ["analytics_hourly", "analytics_waits"]
    for table in tables:  # DELETE: the app role may not TRUNCATE
        conn.execute(f"DELETE FROM {table}")
    total = 0
    after = 0
    while True:
        events = _rows(conn, after, batch)
        if not events:
            break
        project(conn, events, analytics=analytics)
        total += len(events)
        after = events[-1].position
    return total


def rebuild_current(db: Database, batch: int = 5000) -> int:
    """Re-fold the inline projections from position 0, in one transaction."""
    with db.transaction() as conn:
        return refold_current(conn, batch)
