"""Failover under load, shared by the failover test and ``bench.failover``.

``Load`` runs a scheduler worker and a writer process on the cluster's multi-host URL (the
reliability suite's writer: pods applied with idempotency keys and NoteRecorded events with ids
chosen before the first attempt, each written to an acknowledgement file only once its commit
returned, retried across the outage). ``fail_over`` crashes the primary, promotes the standby
and measures how long writes and scheduling take to resume; ``check`` proves afterwards that
every acknowledged write is present exactly once, the hash chain, ``replay --verify`` and a
projection rebuild agree, and every checkpoint signed before is extended by the promoted log.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger import anchor
from ledger import transparency as tl
from ledger.database import Database
from tests.reliability.conftest import (
    Procs,
    assert_projection_equals_replay,
    double_binds,
    event_count,
    log_count,
    rows,
    scalar,
    start_worker,
    stream_gaps,
    wait_until,
)
from tests.replication.cluster import Cluster


def acks(path: Path) -> tuple[list[str], list[str]]:
    """(pod names, event ids) the writer acknowledged, in order."""
    pods: list[str] = []
    events: list[str] = []
    if path.exists():
        for line in path.read_text().splitlines():
            kind, _, value = line.partition(" ")
            if value:
                (pods if kind == "pod" else events).append(value)
    return pods, events


def bound_pods(database: Database) -> set[str]:
    return {r[0] for r in rows(database, "SELECT data->>'pod' FROM events WHERE type = 'PodBound'")}


@dataclass
class Load:
    """A worker and a writer on ``url`` (started by ``start``, stopped by ``stop``)."""

    procs: Procs
    url: str
    workdir: Path
    prefix: str = "load"
    http: bool = True  # also a writer through both HTTP APIs (tests/replication/_http_writer.py)
    worker: Any = None
    writer: Any = None
    http_writer: Any = None
    wlog: Path = field(init=False)
    writer_log: Path = field(init=False)
    http_log: Path = field(init=False)
    ackfile: Path = field(init=False)
    http_acks: Path = field(init=False)
    stopfile: Path = field(init=False)

    def __post_init__(self) -> None:
        self.wlog = self.workdir / f"{self.prefix}-worker.log"
        self.writer_log = self.workdir / f"{self.prefix}-writer.log"
        self.http_log = self.workdir / f"{self.prefix}-http.log"
        self.ackfile = self.workdir / f"{self.prefix}-acks.txt"
        self.http_acks = self.workdir / f"{self.prefix}-http-acks.txt"
        self.stopfile = self.workdir / f"{self.prefix}-stop"

    def logs(self) -> list[Path]:
        return [self.wlog, self.writer_log, self.http_log]

    def all_pods(self) -> list[str]:
        return acks(self.ackfile)[0] + acks(self.http_acks)[0]

    def start(self) -> None:
        env = dict(os.environ, PODLEDGER_DATABASE_URL=self.url)
        self.worker = start_worker(self.procs, "w", self.wlog, self.url, env={"PODLEDGER_POOL_WAIT": "1"})
        self.writer = self.procs.start(
            [
                sys.executable,
                "-m",
                "tests.reliability._child",
                "writer",
                self.url,
                str(self.ackfile),
                str(self.stopfile),
                self.prefix,
            ],
            self.writer_log,
            env,
        )
        if self.http:
            self.http_writer = self.procs.start(
                [
                    sys.executable,
                    "-m",
                    "tests.replication._http_writer",
                    self.url,
                    str(self.http_acks),
                    str(self.stopfile),
                    f"{self.prefix}h",
                ],
                self.http_log,
                env,
            )
        wait_until(lambda: log_count(self.wlog, "leader") >= 1, 30, "the worker to lead")
        wait_until(lambda: len(acks(self.ackfile)[0]) >= 5, 30, "the writer's first acknowledged pods")
        if self.http:
            wait_until(lambda: len(acks(self.http_acks)[0]) >= 4, 30, "the HTTP writer's first pods")

    def stop(self, database: Database) -> None:
        """Stop the writer, wait until the worker has bound every acknowledged pod the log holds
        (all of them, unless asynchronous replication lost some), stop the worker."""
        self.stopfile.touch()
        assert self.writer.wait(60) == 0, self.writer_log.read_text()[-2000:]
        if self.http_writer is not None:
            assert self.http_writer.wait(60) == 0, self.http_log.read_text()[-2000:]
        wanted = {f"default/{p}" for p in self.all_pods()}
        created = {
            r[0].removeprefix("pod/")
            for r in rows(database, "SELECT stream FROM events WHERE type = 'PodCreated'")
        }
        wait_until(lambda: wanted & created <= bound_pods(database), 30, "every acknowledged pod bound")
        self.worker.send_signal(signal.SIGTERM)
        assert self.worker.wait(30) == 0, self.wlog.read_text()[-2000:]


@dataclass
class Round:
    promote_s: float  # the crash until the promoted server accepts writes
    write_resume_s: float  # the promotion until the writer's next acknowledged pods
    schedule_resume_s: float  # the promotion until a pod created after it is bound
    lag_bytes: int  # the standby's replay lag just before the crash
    leader_terms: int  # the worker's terms so far (a new one after each failover)
    http_resume_s: float | None = None  # the promotion until the HTTP writer's next pods


def fail_over(cluster: Cluster, load: Load, database: Database, *, timeout: float = 30) -> Round:
    """Crash the primary under ``load``, promote the standby, wait for writes and scheduling
    to resume (within ``timeout`` seconds), and measure it."""
    lag = cluster.replay_lag_bytes()
    terms = log_count(load.wlog, "leader")
    promote_s = cluster.fail_over()
    t0 = time.monotonic()
    acked = len(acks(load.ackfile)[0])
    http_acked = len(acks(load.http_acks)[0])
    wait_until(lambda: len(acks(load.ackfile)[0]) >= acked + 2, timeout, "the writer to resume")
    write_s = time.monotonic() - t0
    fresh = {f"default/{p}" for p in acks(load.ackfile)[0][acked + 1 : acked + 2]}
    wait_until(
        lambda: fresh <= bound_pods(database), timeout, "the worker to bind a pod created after promotion"
    )
    sched_s = time.monotonic() - t0
    http_s = None
    if load.http:
        wait_until(
            lambda: len(acks(load.http_acks)[0]) >= http_acked + 2, timeout, "the HTTP writer to resume"
        )
        http_s = time.monotonic() - t0
    wait_until(lambda: log_count(load.wlog, "leader") > terms, timeout, "the worker to lead again")
    return Round(promote_s, write_s, sched_s, lag, log_count(load.wlog, "leader"), http_s)


def check(database: Database, load: Load, notes: list[str], verifier: tl.Verifier) -> dict[str, Any]:
    """The ledger after failovers: every acknowledged write present exactly once (and nothing
    else of the writer's), the chain intact, replay and projections agreeing, and every
    checkpoint of ``notes`` extended by the log. Returns the counts (raises on a violation)."""
    from api.services.replay import verify_replay
    from ledger.verify import verify_chain

    events = acks(load.ackfile)[1]
    pods = load.all_pods()
    created = dict(rows(database, "SELECT stream, count(*) FROM events WHERE type = 'PodCreated' GROUP BY 1"))
    missing_pods = [p for p in pods if created.get(f"pod/default/{p}") != 1]
    found = dict(
        rows(
            database,
            "SELECT event_id::text, count(*) FROM events WHERE event_id = ANY(CAST(%(ids)s AS uuid[])) GROUP BY 1",
            ids=events,
        )
    )
    missing_events = [e for e in events if found.get(e) != 1]
    present_notes = int(
        scalar(
            database,
            "SELECT count(*) FROM events WHERE type = 'NoteRecorded' AND data->>'text' LIKE %(p)s",
            p=f"{load.prefix}-%",
        )
    )
    assert missing_pods == [] and missing_events == [], (missing_pods[:5], missing_events[:5])
    # a write whose commit reached the standby but whose acknowledgement was lost in the crash is
    # present and was retried with the same key/id: never twice, at most one beyond the acks
    assert len(events) <= present_notes <= len(events) + 1, (len(events), present_notes)
    assert double_binds(database) == {}
    assert stream_gaps(database) == []
    chain = verify_chain(database)
    n = event_count(database)
    assert chain.ok and chain.checked == n, chain
    report = verify_replay(database)
    assert report.ok, report
    assert_projection_equals_replay(database)
    for note in notes:
        verdict = anchor.verify_against_checkpoint(database, note, verifier)
        assert verdict.ok, verdict
    return {"acked_pods": len(pods), "acked_events": len(events), "events": n, "lost": 0}
