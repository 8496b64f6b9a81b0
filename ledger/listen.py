"""Wake-ups on append: LISTEN on a dedicated autocommit connection, with polling as fallback.

A notification is only a hint (it can be missed while disconnected); callers always catch up
by reading positions. LISTEN is issued before the first catch-up query.

On a standby (a reader on ``PODLEDGER_READ_DATABASE_URL``) LISTEN is refused and NOTIFY is not
replicated: the listener then only paces its caller's polling (``STANDBY_POLL`` seconds).
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

CHANNEL = "podledger_events"
STANDBY_POLL = 0.5  # seconds between two reads of a caller whose server cannot LISTEN


class Listener:
    def __init__(self, libpq_url: str) -> None:
        self._url = libpq_url
        self._conn: psycopg.Connection[Any] | None = None
        self.standby = False  # the server is in recovery: no LISTEN, callers poll

    def _connect(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=5)
            try:
                conn.execute(f"LISTEN {CHANNEL}")
            except psycopg.errors.ReadOnlySqlTransaction:
                conn.close()
                self.standby = True
                raise
            self._conn = conn
        return self._conn

    def start(self) -> None:
        try:
            self._connect()
        except psycopg.Error:
            self._conn = None

    def wait(self, timeout: float) -> int | None:
        """Block up to ``timeout`` seconds for a notification; return the announced position.

        Returns None on timeout or when the connection failed (the caller then polls).
        """
        if self.standby:
            time.sleep(min(timeout, STANDBY_POLL))
            return None
        try:
            conn = self._connect()
            best: int | None = None
            for note in conn.notifies(timeout=timeout, stop_after=1):
                try:
                    best = max(best or 0, int(note.payload))
                except ValueError:
                    best = best or 0
            return best
        except psycopg.Error:
            self.close()
            time.sleep(min(timeout, 1.0))
            return None

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
