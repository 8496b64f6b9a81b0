"""Issue 37 item 5: secrets and sessions.

- ``podledger db shell`` hands psql the password in its environment, never in argv;
- ``POST /login`` and the dashboard cookie are throttled per client like bearer tokens, and the
  right token that already worked from a client keeps working while others fail there;
- the client behind a trusted proxy is the forwarded one (``PODLEDGER_TRUSTED_PROXIES``), and a
  forged ``X-Forwarded-For`` from anyone else changes nothing;
- security headers (CSP, X-Frame-Options, nosniff; HSTS over https);
- ``/readyz`` is 503 when the ledger cannot be written (read-only transactions, no INSERT).
"""

from __future__ import annotations

import hashlib
import os
import subprocess

import psycopg
import pytest
from fastapi.testclient import TestClient

from api.http import auth as auth_mod
from api.http.app import create_app
from api.http.auth import COOKIE, client_address, parse_proxies
from ledger import db
from ledger.database import Database
from tests.http.conftest import TOKEN_SPEC, TOKENS, auth
from tests.reliability.conftest import PODLEDGER


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _login(c: TestClient, token: str, **kw):  # type: ignore[no-untyped-def]
    return c.post(
        "/login",
        content=f"token={token}&next=/".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", **kw.pop("headers", {})},
        follow_redirects=False,
        **kw,
    )


