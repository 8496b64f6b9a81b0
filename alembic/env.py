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


def run_migrations_online() -> None:
    # psycopg opens the connection from the libpq URL itself: SQLAlchemy's URL parser does not
    # take a multi-host URL (h1:5432,h2:5432) of a replicated server, libpq does
    import psycopg

    target = db.libpq_url(url)
    engine = sa.create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(target), poolclass=sa.pool.NullPool
    )
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
