"""Reads served by a standby (``PODLEDGER_READ_DATABASE_URL``), read-your-writes through the
commit position a write returns, and the position of every answer (``ledger.replica``).

The standby's replay is paused (``pg_wal_replay_pause``) to make it stale on purpose: a read
that names a write's commit position then waits (bounded) and is answered by the primary, a
read that names none is answered by the stale standby and says so by its position."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from api.http.routes.dashboard import COOKIE
from ledger import db
from ledger.replica import lsn_int
from tests.http.conftest import TOKEN_SPEC, TOKENS, auth
from tests.replication.cluster import Cluster

PODLEDGER = str(Path(sys.executable).parent / "podledger")
NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8', memory: 8Gi, pods: 110}}\n"


def pod(name: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
    )


def _apply(client: TestClient, body: str):  # type: ignore[no-untyped-def]
    return client.post(
        "/podledger/v1/apply", content=body, headers={**auth("writer"), "Content-Type": "application/yaml"}
    )


def _replay(cluster: Cluster, pause: bool) -> None:
    with cluster.standby.connect() as c:
        c.execute("SELECT pg_wal_replay_pause()" if pause else "SELECT pg_wal_replay_resume()")


@pytest.mark.timeout(90)
def test_reads_from_the_standby_with_read_your_writes(cluster, ledger_url, monkeypatch, tmp_path):
    monkeypatch.setenv("PODLEDGER_READ_DATABASE_URL", cluster.standby.url("podledger"))
    monkeypatch.setenv("PODLEDGER_READ_WAIT", "0.5")
    database = db.get_database(ledger_url)
    with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as client:
        # a write says where it committed; a read naming that position is served by the standby
        w = _apply(client, NODE)
        assert w.status_code == 200, w.text
        node_lsn = w.headers["X-Podledger-Commit-LSN"]
        r = client.get(
            "/podledger/v1/nodes/-/n1", headers={**auth("reader"), "X-Podledger-Min-LSN": node_lsn}
        )
        assert r.status_code == 200, r.text
        assert r.headers["X-Podledger-Served-By"] == "standby"
        assert lsn_int(r.headers["X-Podledger-Read-LSN"]) >= lsn_int(node_lsn)

        # the standby stops replaying: it is stale from here on
        _replay(cluster, pause=True)
        try:
            w = _apply(client, pod("p1"))
            assert w.status_code == 200, w.text
            pod_lsn = w.headers["X-Podledger-Commit-LSN"]
            assert lsn_int(pod_lsn) > lsn_int(node_lsn)
            # no position named: the standby answers, as of a position before the write
            stale = client.get("/podledger/v1/pods/default/p1", headers=auth("reader"))
            assert stale.status_code == 404, stale.text
            assert stale.headers["X-Podledger-Served-By"] == "standby"
            assert lsn_int(stale.headers["X-Podledger-Read-LSN"]) < lsn_int(pod_lsn)
            # the writer's own read: the standby has not replayed it within the wait -> the primary
            own = client.get(
                "/podledger/v1/pods/default/p1", headers={**auth("reader"), "X-Podledger-Min-LSN": pod_lsn}
            )
            assert own.status_code == 200, own.text
            assert own.headers["X-Podledger-Served-By"] == "primary"
            assert lsn_int(own.headers["X-Podledger-Read-LSN"]) >= lsn_int(pod_lsn)
            # the Kubernetes API's GET too
            k8s = client.get(
                "/api/v1/namespaces/default/pods/p1",
                headers={**auth("reader"), "X-Podledger-Min-LSN": pod_lsn},
            )
            assert k8s.status_code == 200, k8s.text
            assert k8s.headers["X-Podledger-Served-By"] == "primary"
        finally:
            _replay(cluster, pause=False)

        # replay resumed: the standby catches up and serves the same read
        for path in (
            "/podledger/v1/pods/default/p1",
            "/podledger/v1/pods/default/p1/history",
            "/podledger/v1/pods/default/p1/explain",
            "/podledger/v1/pods",
            "/podledger/v1/events?limit=5",
            "/podledger/v1/state",
            "/api/v1/namespaces/default/pods/p1",
            "/api/v1/pods",
            "/api/v1/pods?watch=true&timeoutSeconds=1",  # a watch on the standby (it polls)
        ):
            r = client.get(path, headers={**auth("reader"), "X-Podledger-Min-LSN": pod_lsn})
            assert r.status_code == 200, (path, r.text)
            assert r.headers["X-Podledger-Served-By"] == "standby", path
            assert lsn_int(r.headers["X-Podledger-Read-LSN"]) >= lsn_int(pod_lsn), path
            assert '"p1"' in r.text, (path, r.text[:300])

        # the dashboard works against the standby
        client.cookies.set(COOKIE, TOKENS["reader"])
        for path in ("/", "/charts", "/log"):
            r = client.get(path)
            assert r.status_code == 200, (path, r.text[:500])
            assert r.headers["X-Podledger-Served-By"] == "standby", path
        client.cookies.clear()

        # the CLI's reads: served by the standby, saying so on stderr
        env = dict(os.environ, PODLEDGER_DATABASE_URL=ledger_url, PODLEDGER_MIN_LSN=pod_lsn)
        for args, shown in (
            (["get", "pods", "p1"], "p1"),
            (["history", "pod", "default/p1"], "PodCreated"),
            (["explain", "pod", "default/p1"], "p1"),
        ):
            res = subprocess.run([PODLEDGER, *args], capture_output=True, text=True, timeout=60, env=env)
            assert res.returncode == 0, (args, res.stdout + res.stderr)
            assert shown in res.stdout, (args, res.stdout)
            assert "served by the standby as of WAL position" in res.stderr, (args, res.stderr)

        # a CLI write says where it committed; a read naming it sees the write
        (tmp_path / "p2.yaml").write_text(pod("p2"))
        res = subprocess.run(
            [PODLEDGER, "apply", "-f", str(tmp_path / "p2.yaml")],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert res.returncode == 0, res.stdout + res.stderr
        lsn = res.stderr.split("committed at WAL position ", 1)[1].split(";", 1)[0]
        res = subprocess.run(
            [PODLEDGER, "get", "pods", "p2"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(env, PODLEDGER_MIN_LSN=lsn),
        )
        assert res.returncode == 0 and "p2" in res.stdout, res.stdout + res.stderr
        assert "as of WAL position" in res.stderr, res.stderr

        # without a read URL the primary answers, and says so
        monkeypatch.delenv("PODLEDGER_READ_DATABASE_URL")
        r = client.get("/podledger/v1/nodes/-/n1", headers=auth("reader"))
        assert r.status_code == 200
        assert r.headers["X-Podledger-Served-By"] == "primary"
        assert lsn_int(r.headers["X-Podledger-Read-LSN"]) >= lsn_int(pod_lsn)

        # a malformed position is refused, naming the header
        bad = client.get("/podledger/v1/pods", headers={**auth("reader"), "X-Podledger-Min-LSN": "yesterday"})
        assert bad.status_code == 400
        assert "X-Podledger-Min-LSN" in bad.json()["message"]
