"""Issue 33 item 4: ``attach --in-cluster`` as a Pod runs it: KUBERNETES_SERVICE_HOST/PORT, the
service account's token and CA (PODLEDGER_SERVICEACCOUNT_DIR stands for
/var/run/secrets/kubernetes.io/serviceaccount), against the fake API server of hostile.py over
TLS with a token check. A rotated token file is used from the next request on; a refused
(expired) token is one clear line, a metric, backoff, and an exit with status 3 after
``--auth-failures`` refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attach.conftest import Ledger
from tests.attach.hostile import Hostile, line, pod, script
from tests.k8s.conftest import PODLEDGER, ROOT, LineReader, _make_cert, free_port
from tests.reliability.conftest import wait_until

pytest.importorskip("kubernetes", reason="attach is built on the kubernetes client")


@pytest.fixture()
def tls(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "tls"
    d.mkdir()
    return _make_cert(d)


@pytest.fixture()
def server(tls: tuple[Path, Path]) -> Iterator[Hostile]:
    h = Hostile(tls=tls, tokens={"token-1"})
    try:
        yield h
    finally:
        h.close()


def _serviceaccount(tmp: Path, cert: Path, token: str) -> Path:
    d = tmp / "serviceaccount"
    d.mkdir()
    (d / "ca.crt").write_bytes(cert.read_bytes())
    _rotate(d, token)
    return d


def _rotate(d: Path, token: str) -> None:
    """Replace the token file atomically, as the kubelet does."""
    tmp = d / ".token.new"
    tmp.write_text(token)
    os.replace(tmp, d / "token")


def _attach(ledger: Ledger, server: Hostile, sa: Path, *args: str) -> LineReader:
    env = dict(
        os.environ,
        PODLEDGER_DATABASE_URL=ledger.url,
        KUBERNETES_SERVICE_HOST="127.0.0.1",
        KUBERNETES_SERVICE_PORT=str(server.port),
        PODLEDGER_SERVICEACCOUNT_DIR=str(sa),
    )
    p = subprocess.Popen(
        [PODLEDGER, "attach", "--in-cluster", "--progress-every", "5", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    ledger.procs.append(p)
    return LineReader(p)


def _created(ledger: Ledger, name: str) -> bool:
    return ledger.count("type = 'PodCreated' AND stream = %(s)s", s=f"pod/hostile/{name}") == 1


def _pod_watch_tokens(server: Hostile) -> list[str]:
    return [
        t
        for t, (p, q) in zip(server.auth, server.requests, strict=False)
        if p.endswith("/pods") and "watch" in q
    ]


def _has(event: str) -> object:
    return lambda lines: any(f'"event": "{event}"' in x for x in lines)


def test_a_rotated_token_is_used_from_the_next_request(
    ledger: Ledger, server: Hostile, tls: tuple[Path, Path]
) -> None:
    sa = _serviceaccount(ledger.tmp, tls[0], "token-1")
    proc = _attach(ledger, server, sa)
    proc.wait_for(_has("synced"), 120, "attach to sync in-cluster")
    assert set(server.auth) == {"token-1"}
    # the kubelet rotates the token (the old one stays valid until it expires, as upstream's do)
    _rotate(sa, "token-2")
    server.tokens = {"token-1", "token-2"}
    server.watch_scripts.put(None)  # the server ends the pods' watch: attach opens a new one
    server.watch_scripts.put(script(line("ADDED", pod("after-rotation", 12))))
    wait_until(lambda: _created(ledger, "after-rotation"), 120, "the pod seen through the new watch")
    assert _pod_watch_tokens(server)[-1] == "token-2"
    # the old token expires: nothing uses it any more
    server.tokens = {"token-2"}
    server.watch_scripts.put(None)
    server.watch_scripts.put(script(line("ADDED", pod("after-expiry", 13))))
    wait_until(lambda: _created(ledger, "after-expiry"), 120, "the pod seen after the old token expired")
    assert not any('"event": "unauthorized"' in x for x in proc.lines)
    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(10) == 0


def test_a_refused_token_backs_off_logs_once_counts_and_exits_non_zero(
    ledger: Ledger, server: Hostile, tls: tuple[Path, Path]
) -> None:
    sa = _serviceaccount(ledger.tmp, tls[0], "expired")
    port = free_port()
    # never giving up: one line, a metric, still running
    proc = _attach(ledger, server, sa, "--auth-failures", "0", "--metrics-port", str(port))
    proc.wait_for(_has("unauthorized"), 120, "the refusal to be reported")

    def refused() -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            for row in r.read().decode().splitlines():
                if row.startswith('podledger_attach_auth_failures_total{status="401"} '):
                    return float(row.rpartition(" ")[2])
        return 0.0

    wait_until(lambda: refused() >= 3, 120, "refusals to be counted")
    assert proc.proc.poll() is None
    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(10) == 0

    # with a limit: backoff, then exit 3 with a giving-up line; still one refusal line
    again = _attach(ledger, server, sa, "--auth-failures", "3")
    assert again.proc.wait(120) == 3
    again.wait_for(_has("stopped"), 10, "the stopped line")
    assert sum('"event": "unauthorized"' in x for x in again.lines) == 1
    assert any('"event": "giving-up"' in x for x in again.lines)
    assert "kubectl create token" in next(x for x in again.lines if '"event": "unauthorized"' in x)
