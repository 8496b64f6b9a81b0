"""Fixtures of the Kubernetes-API tests: a real ``podledger serve`` over https on a fresh
database, kubeconfigs from ``podledger kubeconfig``, and the real kubectl binary."""

from __future__ import annotations

import os
import queue
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ledger import db
from ledger import sql as q
from ledger.database import Database
from tests.conftest import _admin, new_database
from tests.reliability.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cluster"
PODLEDGER = str(Path(sys.executable).with_name("podledger"))
KUBECTL = shutil.which("kubectl")
TOKENS = (
    "reader=reader-token-k8s-0123456789,writer=writer-token-k8s-0123456789,admin=admin-token-k8s-0123456789"
)

needs_kubectl = pytest.mark.skipif(
    KUBECTL is None,
    reason="kubectl is not installed: the Kubernetes-API acceptance tests run the real binary",
)


WORKER_NAME = "k8s-test-worker"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    db_url: str
    database: Database
    tmp: Path
    port: int
    cert: Path
    key: Path
    proc: subprocess.Popen[bytes] | None = None
    kubeconfigs: dict[str, Path] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    worker: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, PODLEDGER_DATABASE_URL=self.db_url, PODLEDGER_TOKENS=TOKENS)

    def start(self) -> None:
        log = (self.tmp / "serve.log").open("ab")
        self.proc = subprocess.Popen(
            [
                PODLEDGER,
                "serve",
                "--port",
                str(self.port),
                "--tls-cert-file",
                str(self.cert),
                "--tls-private-key-file",
                str(self.key),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        ctx = ssl.create_default_context(cafile=str(self.cert))

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"podledger serve exited: {self.log()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/version", context=ctx, timeout=2) as r:
                    return bool(r.status == 200)
            except OSError:
                return False

        wait_until(up, 60, "podledger serve to answer /version")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def log(self) -> str:
        p = self.tmp / "serve.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def kubectl(
        self, *args: str, role: str = "writer", timeout: float = 60, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        res = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfigs[role]), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )
        if check and res.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr}\n{res.stdout}"
            )
        return res

    def popen_kubectl(self, *args: str, role: str = "writer") -> LineReader:
        assert KUBECTL is not None
        p = subprocess.Popen(
            [KUBECTL, "--kubeconfig", str(self.kubeconfigs[role]), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
        )
        self.procs.append(p)  # type: ignore[arg-type]
        return LineReader(p)

    def ensure_worker(self) -> subprocess.Popen[bytes]:
        """The module's ``podledger worker`` (started on first use)."""
        if self.worker is not None and self.worker.poll() is None:
            return self.worker
        p = subprocess.Popen(
            [PODLEDGER, "worker", "--interval", "0.2", "--name", WORKER_NAME],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=(self.tmp / "worker.log").open("ab"),
        )
        self.procs.append(p)
        self.worker = p
        return p

    def inputs(self) -> int:
        """Events not written by the test's worker (which keeps retrying unschedulable gangs of
        the example cluster in the background): what a client's request can have appended."""
        return self.count("coalesce(meta->>'actor', '') <> %(w)s", w=WORKER_NAME)

    def count(self, where: str = "TRUE", **params: Any) -> int:
        """Events matching ``where`` (psycopg placeholders ``%(name)s`` for ``params``)."""
        with self.database.connect() as c:
            return int(q.scalar(c, f"SELECT count(*) FROM events WHERE {where}", params or None))

    def client(self, role: str = "writer") -> Any:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(str(self.kubeconfigs[role]), client_configuration=cfg)
        return client.ApiClient(cfg)


class LineReader:
    """Lines of a running process, read by a thread; ``wait_for`` waits on output, not on time."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def wait_for(self, cond: Callable[[list[str]], bool], timeout: float, what: str) -> list[str]:
        deadline = time.monotonic() + timeout
        while not cond(self.lines):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"timed out waiting for {what}; output so far:\n" + "\n".join(self.lines)
                )
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                if not cond(self.lines):
                    raise AssertionError(
                        f"the process ended before {what}; output:\n" + "\n".join(self.lines)
                    )
                break
            self.lines.append(line)
        return self.lines

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def _make_cert(tmp: Path) -> tuple[Path, Path]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make the test server's TLS certificate")
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture(scope="module")
def k8s(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A running ``podledger serve --tls-...`` on its own database, shared by a module's tests
    (each test uses its own namespaces)."""
    tmp = tmp_path_factory.mktemp("k8s")
    url = new_database(server_url)
    database = db.get_database(url, migrate_on_start=False)
    cert, key = _make_cert(tmp)
    port = free_port()
    srv = Server(f"https://127.0.0.1:{port}", url, database, tmp, port, cert, key)
    for role in ("reader", "writer"):
        out = subprocess.run(
            [PODLEDGER, "kubeconfig", "--role", role, "--server", srv.url, "--tls-cert-file", str(cert)],
            env=srv.env,
            capture_output=True,
            text=True,
            check=True,
        )
        path = tmp / f"{role}.kubeconfig"
        path.write_text(out.stdout)
        srv.kubeconfigs[role] = path
    srv.start()
    try:
        yield srv
    finally:
        for p in srv.procs:
            if p.poll() is None:
                p.kill()
            p.wait(10)
        srv.stop()
        db.dispose(url)
        with psycopg.connect(_admin(server_url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')
