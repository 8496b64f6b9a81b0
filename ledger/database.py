"""One ledger database, reached through one psycopg connection pool.

Every process talks to PostgreSQL through psycopg 3 only (SQLAlchemy is left to Alembic): a
``Database`` holds a ``psycopg_pool.ConnectionPool`` logged in as the application role (or the
owner, for maintenance commands), and hands out

- ``connect()``: a pooled connection in autocommit mode, for reads (no BEGIN/ROLLBACK round
  trips around a single statement);
- ``transaction()``: a pooled connection inside a transaction, committed when the block ends
  normally and rolled back otherwise (maintenance, and writes that are not event appends);
- ``snapshot()``: a read-only REPEATABLE READ transaction (several reads, one answer);
- ``unit_of_work()``: the one door for writes (``ledger/uow.py``): appends, the inline
  projection and the commit of one request.

Connections come back to the pool in autocommit mode and idle; one whose socket the server
closed (a restart, ``pg_terminate_backend``) is replaced on checkout without a round trip
(``ledger.db.connection_is_dead``). When the pool has no connection to give within
``PODLEDGER_POOL_WAIT`` seconds (default 1: every connection busy, or the server restarting
while the pool reconnects in the background at its own pace), the caller gets a connection of
its own, closed after use: it fails at once when the server does not answer (so a request
fails fast instead of waiting in the pool), and serves the request when it does.

Dedicated session connections (the leader lock, LISTEN) and administration (creating a
database) use ``psycopg.connect`` directly: they live for a session, not a request.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import psycopg
from psycopg import pq
from psycopg_pool import ConnectionPool, PoolTimeout

from ledger.sql import Conn

if TYPE_CHECKING:
    from ledger.uow import UnitOfWork

# psycopg_pool logs every failed background connection attempt as a warning; with no handler
# configured Python would print them on stderr (a CLI command against a stopped server prints
# one error line, not the pool's retries). Processes that configure logging still see them.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def _check(conn: Conn) -> None:
    from ledger.db import connection_is_dead

    if connection_is_dead(conn):
        raise psycopg.OperationalError("the pooled connection was closed by the server")


def _reset(conn: Conn) -> None:
    """Back in the pool: autocommit and idle (the pool rolls back an open transaction first)."""
    if conn.pgconn.transaction_status == pq.TransactionStatus.IDLE and not conn.autocommit:
        conn.autocommit = True


def _pool_wait() -> float:
    raw = os.environ.get("PODLEDGER_POOL_WAIT", "").strip()
    return float(raw) if raw else 1.0


class Database:
    """The ledger at ``url`` (the owner's URL: its identity), logged in as ``login_url``."""

    def __init__(self, url: str, login_url: str, *, max_size: int = 10, name: str = "podledger") -> None:
        self.url = url
        self.login_url = login_url
        self.wait = _pool_wait()
        self.pool: ConnectionPool[Conn] = ConnectionPool(
            login_url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": 10},
            check=_check,
            reset=_reset,
            max_idle=600,
            max_lifetime=1800,
            name=name,
            open=False,
        )
        self.pool.open(wait=False)
        self._own: set[int] = set()  # ids of the connections handed out that are not the pool's
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Database({self.url!r})"

    # ------------------------------------------------------------------ checkout

    def acquire(self) -> Conn:
        """A connection in autocommit mode and idle: the pool's, or (see the module docstring)
        one of the caller's own. Give it back with ``release``."""
        try:
            return self.pool.getconn(timeout=self.wait)
        except PoolTimeout:
            pass
        conn = psycopg.connect(self.login_url, autocommit=True, connect_timeout=10)
        with self._lock:
            self._own.add(id(conn))
        return conn

    def release(self, conn: Conn) -> None:
        with self._lock:
            own = id(conn) in self._own
            self._own.discard(id(conn))
        if own:
            conn.close()
        else:
            self.pool.putconn(conn)

    @contextmanager
    def connect(self) -> Iterator[Conn]:
        """A connection in autocommit mode (each statement its own transaction)."""
        conn = self.acquire()
        try:
            yield conn
        finally:
            self.release(conn)

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """A connection in a transaction: committed if the block ends normally, rolled back if
        it raises."""
        conn = self.acquire()
        try:
            conn.autocommit = False
            try:
                yield conn
                conn.commit()
            except BaseException:
                if not conn.closed:
                    conn.rollback()
                raise
            finally:
                if not conn.closed and conn.pgconn.transaction_status == pq.TransactionStatus.IDLE:
                    conn.autocommit = True
        finally:
            self.release(conn)

    @contextmanager
    def snapshot(self) -> Iterator[Conn]:
        """A connection in a read-only REPEATABLE READ transaction: every statement of the
        block sees the same snapshot (a log head and the objects read with it agree)."""
        conn = self.acquire()
        try:
            conn.autocommit = False
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            try:
                yield conn
            finally:
                if not conn.closed:
                    conn.rollback()
                    conn.isolation_level = None
                    conn.read_only = None
                    conn.autocommit = True
        finally:
            self.release(conn)

    def unit_of_work(self, *, dry_run: bool = False, grouped: bool = False) -> UnitOfWork:
        """The one door for writes: see ``ledger.uow.UnitOfWork`` (a context manager)."""
        from ledger.uow import UnitOfWork

        return UnitOfWork(self, dry_run=dry_run, grouped=grouped)

    def close(self) -> None:
        self.pool.close()