def test_db_shell_passes_the_password_in_the_environment(db_url: str) -> None:
    secret = "s3cret-reporting-pw"
    env = dict(os.environ, PODLEDGER_DATABASE_URL=db_url, PODLEDGER_REPORTING_PASSWORD=secret)
    # psql runs the shell command; its parent ($PPID) is psql itself: print psql's argv and env
    probe = r"\! tr '\0' ' ' < /proc/$PPID/cmdline; echo; tr '\0' '\n' < /proc/$PPID/environ | grep '^PGPASSWORD=' | sha256sum"
    res = subprocess.run(
        [PODLEDGER, "db", "shell", "--role", "reporting", "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    argv, digest = res.stdout.strip().splitlines()[-2:]
    assert "psql" in argv and "user=podledger_reporting" in argv, argv
    assert secret not in argv, argv  # the probe holds only a digest of it
    assert digest.split()[0] == hashlib.sha256(f"PGPASSWORD={secret}\n".encode()).hexdigest(), res.stdout


def test_login_and_cookie_are_throttled_per_client(database: Database) -> None:
    clock = FakeClock()
    throttle = auth_mod.AuthThrottle(limit=5, window=60, clock=clock)
    app = create_app(database, TOKEN_SPEC, throttle=throttle)
    with TestClient(app, raise_server_exceptions=False) as c:
        ok = _login(c, TOKENS["reader"])
        assert ok.status_code == 303 and ok.cookies.get(COOKIE) == TOKENS["reader"]
        c.cookies.clear()
        for _ in range(5):
            assert _login(c, "wrong-token-wrong-token").status_code == 401
        r = _login(c, "wrong-token-wrong-token")
        assert r.status_code == 429 and r.headers["Retry-After"] == "60" and "Too many" in r.text
        # a forged cookie counts as a failure too, and is throttled like the form
        c.cookies.set(COOKIE, "forged-cookie-value-xx")
        assert c.get("/", follow_redirects=False).status_code == 303  # to /login
        c.cookies.clear()
        # the reader who signed in from here before keeps working: form and cookie
        assert _login(c, TOKENS["reader"]).status_code == 303
        c.cookies.set(COOKIE, TOKENS["reader"])
        assert c.get("/").status_code == 200
        c.cookies.clear()
        # a token not yet seen from this client waits
        assert _login(c, TOKENS["admin"]).status_code == 429
        clock.now += 61
        assert _login(c, TOKENS["admin"]).status_code == 303


def test_forwarded_client_only_from_trusted_proxies(database: Database) -> None:
    proxies = parse_proxies("10.0.0.0/8, 127.0.0.1")
    hdr = {"x-forwarded-for": "203.0.113.9, 10.1.2.3"}
    assert client_address("10.9.9.9", hdr, proxies) == "203.0.113.9"
    assert client_address("198.51.100.1", hdr, proxies) == "198.51.100.1"  # not a proxy: ignored
    assert client_address("10.9.9.9", {}, proxies) == "10.9.9.9"
    assert client_address("10.9.9.9", hdr, ()) == "10.9.9.9"  # none trusted by default
    with pytest.raises(ValueError, match="PODLEDGER_TRUSTED_PROXIES"):
        parse_proxies("not-an-ip")
    clock = FakeClock()
    throttle = auth_mod.AuthThrottle(limit=2, window=60, clock=clock)
    # the test client's peer is "testclient": trusted only when named; use a network that holds it not
    app = create_app(database, TOKEN_SPEC, throttle=throttle, trusted_proxies="0.0.0.0/0")
    wrong = {"Authorization": "Bearer not-a-valid-token-at-all"}
    with TestClient(app, raise_server_exceptions=False, client=("10.0.0.5", 5000)) as c:
        for _ in range(2):
            c.get("/podledger/v1/nodes", headers={**wrong, "X-Forwarded-For": "203.0.113.1"})
        assert throttle.retry_after("203.0.113.1") is not None
        assert throttle.retry_after("10.0.0.5") is None
        # another forwarded client is not throttled
        r = c.get("/podledger/v1/nodes", headers={**auth("reader"), "X-Forwarded-For": "203.0.113.2"})
        assert r.status_code == 200
        # https through the proxy: the cookie is Secure and HSTS is sent
        r = _login(
            c, TOKENS["reader"], headers={"X-Forwarded-For": "203.0.113.2", "X-Forwarded-Proto": "https"}
        )
        assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
        assert r.headers["strict-transport-security"].startswith("max-age=")


def test_security_headers(database: Database) -> None:
    app = create_app(database, TOKEN_SPEC)
    with TestClient(app, raise_server_exceptions=False) as c:
        for path in ("/login", "/podledger/v1/nodes", "/static/style.css"):
            r = c.get(path, headers=auth("reader"))
            assert r.status_code == 200, (path, r.status_code)
            csp = r.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in csp and "script-src 'self';" in csp, csp
            assert r.headers["x-frame-options"] == "DENY"
            assert r.headers["x-content-type-options"] == "nosniff"
            assert "strict-transport-security" not in r.headers  # plain http
        docs = c.get("/docs")
        assert docs.status_code == 200 and "'unsafe-inline'" in docs.headers["content-security-policy"]
        # a forged X-Forwarded-Proto from an untrusted peer does not turn HSTS on
        r = c.get("/login", headers={"X-Forwarded-Proto": "https"})
        assert "strict-transport-security" not in r.headers


def test_readyz_is_503_when_the_ledger_cannot_write(database: Database, db_url: str) -> None:
    app = create_app(database, TOKEN_SPEC)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/readyz")
        assert r.status_code == 200 and r.json()["checks"]["writes"] == "ok", r.text
        name = db.database_name(db_url)
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        try:
            db.dispose_all()  # new sessions pick the setting up
            database2 = db.get_database(db_url, migrate_on_start=False)
            with TestClient(create_app(database2, TOKEN_SPEC), raise_server_exceptions=False) as c2:
                r = c2.get("/readyz")
                assert r.status_code == 503, r.text
                assert r.json()["checks"]["writes"] == "transactions are read-only", r.text
        finally:
            with psycopg.connect(db_url, autocommit=True) as conn:
                conn.execute("SET default_transaction_read_only = off")
                conn.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
            db.dispose_all()


def test_readyz_is_503_when_the_app_login_lost_insert(database: Database, db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("REVOKE INSERT (hash) ON events FROM podledger_app")
    try:
        with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as c:
            r = c.get("/readyz")
            assert r.status_code == 503, r.text
            assert r.json()["checks"]["writes"] == "role podledger_app may not insert into events", r.text
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("GRANT INSERT (hash) ON events TO podledger_app")
