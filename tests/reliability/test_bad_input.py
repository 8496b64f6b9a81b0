"""Bad input never makes the API answer 5xx: each request below gets the 4xx it deserves, with
the offending field named, appends nothing, and the server stays healthy afterwards.

Covers issue 15 item 4: JSON nesting depth, body size (enforced while reading, so a huge
chunked upload is refused early), integers over 64 bits, NUL and control characters in
namespace, name and cursor, and 503 + Retry-After while the database is down.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from api.http.limits import MAX_BODY
from ledger import db
from ledger.database import Database
from tests.http.conftest import TOKEN_SPEC, TOKENS, auth, count_events
from tests.reliability._served import served
from tests.reliability.conftest import PODLEDGER
from tests.reliability.test_pg_restart import Server, private_server  # noqa: F401

NODE = '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, %s}'


@pytest.fixture()
def client(database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        yield c


def _healthy(client: TestClient) -> None:
    r = client.get("/podledger/v1/nodes", headers=auth("reader"))
    assert r.status_code == 200, r.text


def _apply(client: TestClient, body: str | bytes, ctype: str = "application/json"):  # type: ignore[no-untyped-def]
    return client.post("/podledger/v1/apply", content=body, headers={**auth("writer"), "Content-Type": ctype})


@pytest.mark.parametrize("depth", [200, 5000, 100_000])
@pytest.mark.parametrize("shape", ["json", "yaml"])
def test_deep_nesting_is_422(client: TestClient, database: Database, depth: int, shape: str) -> None:
    inner = "[" * depth + "]" * depth
    body = NODE % f'"spec": {{"x": {inner}}}' if shape == "json" else f"a: {inner}\n"
    before = count_events(database)
    r = _apply(client, body, "application/json" if shape == "json" else "application/yaml")
    assert r.status_code == 422, r.text
    assert "nest" in r.json()["message"]
    assert count_events(database) == before
    _healthy(client)


def test_big_integer_names_the_field(client: TestClient, database: Database) -> None:
    before = count_events(database)
    for value in ("99999999999999999999999", '"99999999999999999999999"', "-99999999999999999999999"):
        body = NODE % f'"status": {{"allocatable": {{"cpu": {value}, "memory": "1Gi"}}}}'
        r = _apply(client, body)
        assert r.status_code == 422, (value, r.text)
        named = [f"{d['field']} {d['message']}" for d in r.json()["details"]]
        assert any("allocatable" in n and "cpu" in n for n in named), (value, r.json())
    r = _apply(client, NODE % '"spec": {"big": 123456789012345678901234567890}')
    assert r.status_code == 422, r.text
    assert any(d["field"] == "spec.big" for d in r.json()["details"]), r.json()
    assert count_events(database) == before
    _healthy(client)


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b", "\x7f"])
def test_control_characters_in_the_manifest(client: TestClient, database: Database, char: str) -> None:
    before = count_events(database)
    import json

    for field, doc in (
        ("metadata.name", {"metadata": {"name": f"n{char}1"}}),
        ("metadata.namespace", {"metadata": {"name": "p", "namespace": f"a{char}b"}}),
        ("metadata.labels.app", {"metadata": {"name": "n1", "labels": {"app": f"x{char}"}}}),
    ):
        kind = "Pod" if "namespace" in field else "Node"
        manifest = {"apiVersion": "v1", "kind": kind, **doc}
        if kind == "Pod":
            manifest["spec"] = {"containers": [{"name": "c"}]}
        r = _apply(client, json.dumps(manifest))
        assert r.status_code == 422, (field, r.text)
        assert any(d["field"] == field for d in r.json()["details"]), (field, r.json())
    assert count_events(database) == before
    _healthy(client)


@pytest.mark.parametrize("char", ["%00", "%01", "%1F", "%7F"])
def test_control_characters_in_path_and_query(client: TestClient, char: str) -> None:
    h = auth("reader")
    for url, field in (
        (f"/podledger/v1/pods/a{char}b/p", "namespace"),
        (f"/podledger/v1/pods/default/p{char}", "name"),
        (f"/podledger/v1/pods?namespace=a{char}b", "namespace"),
        (f"/podledger/v1/pods?cursor=a{char}b", "cursor"),
        (f"/podledger/v1/events?stream=a{char}b", "stream"),
    ):
        r = client.get(url, headers=h)
        assert 400 <= r.status_code < 500, (url, r.status_code, r.text)
        assert field in r.text, (url, r.text)
    r = client.delete(f"/podledger/v1/pods/default/p{char}", headers=auth("writer"))
    assert 400 <= r.status_code < 500, r.text
    _healthy(client)


def test_bad_cursor_is_400(client: TestClient) -> None:
    import base64

    for raw in (b"\x00\x00", b'["a\\u0000", "b"]', b"[1, 2]", b"not json"):
        cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        r = client.get(f"/podledger/v1/pods?cursor={cursor}", headers=auth("reader"))
        assert r.status_code == 400, (raw, r.text)
        assert "cursor" in r.json()["message"]
    _healthy(client)


# ------------------------------------------------------------------------- body size, streamed


def _raw_response(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(30)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_huge_chunked_body_is_refused_while_reading(database: Database) -> None:
    """300 MB sent chunked (no Content-Length): the server answers 413 after reading just over
    the 3 MiB limit, long before the client has sent everything, and never buffers the rest."""
    before = count_events(database)
    chunk = b"[" * 2**20
    with served(create_app(database, TOKEN_SPEC)) as (host, port):
        with socket.create_connection((host, port)) as sock:
            sock.sendall(
                b"POST /podledger/v1/apply HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {TOKENS['writer']}\r\n".encode()
                + b"Transfer-Encoding: chunked\r\n\r\n"
            )
            sent = 0
            answered = False
            for _ in range(300):
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:
                    answered = True
                    break
                try:
                    sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                except (BrokenPipeError, ConnectionResetError):
                    answered = True
                    break
                sent += len(chunk)
            response = _raw_response(sock)
        assert answered, "the server read all 300 MB without answering"
        assert response.startswith(b"HTTP/1.1 413"), response[:200]
        assert sent < 100 * 2**20, f"the client could send {sent >> 20} MiB before the answer"
        # a declared Content-Length over the limit is refused before any body is sent
        with socket.create_connection((host, port)) as sock:
            sock.sendall(
                b"POST /podledger/v1/apply HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {TOKENS['writer']}\r\n".encode()
                + f"Content-Length: {300 * 2**20}\r\n\r\n".encode()
            )
            assert _raw_response(sock).startswith(b"HTTP/1.1 413")
        # the Kubernetes-compatible API has the same limit
        with socket.create_connection((host, port)) as sock:
            sock.sendall(
                b"POST /api/v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {TOKENS['writer']}\r\n".encode()
                + b"Transfer-Encoding: chunked\r\n\r\n"
            )
            try:
                for _ in range(40):
                    sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                pass
            assert _raw_response(sock).startswith(b"HTTP/1.1 413")
    assert count_events(database) == before


def test_a_body_just_over_the_limit_is_413(client: TestClient, database: Database) -> None:
    before = count_events(database)
    r = _apply(client, b" " * (MAX_BODY + 1))
    assert r.status_code == 413, r.text
    assert "3 MiB" in r.json()["message"]
    assert count_events(database) == before
    _healthy(client)


# ------------------------------------------------------------------------- database down


@pytest.mark.timeout(120)
def test_database_down_is_503_with_retry_after(private_server: Server) -> None:  # noqa: F811
    url = db.with_database(private_server.uri, "podledger")
    database = db.get_database(url)  # creates and migrates the database
    with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        _healthy(c)
        private_server.stop("immediate")
        for method, path, kw in (
            ("GET", "/podledger/v1/nodes", {"headers": auth("reader")}),
            ("GET", "/podledger/v1/pods/default/p", {"headers": auth("reader")}),
            ("POST", "/podledger/v1/apply", {"headers": auth("writer"), "content": NODE % '"spec": {}'}),
            ("GET", "/api/v1/nodes", {"headers": auth("reader")}),
        ):
            r = c.request(method, path, **kw)
            assert r.status_code == 503, (path, r.status_code, r.text)
            assert r.headers.get("Retry-After") == "5", (path, r.headers)
        assert c.get("/readyz").status_code == 503
        private_server.start()
        deadline = time.monotonic() + 30
        while c.get("/podledger/v1/nodes", headers=auth("reader")).status_code != 200:
            assert time.monotonic() < deadline, "the API did not recover after the database came back"
            time.sleep(0.1)
    db.dispose_all()


# ------------------------------------------------------------------------- the CLI


def _cli(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [PODLEDGER, *args], input=stdin, capture_output=True, env=env or dict(os.environ), timeout=120
    )


def _one_line_error(res: subprocess.CompletedProcess[bytes], *words: str) -> None:
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 1, (res.returncode, err)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    # one error line (apply adds its usual "nothing applied: N error(s)" summary)
    assert lines and lines[0].startswith("error: "), err
    assert all(line.startswith("nothing applied") for line in lines[1:]), err
    for w in words:
        assert w in lines[0], (w, err)


def test_cli_bad_files_and_no_database(db_url: str, database: Database, tmp_path: Path) -> None:
    before = count_events(database)
    deep = tmp_path / "deep.json"
    deep.write_text(NODE % f'"spec": {{"x": {"[" * 100_000 + "]" * 100_000}}}')
    _one_line_error(_cli("apply", "-f", str(deep)), "nested")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"apiVersion: v1\nkind: Node\nmetadata: {name: caf\xe9}\n")
    _one_line_error(_cli("apply", "-f", str(latin)), "UTF-8")
    _one_line_error(_cli("apply", "-f", "-", stdin=latin.read_bytes()), "UTF-8")
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
    (folder / "b.yaml").write_bytes(latin.read_bytes())
    _one_line_error(_cli("apply", "-f", str(folder)), "UTF-8")
    assert count_events(database) == before
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PODLEDGER_DATABASE_URL=f"postgresql://u:p@127.0.0.1:{port}/podledger")
    _one_line_error(_cli("get", "nodes", env=env), "database")
    _one_line_error(_cli("apply", "-f", str(folder / "a.yaml"), env=env), "database")


def test_an_object_over_the_event_size_limit_is_422(client: TestClient, database: Database) -> None:
    """A manifest under the body limit whose event would exceed the ledger's 1 MiB payload limit
    (a huge annotation): 422 naming the limit, nothing appended, the server healthy."""
    before = count_events(database)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big", "annotations": {"a": "x" * (1 << 20)}},
        "spec": {"containers": [{"name": "c"}]},
    }
    body = json.dumps(pod)
    r = _apply(client, body)
    assert r.status_code == 422, r.text
    assert "1 MiB" in r.json()["message"]
    assert count_events(database) == before
    _healthy(client)
