"""Alembic environment: the URL comes from podledger's settings, never from alembic.ini."""

from __future__ import annotations

import sqlalchemy as sa

from alembic import context
from ledger import db
from ledger.tables import metadata

config = context.config
url = config.attributes.get("url") or db.server_url()

# Serialise concurrent migrators (several processes starting at once) on an advisory lock.
MIGRATION_LOCK = 7243150002


def sqlalchemy_url(libpq: str) -> str:
    """The libpq URL as SQLAlchemy names the psycopg 3 dialect (Alembic runs on SQLAlchemy;
    nothing else of podledger does)."""
    return "postgresql+psycopg" + db.libpq_url(libpq)[len("postgresql") :]


def run_migrations_online() -> None:
    engine = sa.create_engine(sqlalchemy_url(url), poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        connection.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
        try:
            context.configure(connection=connection, target_metadata=metadata, transaction_per_migration=True)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
        finally:
            connection.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
            connection.commit()
    engine.dispose()


run_migrations_online()
