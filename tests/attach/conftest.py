"""Fixtures of the ``attach`` tests: "the cluster" is a second ``podledger serve`` (its own
database, examples/cluster applied, its own worker binding the pods), reached only through its
Kubernetes API; the ledger ``attach`` writes to is a fresh database."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ledger import db
from ledger import sql as q
from ledger.database import Database
from tests.conftest import _admin, new_database
from tests.k8s.conftest import (
    EXAMPLES,
    KUBECTL,
    PODLEDGER,
    ROOT,
    TOKENS,
    LineReader,
    Server,
    _make_cert,
    free_port,
)

pytest.importorskip("kubernetes", reason="attach is built on the kubernetes client")

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


class Cluster(Server):
    """A ``podledger serve`` standing in for a cluster (``extra_env`` reaches its server)."""

    extra_env: dict[str, str] = {}

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, PODLEDGER_DATABASE_URL=self.db_url, PODLEDGER_TOKENS=TOKENS, **self.extra_env)


def start_cluster(
    server_url: str, tmp: Path, extra_env: dict[str, str] | None = None, examples: bool = True
) -> Cluster:
    url = new_database(server_url)
    database = db.get_database(url, migrate_on_start=False)
    cert, key = _make_cert(tmp)
    port = free_port()
    srv = Cluster(f"https://127.0.0.1:{port}", url, database, tmp, port, cert, key)
    srv.extra_env = dict(extra_env or {})
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
    if examples:
        subprocess.run(
            [PODLEDGER, "apply", "-f", str(EXAMPLES)], env=srv.env, cwd=ROOT, check=True, capture_output=True
        )
    srv.start()
    return srv


def stop_cluster(srv: Server, server_url: str) -> None:
    for p in srv.procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)
    srv.stop()
    db.dispose(srv.db_url)
    drop(server_url, srv.db_url)


def drop(server_url: str, url: str) -> None:
    with psycopg.connect(_admin(server_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')


@pytest.fixture(scope="module")
def cluster(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    srv = start_cluster(server_url, tmp_path_factory.mktemp("cluster"))
    srv.ensure_worker()
    try:
        yield srv
    finally:
        stop_cluster(srv, server_url)


class Ledger:
    """The database ``attach`` writes to, and ``attach`` processes on it."""

    def __init__(self, url: str, tmp: Path) -> None:
        self.url = url
        self.database: Database = db.get_database(url, migrate_on_start=False)
        self.tmp = tmp
        self.procs: list[subprocess.Popen[str]] = []

    def attach(self, kubeconfig: Path, *args: str, env: dict[str, str] | None = None) -> LineReader:
        p = subprocess.Popen(
            [PODLEDGER, "attach", "--kubeconfig", str(kubeconfig), "--progress-every", "0.2", *args],
            env=dict(os.environ, PODLEDGER_DATABASE_URL=self.url, **(env or {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
        )
        self.procs.append(p)
        return LineReader(p)

    def worker(self, name: str = "podledger-scheduler") -> None:
        """``podledger worker`` on this ledger, stopped with the fixture."""
        p = subprocess.Popen(
            [PODLEDGER, "worker", "--interval", "0.2", "--name", name],
            env=dict(os.environ, PODLEDGER_DATABASE_URL=self.url),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=(self.tmp / "worker.log").open("ab"),
        )
        self.procs.append(p)  # type: ignore[arg-type]

    def count(self, where: str = "TRUE", **params: Any) -> int:
        """Events matching ``where`` (psycopg placeholders ``%(name)s`` for ``params``)."""
        with self.database.connect() as c:
            return int(q.scalar(c, f"SELECT count(*) FROM events WHERE {where}", params or None))

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.database.connect() as c:
            return c.execute(sql, params or None).fetchall()

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait(10)
        db.dispose(self.url)


@pytest.fixture()
def ledger(server_url: str, tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(new_database(server_url), tmp_path)
    try:
        yield led
    finally:
        led.close()
        drop(server_url, led.url)
