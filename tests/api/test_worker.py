"""Two workers: the leader is killed, the standby takes over, no pod is bound twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from api.services.objects import load_documents
from ledger.resources.parse import parse_documents
from tests.ledger_helpers import apply

ROOT = Path(__file__).resolve().parents[2]
PODLEDGER = str(Path(sys.executable).parent / "podledger")


def _start(name: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PODLEDGER, "worker", "--interval", "0.2", "--name", name],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


def _pods(prefix: str, n: int) -> str:
    docs = [
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '64', memory: 64Gi, pods: 200}}\n"
    ]
    for i in range(n):
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {prefix}-{i}}}\n"
            "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
        )
    return "---\n".join(docs)


def _apply(database, text: str) -> None:
    objs, errs = load_documents(parse_documents(text))
    assert not errs
    assert not apply(database, objs).rejected


def _wait(cond, timeout: float) -> float:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if cond():
            return time.time() - t0
        time.sleep(0.1)
    raise AssertionError("timed out")


def _bound(database) -> dict[str, int]:
    with database.connect() as c:
        return dict(
            c.execute(
                "SELECT data->>'pod', count(*) FROM events WHERE type = 'PodBound' GROUP BY 1"
            ).fetchall()
        )


def _leader_of(log_a: Path, log_b: Path) -> str:
    for path in (log_a, log_b):
        if '"event": "leader"' in path.read_text():
            return path.stem
    return ""


def test_standby_takes_over_and_no_pod_is_bound_twice(database, tmp_path):
    a_log, b_log = tmp_path / "a.log", tmp_path / "b.log"
    a = _start("a", a_log)
    b = _start("b", b_log)
    try:
        _wait(lambda: _leader_of(a_log, b_log) != "", 30)
        leader = _leader_of(a_log, b_log)
        lead_proc, standby_proc = (a, b) if leader == "a" else (b, a)
        _apply(database, _pods("first", 20))
        _wait(lambda: len(_bound(database)) == 20, 30)
        os.kill(lead_proc.pid, signal.SIGKILL)
        lead_proc.wait(10)
        killed_at = time.time()
        _apply(database, _pods("second", 20))
        _wait(lambda: len(_bound(database)) == 40, 30)
        takeover = time.time() - killed_at
        assert takeover <= 5.0, f"standby took {takeover:.1f}s"
        counts = _bound(database)
        assert all(v == 1 for v in counts.values()), {k: v for k, v in counts.items() if v != 1}
        standby_proc.send_signal(signal.SIGTERM)
        assert standby_proc.wait(20) == 0
        assert '"event": "stopped"' in (a_log if leader == "b" else b_log).read_text()
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
    # the recorded history proves itself: both workers' runs replay byte for byte
    from api.services.replay import verify_replay

    rep = verify_replay(database)
    assert rep.runs >= 2 and rep.ok, rep.mismatches


def test_a_stop_requested_before_the_scheduler_runs_ends_the_term(database, db_url):
    """SIGTERM right after the election (the "leader" line is printed before the scheduler
    starts) must not be lost: the term ends at the first tick instead of running forever."""
    import threading

    from scheduler.edge.worker import Worker

    worker = Worker(database, db_url, interval=0.05, name="early-stop")
    assert worker._loop.leader.try_lead()  # elected (the worker's leader loop holds the lock)
    worker.stop_event.set()  # what the signal handler does when no scheduler runs yet
    term = threading.Thread(target=worker.lead, daemon=True)
    term.start()
    term.join(30)
    try:
        assert not term.is_alive()
    finally:
        worker._loop.leader.release()
