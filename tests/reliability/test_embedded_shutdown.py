"""The embedded PostgreSQL does not outlive the processes that use it.

Each test runs podledger processes on their own embedded server (a fresh ``PODLEDGER_HOME``, no
``PODLEDGER_DATABASE_URL``), ends them the way an operator or a crash would, and checks that the
server process is gone and no handle of a dead process is left in ``.handle_pids.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.request
from pathlib import Path

import psutil
import pytest

from .conftest import PODLEDGER, ROOT, Procs, log_count, wait_until

pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def home():  # type: ignore[no-untyped-def]
    """A fresh PODLEDGER_HOME outside pytest's tmp tree (the server runs as another OS user when
    the tests run as root, and pytest keeps its own tree private); a server a failed test left
    running there is stopped afterwards."""
    path = Path(tempfile.mkdtemp(prefix="podledger-shutdown-")) / "home"
    yield path
    left = _postmaster(path)
    if left is not None:
        left.terminate()
        left.wait(30)
    shutil.rmtree(path.parent, ignore_errors=True)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PODLEDGER_DATABASE_URL"}
    env["PODLEDGER_HOME"] = str(home)
    env["XDG_RUNTIME_DIR"] = str(home)
    return env


def _postmaster(home: Path) -> psutil.Process | None:
    pidfile = home / "pgdata" / "postmaster.pid"
    if not pidfile.exists():
        return None
    try:
        proc = psutil.Process(int(pidfile.read_text().split()[0]))
    except (psutil.NoSuchProcess, ValueError, IndexError):
        return None
    return proc if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE else None


def _handles(home: Path) -> list[int]:
    path = home / "pgdata" / ".handle_pids.json"
    return json.loads(path.read_text()) if path.exists() and path.read_text().strip() else []


def _assert_server_stopped(home: Path) -> None:
    wait_until(lambda: _postmaster(home) is None, 30, "the embedded server to stop")
    assert _handles(home) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def test_sigterm_to_serve_stops_the_embedded_server(home: Path, tmp_path: Path, procs: Procs) -> None:
    port, log = _free_port(), tmp_path / "serve.log"
    server = procs.start([PODLEDGER, "serve", "--insecure-local", "--port", str(port)], log, _env(home))
    wait_until(lambda: _healthy(port) or server.poll() is not None, 90, "the API to answer")
    assert server.poll() is None, log.read_text()
    assert _postmaster(home) is not None
    server.send_signal(signal.SIGTERM)
    server.wait(30)
    _assert_server_stopped(home)


def test_sigterm_to_worker_stops_the_embedded_server(home: Path, tmp_path: Path, procs: Procs) -> None:
    log = tmp_path / "worker.log"
    worker = procs.start([PODLEDGER, "worker", "--interval", "0.2", "--name", "w"], log, _env(home))
    wait_until(lambda: log_count(log, "leader") >= 1 or worker.poll() is not None, 90, "the worker to lead")
    assert worker.poll() is None, log.read_text()
    worker.send_signal(signal.SIGTERM)
    try:
        code = worker.wait(30)
    except subprocess.TimeoutExpired:  # keep what the worker logged: the tmp tree is pruned later
        pytest.fail(f"the worker did not exit within 30 s of SIGTERM; its log:\n{log.read_text()}")
    assert code == 0, log.read_text()
    _assert_server_stopped(home)


def test_handle_of_a_killed_process_does_not_keep_the_server(
    home: Path, tmp_path: Path, procs: Procs
) -> None:
    """kill -9 skips the holder's cleanup and leaves its pid in the handle list; the next command
    prunes it, so the server stops when that command, the last live user, exits."""
    log = tmp_path / "worker.log"
    worker = procs.start([PODLEDGER, "worker", "--interval", "0.2", "--name", "w"], log, _env(home))
    wait_until(lambda: log_count(log, "leader") >= 1 or worker.poll() is not None, 90, "the worker to lead")
    worker.send_signal(signal.SIGKILL)
    worker.wait(10)
    assert _postmaster(home) is not None and _handles(home) == [worker.pid]  # the stale handle
    res = subprocess.run(
        [PODLEDGER, "get", "pods"], cwd=ROOT, env=_env(home), capture_output=True, text=True, timeout=90
    )
    assert res.returncode == 0, res.stderr
    _assert_server_stopped(home)
