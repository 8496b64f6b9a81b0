"""Leadership by a PostgreSQL session advisory lock, held on a connection of its own: the worker
and ``attach`` each run one leader per ledger (``LeaderLoop``: standbys poll ``try_lead``).
Losing the connection loses the lock, which ``still_leader`` notices on the next check."""

from __future__ import annotations

import threading
from collections.abc import Callable
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


class LeaderLoop:
    """Elect, run a term while leading, stand by, and again, until ``stop`` is set: the loop of
    every leader-elected process (the worker, ``attach``).

    ``term`` runs while this process holds the lock and returns when the term is over (a signal,
    lost leadership: ``still_leader`` tells it). An error of ``errors`` out of a term is handed
    to ``on_error`` and the process stands by; ``after`` runs after every term (state that must
    not outlive it). The lock is released between terms and at the end.
    """

    def __init__(
        self,
        url: str,
        lock_id: int,
        *,
        stop: threading.Event,
        standby_poll: float = 0.5,
        on_standby: Callable[[], None] | None = None,
    ) -> None:
        self.leader = AdvisoryLeader(url, lock_id)
        self.stop = stop
        self.standby_poll = standby_poll
        self.on_standby = on_standby

    def still_leader(self) -> bool:
        return self.leader.still_leader()

    def run(
        self,
        term: Callable[[], None],
        *,
        errors: tuple[type[BaseException], ...] = (),
        on_error: Callable[[BaseException], None] | None = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        try:
            while not self.stop.is_set():
                if not self.leader.try_lead():
                    self.stop.wait(self.standby_poll)
                    continue
                try:
                    term()
                except errors as exc:
                    if on_error is not None:
                        on_error(exc)
                if after is not None:
                    after()
                if not self.stop.is_set():
                    self.leader.release()
                    if self.on_standby is not None:
                        self.on_standby()
        finally:
            self.leader.release()
