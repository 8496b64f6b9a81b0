"""No silent new ledger: with PODLEDGER_DATABASE_URL set, a database that does not exist is an
error naming it and ``podledger db create``; ``db create`` makes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

from ledger import db
from tests.conftest import _admin

PODLEDGER = str(Path(sys.executable).parent / "podledger")


def _run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PODLEDGER_DATABASE_URL=url)
    return subprocess.run([PODLEDGER, *args], capture_output=True, text=True, env=env, timeout=180)


def _exists(server_url: str, name: str) -> bool:
    with psycopg.connect(_admin(server_url), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def test_a_missing_configured_database_is_an_error_and_db_create_makes_it(server_url: str) -> None:
    name = f"podledger_typo_{os.getpid()}"
    url = db.with_database(db.libpq_url(server_url), name)
    try:
        for args in (("get", "pods"), ("apply", "-f", "examples/capacity")):
            r = _run(url, *args)
            assert r.returncode == 1, r.stdout + r.stderr
            assert f'database "{name}"' in r.stderr and "podledger db create" in r.stderr
            assert not _exists(server_url, name)
        r = _run(url, "db", "create")
        assert r.returncode == 0, r.stderr
        assert _exists(server_url, name)
        r = _run(url, "get", "pods")
        assert r.returncode == 0, r.stderr
    finally:
        with psycopg.connect(_admin(server_url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
