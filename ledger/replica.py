"""Reads from a standby, read-your-writes, and the position of every answer.

PostgreSQL's streaming replication gives the ledger standbys that replay the primary's WAL; a
reader (``explain``, ``get``, ``history``, reports, watches, the dashboard) may be served by
one when ``PODLEDGER_READ_DATABASE_URL`` names it (``target_session_attrs=prefer-standby`` is
added unless the URL says otherwise, so a multi-host URL of the whole cluster picks a standby
while one is up and the primary otherwise).

Positions are WAL positions (``pg_lsn``, e.g. ``0/3000148``):

- every committed unit of work records the primary's WAL position after its COMMIT
  (``UnitOfWork.commit_lsn``): the standby has applied the write once it has replayed that far;
- a read that must see a client's own write names that position (``min_lsn``, the HTTP header
  ``X-Podledger-Min-LSN``). ``route`` waits until the standby has replayed it, at most
  ``PODLEDGER_READ_WAIT`` seconds (default 2), then reads from the primary instead;
- ``route`` records which server answered and its replayed (standby) or current (primary)
  position: the answer is as of at least that position. The HTTP API returns them as
  ``X-Podledger-Served-By`` and ``X-Podledger-Read-LSN`` (and a write's ``X-Podledger-Commit-LSN``).

What a request did is collected in a ``Positions`` object of the running context
(``tracking``): the HTTP middleware opens one per request; threads the request runs in
(``run_in_threadpool`` copies the context) fill the same object.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

if TYPE_CHECKING:
    from ledger.database import Database

POLL = 0.01  # seconds between two looks at the standby's replay position while waiting


def lsn_int(lsn: str) -> int:
    """``'16/B374D848'`` as an integer (pg_lsn's order); ValueError for anything else."""
    hi, sep, lo = lsn.strip().partition("/")
    if not sep or not hi or not lo or len(hi) > 8 or len(lo) > 8:
        raise ValueError(f"not a WAL position (pg_lsn such as 0/16B3748): {lsn!r}")
    return (int(hi, 16) << 32) | int(lo, 16)


@dataclass
class Positions:
    """What one request did: the WAL position its writes committed at, the position its reads
    must see, and which server answered its reads as of which position."""

    min_lsn: str | None = None
    commit_lsn: str | None = None
    served_by: str | None = None
    read_lsn: str | None = None

    def committed(self, lsn: str) -> None:
        if self.commit_lsn is None or lsn_int(lsn) > lsn_int(self.commit_lsn):
            self.commit_lsn = lsn

    def read(self, served_by: str, lsn: str) -> None:
        # several reads of one request: the answer is as of the oldest of them
        if self.read_lsn is None or lsn_int(lsn) < lsn_int(self.read_lsn):
            self.served_by, self.read_lsn = served_by, lsn


_current: ContextVar[Positions | None] = ContextVar("podledger_positions", default=None)


@contextmanager
def tracking(min_lsn: str | None = None) -> Iterator[Positions]:
    """Collect the positions of what runs inside the block (and the threads it starts with a
    copy of this context)."""
    pos = Positions(min_lsn=min_lsn)
    token = _current.set(pos)
    try:
        yield pos
    finally:
        _current.reset(token)


def current() -> Positions | None:
    return _current.get()


def note_commit(lsn: str) -> None:
    pos = _current.get()
    if pos is not None:
        pos.committed(lsn)


# ---------------------------------------------------------------------------------- routing

_lock = threading.Lock()
_readers: dict[str, Database] = {}


def read_wait() -> float:
    raw = os.environ.get("PODLEDGER_READ_WAIT", "").strip()
    return float(raw) if raw else 2.0


def read_database() -> Database | None:
    """The pooled readers' database (``PODLEDGER_READ_DATABASE_URL``), one per process; None
    when readers use the primary."""
    from ledger import db
    from ledger.database import Database

    url = db.read_url()
    if url is None:
        return None
    with _lock:
        found = _readers.get(url)
        if found is None:
            db._install_json_loads()
            found = _readers[url] = Database(url, url, name="podledger-read")
    return found


_POSITION_SQL = (
    "SELECT pg_is_in_recovery(), (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
    "ELSE pg_current_wal_lsn() END)::text"
)


def _position(database: Database) -> tuple[bool, str]:
    with database.connect() as conn:
        row = conn.execute(_POSITION_SQL).fetchone()
    assert row is not None
    # a replica that does not replay WAL (e.g. Aurora's) has no replay position: 0/0, so a
    # read that names a position is answered by the primary
    return bool(row[0]), str(row[1]) if row[1] is not None else "0/0"


def route(primary: Database, min_lsn: str | None = None) -> Database:
    """The database a read should use: the readers' server when it has replayed ``min_lsn``
    (default: the request's ``X-Podledger-Min-LSN``) within ``PODLEDGER_READ_WAIT`` seconds,
    else the primary. The chosen server and its position are recorded for the answer."""
    pos = _current.get()
    wanted = min_lsn if min_lsn is not None else (pos.min_lsn if pos is not None else None)
    need = lsn_int(wanted) if wanted else 0
    replica = read_database()
    if replica is not None:
        deadline = time.monotonic() + read_wait()
        try:
            while True:
                standby, lsn = _position(replica)
                if lsn_int(lsn) >= need:
                    if pos is not None:
                        pos.read("standby" if standby else "primary", lsn)
                    return replica
                if time.monotonic() >= deadline:
                    break
                time.sleep(POLL)
        except psycopg.Error:
            pass  # the readers' server is unreachable: the primary answers
    if pos is not None:
        _, lsn = _position(primary)
        pos.read("primary", lsn)
    return primary


def close_readers() -> None:
    with _lock:
        found = list(_readers.values())
        _readers.clear()
    for database in found:
        database.close()
