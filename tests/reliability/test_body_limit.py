"""Issue 37 item 4 (bodies): a request body over the limit (3 MiB by default, like
kube-apiserver's ``--max-request-body-bytes``) is answered 413 on podledger's JSON API and on the
Kubernetes-compatible API, by a real ``podledger serve`` process whose peak memory stays far below
what parsing the body would cost; the limit is configurable (``--max-body``, ``PODLEDGER_MAX_BODY``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ledger.database import Database
from tests.http.conftest import TOKEN_SPEC, TOKENS, count_events
from tests.reliability.conftest import PODLEDGER

MiB = 2**20
PATHS = ("/podledger/v1/apply", "/api/v1/namespaces/default/pods")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.fixture()
def server(db_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[int, str]]:
    """``podledger serve`` in its own process: (pid, base URL). ``extra`` args via indirect param."""
    extra: list[str] = getattr(request, "param", [])
    port = _free_port()
    env = dict(os.environ, PODLEDGER_DATABASE_URL=db_url, PODLEDGER_TOKENS=TOKEN_SPEC)
    env.pop("PODLEDGER_MAX_BODY", None)
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [PODLEDGER, "serve", "--port", str(port), "--log-level", "warning", *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:  # bounded poll until the server answers
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "podledger serve did not start"
            time.sleep(0.1)
        yield proc.pid, base
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _post(base: str, path: str, body: bytes | Iterator[bytes]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKENS['writer']}", "Content-Type": "application/json"}
    return httpx.post(base + path, content=body, headers=headers, timeout=60)


def _chunks(total: int) -> Iterator[bytes]:
    piece = b"[" * MiB
    for _ in range(total // MiB):
        yield piece


@pytest.mark.timeout(180)
def test_a_16_mib_body_is_413_with_bounded_server_memory(server: tuple[int, str], database: Database) -> None:
    pid, base = server
    before = count_events(database)
    for path in PATHS:
        r = _post(base, path, b" " * (16 * MiB))  # declared Content-Length: refused before reading
        assert r.status_code == 413, (path, r.status_code, r.text[:200])
        try:
            r = _post(base, path, _chunks(16 * MiB))  # chunked: counted while read, cut at 3 MiB
            assert r.status_code == 413, (path, r.status_code, r.text[:200])
        except httpx.RemoteProtocolError:  # the server may close before the upload ends
            pass
    r = _post(base, PATHS[0], b" " * (3 * MiB + 1))
    assert r.status_code == 413 and "over 3 MiB" in r.text, r.text[:200]
    assert _peak_rss_kb(pid) < 300_000, _peak_rss_kb(pid)
    # a body under the limit is still read and answered (here: not a manifest, 422)
    r = _post(base, PATHS[0], b" " * (3 * MiB - 10))
    assert r.status_code == 422, r.text[:200]
    assert count_events(database) == before


@pytest.mark.timeout(120)
@pytest.mark.parametrize("server", [["--max-body", "64Ki"]], indirect=True)
def test_the_limit_is_configurable(server: tuple[int, str]) -> None:
    _, base = server
    r = _post(base, PATHS[0], b" " * (64 * 1024 + 1))
    assert r.status_code == 413 and "over 64 KiB" in r.text, r.text[:200]
    r = _post(base, PATHS[1], b" " * (64 * 1024 + 1))
    assert r.status_code == 413, r.text[:200]


def test_a_bad_limit_is_refused_at_start(db_url: str) -> None:
    env = dict(
        os.environ, PODLEDGER_DATABASE_URL=db_url, PODLEDGER_TOKENS=TOKEN_SPEC, PODLEDGER_MAX_BODY="lots"
    )
    res = subprocess.run([PODLEDGER, "serve", "--port", "1"], capture_output=True, env=env, timeout=60)
    assert res.returncode == 1 and b"PODLEDGER_MAX_BODY" in res.stderr and b"Traceback" not in res.stderr
