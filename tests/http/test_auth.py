"""Auth: bearer tokens in three roles, 401/403, constant-time comparison, no token in logs,
the dashboard's sign-in, and ``podledger serve`` refusing to start without tokens."""

from __future__ import annotations

import hmac
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from api.http import auth as auth_mod
from api.http.app import create_app
from api.http.auth import COOKIE, TokenConfigError, parse_tokens
from tests.http.conftest import TOKEN_SPEC, TOKENS, auth, count_events

ROOT = Path(__file__).resolve().parents[2]
PODLEDGER = str(Path(sys.executable).parent / "podledger")
NODE = '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}'


def post_node(client: TestClient, headers: dict[str, str]) -> httpx.Response:
    return client.post(
        "/podledger/v1/apply", content=NODE, headers={"Content-Type": "application/json", **headers}
    )


def test_no_token_or_a_wrong_one_is_401(client, database):
    for headers in (
        {},
        {"Authorization": "Bearer nope-nope-nope"},
        {"Authorization": f"Basic {TOKENS['admin']}"},
    ):
        r = client.get("/podledger/v1/pods", headers=headers)
        assert r.status_code == 401, headers
        assert r.json()["error"] == "unauthorized" and r.headers["WWW-Authenticate"].startswith("Bearer")
        assert post_node(client, headers).status_code == 401
    assert count_events(database) == 0


def test_reader_may_read_but_not_write(client, database):
    assert client.get("/podledger/v1/pods", headers=auth("reader")).status_code == 200
    r = post_node(client, auth("reader"))
    assert r.status_code == 403 and r.json()["error"] == "forbidden" and "writer" in r.json()["message"]
    assert client.delete("/podledger/v1/nodes/-/n1", headers=auth("reader")).status_code == 403
    assert client.post("/podledger/v1/whatif", json={}, headers=auth("reader")).status_code == 403
    assert count_events(database) == 0
    assert post_node(client, auth("writer")).status_code == 200
    assert client.delete("/podledger/v1/nodes/-/n1", headers=auth("admin")).status_code == 200


def test_health_and_docs_need_no_token_metrics_does(client, database):
    for path in ("/healthz", "/readyz", "/docs", "/openapi.json"):
        assert client.get(path).status_code == 200, path
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=auth("reader")).status_code == 200
    with TestClient(create_app(database, TOKEN_SPEC, metrics_public=True)) as public:
        assert public.get("/metrics").status_code == 200


def test_several_tokens_per_role_and_named_actors(database):
    spec = "reader=r-token-0000000001,writer=w-token-0000000001,writer=w-token-0000000002,writer:ci-bot=w-token-0000000003"
    with TestClient(create_app(database, spec)) as c:
        for tok, actor in (
            ("w-token-0000000001", "writer"),
            ("w-token-0000000002", "writer#2"),
            ("w-token-0000000003", "writer:ci-bot"),
        ):
            node = NODE.replace('"n1"', f'"n-{actor.replace(":", "-").replace("#", "-")}"')
            r = c.post("/podledger/v1/apply", content=node, headers={"Authorization": f"Bearer {tok}"})
            assert r.status_code == 200, r.text
            ev = c.get(
                "/podledger/v1/events",
                params={"after": r.json()["events"][0]["position"] - 1, "limit": 1},
                headers={"Authorization": "Bearer r-token-0000000001"},
            ).json()["items"][0]
            assert ev["meta"]["actor"] == actor


def test_token_settings_are_validated_without_echoing_tokens():
    for bad in (
        "reader",
        "guest=abcdefghijklmnop",
        "reader=short",
        "reader=same-token-00001,admin=same-token-00001",
    ):
        with pytest.raises(TokenConfigError) as exc:
            parse_tokens(bad)
        for secret in ("abcdefghijklmnop", "short", "same-token-00001"):
            assert secret not in str(exc.value)
    table = parse_tokens("reader=abcdefghijklmnop, admin=klmnopqrstuvwxyz ,")
    assert len(table.entries) == 2 and "abcdefghijklmnop" not in repr(table)
    assert table.lookup("klmnopqrstuvwxyz").role == "admin" and table.lookup("klmnopqrstuvwxy") is None
    assert not parse_tokens("") and not parse_tokens(None)


