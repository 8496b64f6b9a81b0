"""The long-running scheduler worker (``podledger worker``).

- Leader election: ``pg_try_advisory_lock`` on a dedicated autocommit connection. Only the
  holder schedules; standbys retry every ``standby_poll`` seconds, so when the leader's session
  dies (crash, kill -9, lost network) a standby takes over within about a second. The leader
  checks its lock connection before every tick and stops scheduling if it is gone.
- The in-memory state is built by folding the log (the same fold `replay --verify` uses, so a
  restarted worker's decisions stay reproducible) and then moved forward by tailing it.
- APScheduler 3 ``BlockingScheduler`` runs the tick as an interval job (``max_instances=1``,
  ``coalesce=True``); a LISTEN/NOTIFY thread wakes it early when events are appended.
- Each tick's decisions are appended in one transaction (see ``Bridge.run_until_idle``).
- SIGTERM/SIGINT: finish the running tick, release the lock, exit 0.
- Derived data refreshed while leading: the predicted starts ``v_pending_now`` shows (issue 34),
  by the ``predictions`` job ``podledger worker`` gives (``api/services/pending_predictions.py``;
  ``scheduler`` never imports ``api``): after a tick that scheduled, at most every
  ``predict_interval`` seconds, in a thread of its own (a tick never waits for it, though both
  share the process's interpreter: the refresh's time budget bounds what it takes from ticks).
- One structured JSON log line per cycle (cycle, entity, result, placement counts).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from ledger import db
from ledger.database import Database
from ledger.leader import LeaderLoop
from ledger.listen import Listener
from ledger.projections.runner import ASYNC_PROJECTIONS, Runner
from scheduler.decisions import CycleResult
from scheduler.edge.bridge import Bridge, config_from

LEADER_LOCK = 7243150010
log = logging.getLogger("podledger.worker")


def _json_line(**fields: Any) -> None:
    sys.stderr.write(json.dumps({"ts": datetime.now(UTC).isoformat(), **fields}, default=str) + "\n")
    sys.stderr.flush()


@dataclass
class Worker:
    db: Database
    url: str
    interval: float = 1.0
    name: str = "worker"
    standby_poll: float = 0.5
    stop_event: threading.Event = field(default_factory=threading.Event)
    cycles: int = 0
    _sched: Any = None
    _bridge: Bridge | None = None
    # refreshes derived data from the ledger (the predicted starts); returns what to log
    predictions: Callable[[Database], dict[str, Any] | None] | None = None
    predict_interval: float = 0.0  # seconds between refreshes at most (0: never)
    _predicted_at: float | None = None  # time.monotonic() of the last refresh's start

    def __post_init__(self) -> None:
        self._loop = LeaderLoop(
            self.url,
            LEADER_LOCK,
            stop=self.stop_event,
            standby_poll=self.standby_poll,
            on_standby=lambda: _json_line(event="standby", worker=self.name),
        )

    # -- work -----------------------------------------------------------------------------------
    def _on_cycle(self, res: CycleResult) -> None:
        self.cycles += 1
        _json_line(
            event="cycle",
            worker=self.name,
            cycle=res.cycle,
            entity=res.entity,
            result=res.result,
            decisions=len(res.decisions),
            placement_counts=res.placement_counts,
        )

    def tick(self) -> None:
        if self.stop_event.is_set():
            # A signal that came before the scheduler ran (right after the election) could not
            # shut it down: the first tick does.
            if self._sched is not None:
                self._sched.shutdown(wait=False)
            return
        if not self._loop.still_leader():
            # Our session (and with it the advisory lock) is gone: another worker may lead now.
            # Stop scheduling at once, then stand by and try to win the lock again.
            _json_line(event="leadership-lost", worker=self.name)
            if self._sched is not None:
                self._sched.shutdown(wait=False)
            return
        t0 = time.perf_counter()
        try:
            if self._bridge is None:
                self._bridge = self._new_bridge()
            results = self._bridge.run_until_idle(time.time())
            Runner(self.db, ASYNC_PROJECTIONS["event_type_counts"]).catch_up()
        except Exception as exc:
            # The database went away (restart, network, a killed session), or the append failed.
            # The core may already have applied this tick's decisions in memory without them
            # being committed: drop it and rebuild from the log on the next tick. Any other
            # error gets the same treatment (memory must equal the log).
            self._bridge = None
            db_error = isinstance(exc, (psycopg.Error, PoolTimeout))
            _json_line(
                event="db-error" if db_error else "tick-error",
                worker=self.name,
                error=f"{type(exc).__name__}: {' | '.join(str(exc).splitlines())}",
            )
            if not db_error:
                log.exception("tick failed; the scheduler state will be rebuilt from the log")
            return
        if results:
            _json_line(
                event="tick",
                worker=self.name,
                cycles=len(results),
                position=self._bridge.position,
                ms=round((time.perf_counter() - t0) * 1000, 2),
            )
            self.wake_predictions()

    def _listen(self, done: threading.Event) -> None:
        listener = Listener(self.url)
        listener.start()
        while not self.stop_event.is_set() and not done.is_set():
            pos = listener.wait(1.0)
            if (
                pos is not None
                and self._bridge is not None
                and pos > self._bridge.position
                and self._sched is not None
            ):
                try:
                    self._sched.get_job("tick").modify(next_run_time=datetime.now(UTC))
                except Exception:  # scheduler shutting down
                    pass
        listener.close()

    def _new_bridge(self) -> Bridge:
        t0 = time.perf_counter()
        bridge = Bridge(self.db, config_from(None), actor=self.name)
        bridge.on_cycle = self._on_cycle
        n = bridge.catch_up()  # folds SchedulerConfig events too
        _json_line(
            event="leader",
            worker=self.name,
            folded=n,
            position=bridge.position,
            start_ms=round((time.perf_counter() - t0) * 1000, 1),
        )
        return bridge

    def _schedule_checkpoints(self) -> None:
        """Sign a checkpoint every ``PODLEDGER_CHECKPOINT_INTERVAL`` seconds (default 60, 0: never)
        while leading, when a signing key is configured (ledger/anchor.py, docs/transparency.md)."""
        import os

        from ledger import anchor

        every = float(os.environ.get("PODLEDGER_CHECKPOINT_INTERVAL", "60") or 0)
        if every <= 0 or not anchor.key_path().exists() or self._sched is None:
            return

        def job() -> None:
            try:
                signed = anchor.make_checkpoint(self.db, anchor.load_signer())
                if signed.new:
                    _json_line(event="checkpoint", worker=self.name, size=signed.checkpoint.size)
            except Exception as exc:  # the next run tries again; scheduling is unaffected
                _json_line(event="checkpoint-error", worker=self.name, error=f"{type(exc).__name__}: {exc}")

        self._sched.add_job(job, "interval", seconds=every, id="checkpoint", max_instances=1, coalesce=True)

    def ensure_partitions(self) -> None:
        """Keep ``PODLEDGER_PARTITIONS_AHEAD`` empty partitions after the newest position
        (ledger/partitions.py). A failure (the table lock not granted within its timeout, the
        database away) is logged and retried at the next check; appends never need it to
        succeed: rows past the last partition land in the default partition."""
        from ledger import partitions

        try:
            made = partitions.ensure(self.db)
            if made:
                _json_line(event="partitions", worker=self.name, created=made)
        except Exception as exc:
            _json_line(event="partitions-error", worker=self.name, error=f"{type(exc).__name__}: {exc}")

    def _schedule_partitions(self) -> None:
        """Check the partitions every ``PODLEDGER_PARTITION_CHECK_INTERVAL`` seconds (default
        60, 0: never) while leading, the first time at once."""
        from ledger import partitions

        every = partitions.check_interval()
        if every <= 0 or self._sched is None:
            return
        self._sched.add_job(
            self.ensure_partitions,
            "interval",
            seconds=every,
            id="partitions",
            max_instances=1,
            coalesce=True,
            next_run_time=datetime.now(UTC),
        )

    def refresh_predictions(self) -> None:
        """Run the ``predictions`` refresh once; a failure is logged and the next run tries
        again (scheduling is unaffected)."""
        if self.predictions is None:
            return
        self._predicted_at = time.monotonic()
        t0 = time.perf_counter()
        try:
            done = self.predictions(self.db)
        except Exception as exc:
            _json_line(event="predictions-error", worker=self.name, error=f"{type(exc).__name__}: {exc}")
            return
        if done is not None:
            _json_line(
                event="predictions", worker=self.name, ms=round((time.perf_counter() - t0) * 1000, 1), **done
            )

    def wake_predictions(self) -> None:
        """After a tick that scheduled: run the refresh now if the last one started at least
        ``predict_interval`` seconds ago (else its interval job comes soon enough)."""
        if self._sched is None or self.predictions is None or self.predict_interval <= 0:
            return
        last = self._predicted_at
        if last is not None and time.monotonic() - last < self.predict_interval:
            return
        try:
            self._sched.get_job("predictions").modify(next_run_time=datetime.now(UTC))
        except Exception:  # scheduler shutting down, or the job not added
            pass

    def _schedule_predictions(self) -> None:
        """The refresh as an interval job every ``predict_interval`` seconds, the first time at
        once (one at a time; a run that is due while one runs is skipped)."""
        if self.predictions is None or self.predict_interval <= 0 or self._sched is None:
            return
        self._sched.add_job(
            self.refresh_predictions,
            "interval",
            seconds=self.predict_interval,
            id="predictions",
            max_instances=1,
            coalesce=True,
            next_run_time=datetime.now(UTC),
        )

    def lead(self) -> None:
        from apscheduler.schedulers.blocking import BlockingScheduler

        t0 = time.perf_counter()
        from ledger.queries.objects import list_objects

        with self.db.connect() as conn:
            rows = list_objects(conn, "SchedulerConfig")
        self._bridge = Bridge(self.db, config_from(rows[0].object if rows else None), actor=self.name)
        self._bridge.on_cycle = self._on_cycle
        n = self._bridge.catch_up()
        _json_line(
            event="leader",
            worker=self.name,
            folded=n,
            position=self._bridge.position,
            start_ms=round((time.perf_counter() - t0) * 1000, 1),
        )
        self._sched = BlockingScheduler(timezone=UTC)
        self._sched.add_job(
            self.tick,
            "interval",
            seconds=self.interval,
            id="tick",
            max_instances=1,
            coalesce=True,
            next_run_time=datetime.now(UTC),
        )
        self._schedule_checkpoints()
        self._schedule_partitions()
        self._schedule_predictions()
        done = threading.Event()  # ends this term's listener (one LISTEN connection per term)
        threading.Thread(target=self._listen, args=(done,), name="listen", daemon=True).start()
        try:
            self._sched.start()  # blocks until shutdown (SIGTERM or lost leadership)
        finally:
            done.set()

    def run(self) -> int:
        """Elect, lead until leadership is lost or a signal arrives, then stand by again."""

        def on_signal(signum: int, _frame: Any) -> None:
            _json_line(event="stopping", worker=self.name, signal=signum)
            self.stop_event.set()
            if self._sched is not None and self._sched.running:
                self._sched.shutdown(wait=True)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        _json_line(event="started", worker=self.name)

        def on_error(exc: BaseException) -> None:
            # The database went away while taking over (reading the log): stand by and try
            # again rather than exiting.
            self._bridge = None
            _json_line(
                event="db-error",
                worker=self.name,
                error=f"{type(exc).__name__}: {' | '.join(str(exc).splitlines())}",
            )

        def after() -> None:
            self._sched = None

        try:
            # a term returns on SIGTERM or when the lock connection is lost
            self._loop.run(self.lead, errors=(psycopg.Error, PoolTimeout), on_error=on_error, after=after)
        finally:
            _json_line(event="stopped", worker=self.name, cycles=self.cycles)
        return 0


def main(
    interval: float = 1.0,
    name: str | None = None,
    *,
    predictions: Callable[[Database], dict[str, Any] | None] | None = None,
    predict_interval: float = 0.0,
) -> int:
    import os
    import socket

    ledger = db.get_database()  # migrates as the owner; logs in as the application role
    url = db.app_url()  # the leader lock and LISTEN sessions log in as the application role too
    worker = Worker(
        ledger,
        url,
        interval=interval,
        name=name or f"{socket.gethostname()}:{os.getpid()}",
        predictions=predictions,
        predict_interval=predict_interval,
    )
    return worker.run()
