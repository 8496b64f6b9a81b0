"""The migrated database against ``ledger.tables``: the metadata Alembic compares migrations with.

This is the one test module that uses SQLAlchemy: it is Alembic's side of the schema (Alembic
runs on SQLAlchemy; nothing else of podledger does).
"""

from __future__ import annotations

import sqlalchemy as sa

from ledger import db


def test_schema_matches_table_metadata(db_url):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from ledger.tables import PARTITION_NAME, metadata

    # the psycopg 3 dialect, as alembic/env.py names it
    su = sa.create_engine("postgresql+psycopg" + db.libpq_url(db_url)[len("postgresql") :])
    with su.connect() as conn:
        # the partitions of events (migration 0016) are not in the metadata
        skip = {"include_name": lambda name, kind, _p: not (kind == "table" and PARTITION_NAME.match(name))}
        diffs = compare_metadata(MigrationContext.configure(conn, opts=skip), metadata)
    su.dispose()
    diffs = [
        d
        for d in diffs
        if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == "alembic_version")
    ]
    assert diffs == []
