"""The one-query start-up check (``ledger.db.at_schema_head``) agrees with alembic."""

from __future__ import annotations

import psycopg
from alembic.config import Config
from alembic.script import ScriptDirectory

from ledger import db


def test_schema_head_is_alembics_head():
    cfg = Config(str(db.ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(db.ROOT / "alembic"))
    cfg.set_main_option("version_locations", str(db.ROOT / "migrations" / "versions"))
    script = ScriptDirectory.from_config(cfg)
    assert len(script.get_heads()) == 1  # one linear chain
    assert db.schema_head() == script.get_current_head()


def test_at_schema_head_only_when_migrated(engine, db_url):
    assert db.at_schema_head(db_url)  # the fixture's database is migrated
    with psycopg.connect(db.libpq_url(db_url), autocommit=True) as conn:
        (rev,) = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
        try:
            assert not db.at_schema_head(db_url)
        finally:
            conn.execute("UPDATE alembic_version SET version_num = %s", (rev,))
    assert not db.at_schema_head(db.with_database(db_url, "podledger_no_such_db"))
