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
from typing import Protocol, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ledger.replay_rows import read_rows
from ledger.store import StoredEvent, _raw


class CheckpointMoved(Exception):
    pass


class AsyncProjection(Protocol):
    name: str

    def reset(self, conn: Connection) -> None: ...

    def apply(self, conn: Connection, events: Sequence[StoredEvent]) -> None: ...


class EventTypeCounts:
    """Counts of events per type and the last position of each (feeds dashboards and tests)."""

    name = "event_type_counts"

    def reset(self, conn: Connection) -> None:
        conn.execute(sa.text("DELETE FROM event_type_counts"))

    def apply(self, conn: Connection, events: Sequence[StoredEvent]) -> None:
        agg: dict[str, list[int]] = {}
        for ev in events:
            slot = agg.setdefault(ev.type, [0, 0])
            slot[0] += 1
            slot[1] = ev.position
        if not agg:
            return
        conn.execute(
            sa.text(
                "INSERT INTO event_type_counts (type, count, last_position) VALUES (:t, :c, :p) "
                "ON CONFLICT (type) DO UPDATE SET count = event_type_counts.count + excluded.count, "
                "last_position = excluded.last_position"
            ),
            [{"t": t, "c": c, "p": p} for t, (c, p) in sorted(agg.items())],
        )


ASYNC_PROJECTIONS: dict[str, AsyncProjection] = {"event_type_counts": EventTypeCounts()}


def _rows(conn: Connection, after: int, limit: int) -> Sequence[StoredEvent]:
    """A page of lean rows (ledger/replay_rows.py) in the caller's transaction. The folds read
    ``position``, ``type``, ``data`` and ``effective_at``, which ``ReplayRow`` provides lazily."""
    return cast(Sequence[StoredEvent], read_rows(_raw(conn), after, limit))


def _lock_key(name: str) -> int:
    return 7243150100 + zlib.crc32(name.encode())


def checkpoint(conn: Connection, name: str) -> int:
    conn.execute(
        sa.text("INSERT INTO projection_checkpoints (name, position) VALUES (:n, 0) ON CONFLICT DO NOTHING"),
        {"n": name},
    )
    return int(
        conn.execute(
            sa.text("SELECT position FROM projection_checkpoints WHERE name = :n"), {"n": name}
        ).scalar_one()
    )


@dataclass
class Runner:
    engine: Engine
    projection: AsyncProjection
    batch_size: int = 1000

    def run_once(self) -> int:
        """Apply at most one batch; return how many events it folded."""
        with self.engine.begin() as conn:
            old = checkpoint(conn, self.projection.name)
            events = _rows(conn, old, self.batch_size)
            if not events:
                return 0
            self.projection.apply(conn, events)
            new = events[-1].position
            moved = conn.execute(
                sa.text(
                    "UPDATE projection_checkpoints SET position = :new, updated_at = now() "
                    "WHERE name = :n AND position = :old"
                ),
                {"new": new, "n": self.projection.name, "old": old},
            ).rowcount
            if moved != 1:
                raise CheckpointMoved(
                    f"projection {self.projection.name}: checkpoint moved by another runner"
                )
            return len(events)

    def catch_up(self) -> int:
        """Run batches until the projection is at the head. Holds the single-runner lock."""
        total = 0
        with self.engine.connect() as lock_conn:
            got = lock_conn.execute(
                sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": _lock_key(self.projection.name)}
            ).scalar()
            if not got:
                return 0
            try:
                while True:
                    n = self.run_once()
                    total += n
                    if n == 0:
                        return total
            finally:
                lock_conn.execute(
                    sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _lock_key(self.projection.name)}
                )
                lock_conn.commit()


def rebuild_async(engine: Engine, projection: AsyncProjection) -> int:
    with engine.begin() as conn:
        projection.reset(conn)
        conn.execute(
            sa.text("UPDATE projection_checkpoints SET position = 0 WHERE name = :n"), {"n": projection.name}
        )
    return Runner(engine, projection, batch_size=5000).catch_up()


def refold_current(conn: Connection, batch: int = 5000) -> int:
    """Re-fold the inline projections (``objects``, ``object_versions``, ``quota_usage``) from
    position 0 in the caller's transaction; returns the number of events folded."""
    from ledger.projections.current import project

    for table in ("objects", "object_versions", "quota_usage"):  # DELETE: the app role may not TRUNCATE
        conn.execute(sa.text(f"DELETE FROM {table}"))
    total = 0
    after = 0
    while True:
        events = _rows(conn, after, batch)
        if not events:
            break
        project(conn, events)
        total += len(events)
        after = events[-1].position
    return total


def rebuild_current(engine: Engine, batch: int = 5000) -> int:
    """Re-fold the inline projections from position 0, in one transaction."""
    with engine.begin() as conn:
        return refold_current(conn, batch)