def test_every_configured_token_is_compared_in_constant_time(monkeypatch):
    table = parse_tokens("reader=token-aaaaaaaaaa1,writer=token-bbbbbbbbbb2,admin=token-cccccccccc3")
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth_mod.hmac, "compare_digest", spy)
    assert table.lookup("token-aaaaaaaaaa1").role == "reader"  # matches the first entry...
    assert len(calls) == 3  # ...and still compares against every entry
    calls.clear()
    assert table.lookup("wrong") is None and len(calls) == 3


def test_tokens_never_reach_the_log(client, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr("api.http.routes.objects._apply_sync", lambda *a, **k: 1 / 0)  # force a logged 500
    r = post_node(client, auth("writer"))
    assert r.status_code == 500 and r.json()["error"] == "internal"
    client.get("/podledger/v1/pods", headers=auth("reader"))
    client.get("/podledger/v1/pods", headers={"Authorization": "Bearer not-a-real-token-xyz"})
    client.post(
        "/login",
        content=f"token={TOKENS['admin']}&next=/",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert "unhandled error on POST /podledger/v1/apply" in caplog.text
    for secret in (*TOKENS.values(), "not-a-real-token-xyz"):
        assert secret not in caplog.text


def test_dashboard_signs_in_with_a_token_in_an_httponly_cookie(client):
    r = client.get("/charts", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login?next=%2Fcharts"
    assert "Sign in" in client.get("/login").text
    bad = client.post("/login", data={"token": "wrong", "next": "/charts"}, follow_redirects=False)
    assert bad.status_code == 401 and "not valid" in bad.text
    ok = client.post("/login", data={"token": TOKENS["reader"], "next": "/charts"}, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/charts"
    cookie = ok.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get("/charts").status_code == 200
    # an open redirect is refused
    evil = client.post(
        "/login", data={"token": TOKENS["reader"], "next": "//evil.example"}, follow_redirects=False
    )
    assert evil.headers["location"] == "/"
    client.cookies.set(COOKIE, "forged-cookie-value")
    assert client.get("/", follow_redirects=False).status_code == 303


def test_an_app_without_tokens_refuses_everything_unless_insecure_local(database):
    with TestClient(create_app(database, "")) as c:
        assert c.get("/podledger/v1/pods").status_code == 401
        assert c.get("/", follow_redirects=False).status_code == 303
    with TestClient(create_app(database, "", insecure_local=True)) as c:
        r = c.post("/podledger/v1/apply", content=NODE)
        assert r.status_code == 200
        assert (
            c.get("/podledger/v1/events", params={"limit": 1}).json()["items"][0]["meta"]["actor"] == "local"
        )
        assert c.get("/").status_code == 200


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PODLEDGER, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_refuses_to_start_without_tokens(db_url):
    env = {k: v for k, v in os.environ.items() if k != "PODLEDGER_TOKENS"}
    r = _cli("serve", env=env)
    assert r.returncode == 1 and "refusing to start" in r.stderr and "--insecure-local" in r.stderr
    r = _cli("serve", "--insecure-local", "--host", "0.0.0.0", env=env)
    assert r.returncode == 1 and "127.0.0.1 only" in r.stderr
    r = _cli("serve", env={**env, "PODLEDGER_TOKENS": "reader=short"})
    assert (
        r.returncode == 1
        and "at least 16 characters" in r.stderr
        and "short" not in r.stderr.replace("at least", "")
    )


@pytest.mark.parametrize("mode", ["tokens", "insecure-local"])
def test_serve_answers_on_loopback(db_url, mode):
    env = {k: v for k, v in os.environ.items() if k != "PODLEDGER_TOKENS"}
    args = ["serve", "--port", str(port := _free_port()), "--log-level", "info"]
    if mode == "tokens":
        env["PODLEDGER_TOKENS"] = f"reader={TOKENS['reader']}"
    else:
        args.append("--insecure-local")
    proc = subprocess.Popen(
        [PODLEDGER, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert r.status_code == 200
        pods = httpx.get(f"http://127.0.0.1:{port}/podledger/v1/pods", timeout=5)
        assert pods.status_code == (401 if mode == "tokens" else 200)
        if mode == "tokens":
            ok = httpx.get(f"http://127.0.0.1:{port}/podledger/v1/pods", headers=auth("reader"), timeout=5)
            assert ok.status_code == 200
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert "GET /podledger/v1/pods" in out + err  # the access log is on...
    assert TOKENS["reader"] not in out + err  # ...and shows no token


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_failed_tokens_are_throttled_per_address(database):
    clock = FakeClock()
    throttle = auth_mod.AuthThrottle(limit=5, window=60, clock=clock)
    app = create_app(database, TOKEN_SPEC, throttle=throttle)
    wrong = {"Authorization": "Bearer not-a-valid-token-at-all"}
    with TestClient(app, raise_server_exceptions=False) as c:  # the test client's address: "testclient"
        assert c.get("/podledger/v1/nodes", headers=auth("reader")).status_code == 200  # a user here
        for _ in range(5):
            assert c.get("/podledger/v1/nodes", headers=wrong).status_code == 401
        clock.now += 10
        r = c.get("/podledger/v1/nodes", headers=wrong)
        assert r.status_code == 429 and r.json()["error"] == "too_many_requests", r.text
        assert r.headers["Retry-After"] == "50"
        # the right token that already worked from this address is never penalised for the
        # failures of someone else behind it, on both APIs and the dashboard
        for _ in range(3):
            assert c.get("/podledger/v1/nodes", headers=auth("reader")).status_code == 200
            assert c.get("/api/v1/nodes", headers=auth("reader")).status_code == 200
        # a token not yet seen from this address is not checked while it is throttled (guessing
        # stops), on the Kubernetes-compatible API too
        assert c.get("/podledger/v1/nodes", headers=auth("writer")).status_code == 429
        r = c.get("/api/v1/nodes", headers=auth("writer"))
        assert r.status_code == 429 and r.headers["Retry-After"] == "50", r.text
        # another address is not affected
        assert throttle.retry_after("192.0.2.7") is None
        clock.now += 50  # the oldest failure leaves the window
        assert c.get("/podledger/v1/nodes", headers=auth("writer")).status_code == 200
        assert c.get("/podledger/v1/nodes", headers=wrong).status_code == 401
        assert c.get("/podledger/v1/nodes", headers=auth("reader")).status_code == 200


def test_admin_routes_need_the_admin_role(client, database):
    for role in ("reader", "writer"):
        r = client.post("/podledger/v1/admin/projections/rebuild", headers=auth(role))
        assert r.status_code == 403 and "admin" in r.json()["message"], r.text
        assert client.post("/podledger/v1/admin/checkpoint", headers=auth(role)).status_code == 403
    assert client.post("/podledger/v1/admin/projections/rebuild").status_code == 401
    assert post_node(client, auth("writer")).status_code == 200
    r = client.post("/podledger/v1/admin/projections/rebuild", headers=auth("admin"))
    assert r.status_code == 200 and r.json()["refolded"]["objects"] >= 1, r.text
    assert client.get("/podledger/v1/nodes/-/n1", headers=auth("reader")).status_code == 200


def test_tokens_shorter_than_16_characters_are_refused():
    with pytest.raises(TokenConfigError, match="at least 16 characters"):
        parse_tokens("reader=fifteen-chars-x")  # 15
    assert parse_tokens("reader=sixteen-chars-xx")  # 16
