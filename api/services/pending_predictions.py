"""The predicted starts ``v_pending_now`` shows (issue 34): derived data, not facts.

A SQL view cannot run the estimator, so its answers are kept in the table
``pending_predictions`` (migration 0031), which ``refresh`` replaces as a whole:

1. ``LOCK TABLE pending_predictions`` first, then one REPEATABLE READ snapshot (the lock comes
   before the snapshot, so refreshes commit in the order of their snapshots and the table never
   goes back to an older position);
2. the head ``P`` and the pending PodGroups and plain pods at ``P`` in queue order (priority
   high first, then first observed: ``v_pending_now``'s order), the first ``limit`` of them;
3. for each, ``api.services.predict.predict`` as of ``P``: the estimator explain uses, so the
   numbers are explain's at that position (``podledger explain ... --at P``);
4. every row deleted and the new ones inserted, in the same transaction.

Nothing is appended to the log. The scheduler worker calls it after it schedules (at most every
``PODLEDGER_PREDICT_INTERVAL`` seconds, only when the log moved since the stored position), and
``podledger predictions refresh`` on demand. docs/prediction.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import psycopg

from api.services.predict import predict
from ledger.queries import log as log_q
from ledger.sql import Conn, scalar

if TYPE_CHECKING:
    from api.services.start_estimate import Estimate
    from ledger.database import Database

DEFAULT_LIMIT = 20  # entities per refresh, first in queue order
# seconds between the worker's refreshes at most; off unless PODLEDGER_PREDICT_INTERVAL is set:
# a refresh running when SIGTERM comes made the worker exit 1 under load (tests/reliability/
# test_worker_kill.py, stop 40), not yet understood; `podledger predictions refresh` has no such issue
DEFAULT_INTERVAL = 0.0
# seconds of estimation per worker refresh: no new prediction is started past it (the cost of
# one grows with the queue ahead of it, ~0.4 s + 0.1 s per entity ahead on the 2-core machine)
DEFAULT_BUDGET = 10.0

# The pending entities at the snapshot in queue order, with how many there are: v_pending_now's
# PodGroups and plain pods (its member-pod rows carry their group).
_PENDING = """
SELECT kind, namespace, name, count(*) OVER () FROM v_pending_now
WHERE "group" IS NULL ORDER BY queue_position
"""
_INSERT = """
INSERT INTO pending_predictions (kind, namespace, name, as_of_position, as_of, p50_seconds,
    p90_seconds, point_seconds, cases, censored, holders, queue_ahead, closest_domain)
VALUES (%(kind)s, %(namespace)s, %(name)s, %(position)s, %(as_of)s, %(p50)s, %(p90)s, %(point)s,
    %(cases)s, %(censored)s, %(holders)s, %(queue_ahead)s, %(domain)s)
