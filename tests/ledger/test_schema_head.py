"""The one-query start-up check (``ledger.db.at_schema_head``) agrees with alembic."""

from __future__ import annotations

import os

import psycopg
from alembic.script import ScriptDirectory

from ledger import db


def test_schema_head_is_alembics_head():
    script = ScriptDirectory.from_config(db.alembic_config())
    assert len(script.get_heads()) == 1  # one linear chain
    assert db.schema_head() == script.get_current_head()


def test_at_schema_head_only_when_migrated(db_url):
    assert db.at_schema_head(db_url)  # the fixture's database is migrated
    with psycopg.connect(db.libpq_url(db_url), autocommit=True) as conn:
        (rev,) = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
        try:
            assert not db.at_schema_head(db_url)
        finally:
            conn.execute("UPDATE alembic_version SET version_num = %s", (rev,))
    assert not db.at_schema_head(db.with_database(db_url, "podledger_no_such_db"))


def test_read_connection_checks_the_head_on_its_own_connection(db_url, monkeypatch):
    """At the head: one connection, as the application role, and no migration."""
    opened: list[str] = []
    real_connect = psycopg.connect

    def counting_connect(conninfo, *args, **kwargs):
        opened.append(conninfo)
        return real_connect(conninfo, *args, **kwargs)

    def no_migration(url):
        raise AssertionError("migrated a database at the head")

    monkeypatch.setattr(psycopg, "connect", counting_connect)
    monkeypatch.setattr(db, "migrate", no_migration)
    db._migrated.discard(db_url)
    with db.read_connection(db_url) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (db.APP_ROLE,)
        assert conn.execute("SELECT count(*) FROM objects").fetchone() == (0,)
    assert len(opened) == 1


def test_read_connection_creates_and_migrates_a_missing_database(server_url):
    url = db.with_database(db.libpq_url(server_url), f"podledger_t_fresh_{os.getpid()}")
    try:
        with db.read_connection(url) as conn:
            (rev,) = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            assert rev == db.schema_head()
            assert conn.execute("SELECT current_user").fetchone() == (db.APP_ROLE,)
    finally:
        db.dispose(url)
        with psycopg.connect(db.with_database(db.libpq_url(server_url), "postgres"), autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')
