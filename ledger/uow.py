"""The unit of work: the one door through which anything is written to the ledger.

One request, one transaction. A ``UnitOfWork`` holds one pooled connection inside a
transaction; through it a command reads what it judges (``uow.conn``), appends its events with
the stream versions it expects (``append``), may hold an idempotency key's lock
(``lock_key``), and commits (``commit``). Leaving the block without ``commit`` rolls back:
nothing of the request stays.

The inline projection (``objects``, ``object_versions``, ``quota_usage``) of what was appended
is written in the same transaction. It is deferred: written once, right before anything reads
through ``uow.conn`` (or ``settle``), and at the latest at the commit, whose COMMIT then rides
at the end of the projection's write pipeline (no round trip of its own).

Group commit (``grouped=True``): several consecutive requests, and the scheduling run they
cause, share one unit of work. Reading through ``uow.conn`` then does not write the deferred
projection; a reader of the projection calls ``settle(keys, kinds)`` first, which writes it
only if a deferred event touches what it is about to read. Nothing is visible to other
sessions before the commit, and the commit is the only acknowledgement of every request.

Dry run (``dry_run=True``): everything runs (validation, admission, the append with its
checks, the projection), and the transaction is rolled back instead of committed. ``appended``
then holds what would have been appended; reads through ``uow.conn`` after ``commit`` (inside
the block) still see the state it would have made.

    with db.unit_of_work() as uow:
        state = read_something(uow.conn)
        uow.append(events, expect={stream: version})
        uow.commit()
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import pq

from ledger import replica, store
from ledger.projections.current import project, touched_keys
from ledger.store import NewEvent, StoredEvent

if TYPE_CHECKING:
    from ledger.database import Database

Key = tuple[str, str, str]

_LOCK_KEY = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 15))"


class UnitOfWorkError(RuntimeError):
    """A unit of work used out of order (after its end, or committed twice)."""


class UnitOfWork:
    def __init__(self, db: Database, *, dry_run: bool = False, grouped: bool = False) -> None:
        self.db = db
        self.dry_run = dry_run
        self.grouped = grouped
        self.appended: list[StoredEvent] = []  # what this unit appended (or, dry, would have)
        self.replayed = False  # an append was an idempotent re-send of events stored before
        self._conn: psycopg.Connection[Any] | None = None
        self._deferred: list[StoredEvent] = []
        self._done = False
        self.committed = False
        self.commit_lsn: str | None = None  # set by commit when positions are tracked

    # ------------------------------------------------------------------ the block

    def __enter__(self) -> UnitOfWork:
        conn = self.db.acquire()
        conn.autocommit = False
        self._conn = conn
        return self

    def __exit__(
        self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        conn, self._conn = self._conn, None
        self._done = True
        if conn is None:
            return
        try:
            if not conn.closed and conn.pgconn.transaction_status != pq.TransactionStatus.IDLE:
                conn.rollback()
            if not conn.closed:
                conn.autocommit = True
        except psycopg.Error:
            if typ is None:
                raise
        finally:
            self.db.release(conn)

    # ------------------------------------------------------------------ reads

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """The unit's connection, for reads inside its transaction. Outside a group commit,
        the deferred projection is written first, so a read sees every event appended so far."""
        conn = self._live()
        if self._deferred and not self.grouped:
            self._project(commit=False)
        return conn

    def settle(self, keys: Iterable[Key] | None = None, kinds: Iterable[str] = ()) -> None:
        """Write the deferred projection now: always when ``keys`` is None, otherwise only if a
        deferred event touches one of ``keys`` or an object of ``kinds`` (what a reader of the
        projection is about to read)."""
        self._live()
        if not self._deferred:
            return
        if keys is not None:
            wanted = set(keys)
            kind_set = set(kinds)
            touched = {k for ev in self._deferred for k in touched_keys(ev)}
            if not (touched & wanted) and not any(k[0] in kind_set for k in touched):
                return
        self._project(commit=False)

    # ------------------------------------------------------------------ writes

    def append(
        self, events: Sequence[NewEvent], expect: Mapping[str, int] | None = None
    ) -> list[StoredEvent]:
        """Append ``events`` in this unit's transaction; returns them as stored.

        ``expect`` maps a stream to the version it must have now (0: must not exist); a
        mismatch raises ``ConcurrencyError`` and the unit should end without committing. An
        idempotent re-send (every event id already stored) changes nothing (``replayed``) and
        returns the events with their original positions."""
        conn = self._live()
        if self.committed:
            raise UnitOfWorkError("append after commit")
        stored, new = store.append_stored(conn, events, expect)
        if new:
            self._deferred.extend(stored)
            self.appended.extend(stored)
        elif stored:
            self.replayed = True
        return stored

    def lock_key(self, key: str) -> None:
        """Hold a transaction-scoped lock on an idempotency key: a concurrent request with the
        same key waits here until this one ends (and then finds its events)."""
        self._live().execute(_LOCK_KEY, (key,))

    def lock_appends(self) -> None:
        """Take the ledger lock every append takes: a conditional write that reads its
        preconditions after this call knows nothing is appended before it commits."""
        self._live().execute("SELECT pg_advisory_xact_lock(%s)", (store.LEDGER_LOCK,))

    @contextmanager
    def savepoint(self) -> Iterator[Savepoint]:
        """A part of the unit that can be undone on its own (``rollback()`` inside the block);
        an exception out of the block undoes it too, and re-raises."""
        conn = self._live()
        if self._deferred:
            self._project(commit=False)  # what came before is not undone with the savepoint
        sp = Savepoint(self, len(self.appended))
        conn.execute("SAVEPOINT podledger_uow")
        try:
            yield sp
        except BaseException:
            if not sp.undone:
                sp.rollback()
            raise
        if not sp.undone:
            conn.execute("RELEASE SAVEPOINT podledger_uow")

    def commit(self) -> list[StoredEvent]:
        """End the transaction: the deferred projection, then COMMIT (in one pipeline); in a
        dry run the projection is written and the transaction stays open until the block ends,
        which rolls it back. Returns what was appended (or would have been)."""
        conn = self._live()
        if self.committed:
            raise UnitOfWorkError("unit of work committed twice")
        if self.dry_run:
            if self._deferred:
                self._project(commit=False)
        elif self._deferred:
            self._project(commit=True)
        else:
            conn.commit()
        self.committed = True
        if not self.dry_run and conn.pgconn.transaction_status == pq.TransactionStatus.IDLE:
            conn.autocommit = True  # reads after the commit need no transaction
            if replica.current() is not None:
                # the WAL position after the COMMIT: a standby that replayed it has this write
                # (asked only when the caller tracks positions: one round trip)
                row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
                self.commit_lsn = str(row[0]) if row else None
                if self.commit_lsn:
                    replica.note_commit(self.commit_lsn)
        return list(self.appended)

    # ------------------------------------------------------------------ internals

    def _live(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise UnitOfWorkError("the unit of work is not open (use it as a context manager)")
        return self._conn

    def _project(self, *, commit: bool) -> None:
        batch, self._deferred = self._deferred, []
        project(self._live(), batch, commit=commit)


class Savepoint:
    """A savepoint of a unit of work (``UnitOfWork.savepoint``)."""

    def __init__(self, uow: UnitOfWork, appended: int) -> None:
        self._uow = uow
        self._appended = appended
        self.undone = False

    def rollback(self) -> None:
        """Undo everything since the savepoint: its appends (and their projection) are gone."""
        if self.undone:
            return
        self._uow._live().execute("ROLLBACK TO SAVEPOINT podledger_uow")
        del self._uow.appended[self._appended :]
        self._uow._deferred.clear()
        self.undone = True


def write(
    db: Database, events: Sequence[NewEvent], expect: Mapping[str, int] | None = None
) -> list[StoredEvent]:
    """``events`` appended and projected as one unit of work of their own (tests, benchmarks,
    ledger maintenance; the application writes through its command layer)."""
    with db.unit_of_work() as uow:
        stored = uow.append(events, expect)
        uow.commit()
    return stored
