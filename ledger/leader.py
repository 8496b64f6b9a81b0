"""Leadership by a PostgreSQL session advisory lock, held on a connection of its own: the worker
and ``attach`` each run one leader per ledger (standbys poll ``try_lead``). Losing the
connection loses the lock, which ``still_leader`` notices on the next check."""

from __future__ import annotations

from typing import Any

import psycopg


class AdvisoryLeader:
    def __init__(self, url: str, lock_id: int) -> None:
        self.url = url
        self.lock_id = lock_id
        self.conn: psycopg.Connection[Any] | None = None

    def try_lead(self) -> bool:
        """Take the lock if nobody holds it (a new connection when the last one was lost)."""
        try:
            if self.conn is None or self.conn.closed:
                self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            row = self.conn.execute("SELECT pg_try_advisory_lock(%s)", (self.lock_id,)).fetchone()
            return bool(row and row[0])
        except psycopg.Error:
            self.conn = None
            return False

    def still_leader(self) -> bool:
        """The lock's connection still answers (the lock is held as long as it lives)."""
        if self.conn is None:
            return False
        try:
            self.conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def release(self) -> None:
        if self.conn is not None and not self.conn.closed:
            try:
                self.conn.execute("SELECT pg_advisory_unlock_all()")
                self.conn.close()
            except psycopg.Error:
                pass
        self.conn = None
