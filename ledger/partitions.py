"""The partitions of the log (migration 0016, migrations/sql/partitions.sql, docs/operations.md).

``events`` is PARTITION BY RANGE (position): range partitions ``events_p<lower bound>`` of
``PODLEDGER_PARTITION_SIZE`` positions each (default 1,000,000) and a DEFAULT partition
``events_default``. An append never fails for want of a partition: past the last range
partition a row lands in the default one, and ``ensure`` later re-attaches that table as the
range partition of those positions (no row is moved or deleted) and makes a new default.

The worker calls ``ensure`` every ``PODLEDGER_PARTITION_CHECK_INTERVAL`` seconds (default 60)
to keep ``PODLEDGER_PARTITIONS_AHEAD`` (default 2) empty partitions after the newest position.
``detach`` takes the oldest partitions wholly before a position out of the log, moving them to
the schema ``event_archive`` (``archive=True``) or dropping them; each is recorded in
``event_archive.detached`` with the hash its successor must link to (``ledger.verify``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.sql import Conn, scalar

if TYPE_CHECKING:
    from ledger.database import Database

DEFAULT_SIZE = 1_000_000
DEFAULT_AHEAD = 2
DEFAULT_CHECK_INTERVAL = 60.0


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").replace("_", "").replace(",", "").strip()
    return int(raw) if raw else None


def partition_size() -> int | None:
    """``PODLEDGER_PARTITION_SIZE`` if set; None lets the server continue with the size of the
    newest partition (1,000,000 when the migration made them without the variable)."""
    size = _env_int("PODLEDGER_PARTITION_SIZE")
    if size is not None and size < 1:
        raise ValueError("PODLEDGER_PARTITION_SIZE must be a positive number of positions")
    return size


def partitions_ahead() -> int:
    ahead = _env_int("PODLEDGER_PARTITIONS_AHEAD")
    return DEFAULT_AHEAD if ahead is None else max(0, ahead)


def check_interval() -> float:
    raw = os.environ.get("PODLEDGER_PARTITION_CHECK_INTERVAL", "").strip()
    return float(raw) if raw else DEFAULT_CHECK_INTERVAL


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    lo: int | None  # None: the default partition
    hi: int | None
    first: int | None  # first and last position stored (None: empty)
    last: int | None
    bytes: int
    state: str  # attached | default | archived | dropped
    events: int | None = None  # counted at detach time (detached partitions)


@dataclass(frozen=True, slots=True)
class Detached:
    name: str
    lo: int
    hi: int
    events: int


def ensure(db: Database, ahead: int | None = None, size: int | None = None) -> list[str]:
    """Create partitions so that ``ahead`` empty ones follow the newest position, and fold rows
    of the default partition into a range partition; returns the partitions made. Cheap when
    nothing is to do. The application role may call it (SECURITY DEFINER)."""
    ahead = partitions_ahead() if ahead is None else ahead
    size = partition_size() if size is None else size

    with db.transaction() as conn:
        rows = conn.execute(
            "SELECT * FROM ledger_ensure_partitions(%s, %s::bigint)", (ahead, size)
        ).fetchall()
    return [str(r[0]) for r in rows]


def detach(db: Database, before: int, *, archive: bool) -> list[Detached]:
    """Detach every partition wholly before ``before`` (and not past the log's head), oldest
    first; ``archive`` moves them to the schema ``event_archive``, else they are dropped. Needs
    the owner role."""

    with db.transaction() as conn:
        rows = conn.execute(
            "SELECT name, lo, hi, events FROM ledger_detach_partitions(%s, %s)", (before, archive)
        ).fetchall()
    return [Detached(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]


def list_partitions(db: Database) -> list[Partition]:
    """Detached partitions (from ``event_archive.detached``) then the attached ones in position
    order, the default last; first/last positions read through the parent (index probes)."""
    with db.transaction() as conn:
        out: list[Partition] = []
        for name, lo, hi, events, first, last, archived in conn.execute(
            "SELECT name, lo, hi, events, first_position, last_position, archived "
            "FROM event_archive.detached ORDER BY lo"
        ).fetchall():
            size = 0
            if archived:
                size = int(
                    scalar(
                        conn,
                        "SELECT coalesce(pg_total_relation_size(to_regclass(%s)), 0)",
                        (f'event_archive."{name}"',),
                    )
                )
            state = "archived" if archived else "dropped"
            out.append(Partition(name, lo, hi, first, last, size, state, events))
        attached = conn.execute(
            "SELECT p.name, p.lo, p.hi, p.is_default, pg_total_relation_size(to_regclass(quote_ident(p.name))) "
            "FROM ledger_event_partitions() p"
        ).fetchall()
        last_hi = max([int(r[2]) for r in attached if not r[3]] + [int(p.hi or 0) for p in out] + [0])
        for name, lo, hi, is_default, size in attached:
            where = "position >= %(lo)s" + ("" if is_default else " AND position < %(hi)s")
            params = {"lo": last_hi if is_default else lo, "hi": hi}
            first = scalar(
                conn, f"SELECT position FROM events WHERE {where} ORDER BY position LIMIT 1", params
            )
            last = scalar(
                conn, f"SELECT position FROM events WHERE {where} ORDER BY position DESC LIMIT 1", params
            )
            out.append(
                Partition(
                    str(name),
                    None if is_default else int(lo),
                    None if is_default else int(hi),
                    first,
                    last,
                    int(size or 0),
                    "default" if is_default else "attached",
                )
            )
    return out


def retained_start(conn: Conn) -> tuple[int, bytes | None] | None:
    """Where the retained log starts after a detach: (first position not detached, hash of the
    last detached event, None if the detached partitions held none); None: nothing detached."""
    row = conn.execute("SELECT hi, last_hash FROM event_archive.detached ORDER BY hi DESC LIMIT 1").fetchone()
    if row is None:
        return None
    return int(row[0]), (bytes(row[1]) if row[1] is not None else None)