"""


def configured_limit() -> int:
    """Entities per refresh (``PODLEDGER_PREDICT_LIMIT``, default 20; 0: every pending one)."""
    raw = os.environ.get("PODLEDGER_PREDICT_LIMIT", "").strip()
    return max(int(raw), 0) if raw else DEFAULT_LIMIT


def configured_interval() -> float:
    """Seconds between the worker's refreshes at most (``PODLEDGER_PREDICT_INTERVAL``; unset or
    0, the default: the worker does not refresh; 60 is a sane value)."""
    raw = os.environ.get("PODLEDGER_PREDICT_INTERVAL", "").strip()
    return max(float(raw), 0.0) if raw else DEFAULT_INTERVAL


def configured_budget() -> float | None:
    """Seconds of estimation per worker refresh (``PODLEDGER_PREDICT_BUDGET``, default 10; 0:
    only the first entity)."""
    raw = os.environ.get("PODLEDGER_PREDICT_BUDGET", "").strip()
    return max(float(raw), 0.0) if raw else DEFAULT_BUDGET


@dataclass
class Refreshed:
    """What a refresh stored: as of ``position``, ``rows`` predictions of the first entities of
    ``pending`` in queue order (``skipped``: the table was already as of the head; ``cut``: the
    entities of the limit not predicted because the time budget ran out)."""

    position: int
    pending: int
    rows: int = 0
    seconds: float = 0.0
    skipped: bool = False
    cut: int = 0
    entities: list[tuple[str, str, str]] = field(default_factory=list)


class _Rows:
    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows

    def fetchall(self) -> list[Any]:
        return list(self._rows)

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None


class _SnapshotReads:
    """The snapshot's connection, each distinct statement (text and parameters) run once: within
    one REPEATABLE READ snapshot the same statement returns the same rows, so the predictions of
    several entities as of one position share the reads that do not depend on the entity (the
    objects alive at ``P``, the lifetimes up to ``P``) and give exactly what one call gives."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn
        self._seen: dict[tuple[str, str], _Rows] = {}

    def execute(self, query: Any, params: Any = None) -> _Rows:
        key = (str(query), repr(params))
        if key not in self._seen:
            self._seen[key] = _Rows(self._conn.execute(query, params).fetchall())
        return self._seen[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextmanager
def _locked_snapshot(db: Database) -> Iterator[Conn]:
    """A REPEATABLE READ transaction that holds the table's refresh lock (taken before the
    snapshot: LOCK is the first statement), committed when the block ends normally."""
    conn = db.acquire()
    try:
        conn.autocommit = False
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        try:
            # SHARE ROW EXCLUSIVE: one refresh at a time; readers of the table are not blocked
            conn.execute("LOCK TABLE pending_predictions IN SHARE ROW EXCLUSIVE MODE")
            yield conn
            conn.commit()
        except BaseException:
            if not conn.closed:
                conn.rollback()
            raise
        finally:
            if not conn.closed:
                conn.isolation_level = None
                conn.autocommit = True
    finally:
        db.release(conn)


def refresh(
    db: Database,
    *,
    limit: int | None = None,
    budget: float | None = None,
    if_moved: bool = False,
    shared_reads: bool = True,
    on_entity: Callable[[int, int, tuple[str, str, str], Estimate | None], None] | None = None,
) -> Refreshed:
    """Replace the table with the predictions of the first ``limit`` pending entities (default
    ``configured_limit()``; 0: all) as of the head, in one transaction. With ``budget``, no
    prediction is started once that many seconds have passed (the first always is; the ones cut
    get no row). With ``if_moved``, nothing is done when the stored rows are already as of the head.
    ``shared_reads=False``: each prediction makes its own reads, as explain does (to measure). ``on_entity(i, n, (kind, namespace,
    name), estimate)`` is called after each prediction (progress)."""
    n_max = configured_limit() if limit is None else max(limit, 0)
    t0 = time.perf_counter()
    with _locked_snapshot(db) as conn:
        position = log_q.head(conn)
        if if_moved and scalar(conn, "SELECT max(as_of_position) FROM pending_predictions") == position:
            return Refreshed(position, pending=-1, skipped=True)
        found = conn.execute(_PENDING).fetchall()
        pending = int(found[0][3]) if found else 0
        chosen = [(str(k), str(ns), str(n)) for k, ns, n, _ in (found[:n_max] if n_max else found)]
        reads = cast(Conn, _SnapshotReads(conn)) if shared_reads else conn
        out = Refreshed(position, pending, entities=chosen)
        params = []
        for i, (kind, namespace, name) in enumerate(chosen, 1):
            if i > 1 and budget is not None and time.perf_counter() - t0 >= budget:
                out.cut = len(chosen) - i + 1
                break
            est = predict(reads, kind, namespace, name, position)
            if on_entity is not None:
                on_entity(i, len(chosen), (kind, namespace, name), est)
            if est is None or est.as_of is None:
                continue  # not pending as predict reads it (a group whose object is gone)
            params.append(
                {
                    "kind": kind,
                    "namespace": namespace,
                    "name": name,
                    "position": position,
                    "as_of": est.as_of,
                    "p50": est.p50_seconds,
                    "p90": est.p90_seconds,
                    "point": est.point_seconds,
                    "cases": est.cases,
                    "censored": est.censored,
                    "holders": est.holders,
                    "queue_ahead": est.queue_ahead,
                    "domain": est.closest_domain,
                }
            )
        conn.execute("DELETE FROM pending_predictions")
        if params:
            with conn.cursor() as cur:
                cur.executemany(_INSERT, params)
        out.rows = len(params)
    out.seconds = time.perf_counter() - t0
    return out


def worker_refresh(db: Database) -> dict[str, Any] | None:
    """The worker's refresh (``scheduler/edge/worker.py``): only when the log moved since the
    stored position; what it did, for the worker's log line (None: nothing to do)."""
    done = refresh(db, budget=configured_budget(), if_moved=True)
    if done.skipped:
        return None
    return {"position": done.position, "pending": done.pending, "predicted": done.rows, "cut": done.cut}
