"""What the database says about its own schema: migration revisions and readable views."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def migration_revisions(conn: Connection) -> tuple[str, ...]:
    """The alembic revisions the database is at, sorted. The application role may not read
    ``alembic_version``: it is then read with the login role for this transaction only (SET
    LOCAL ends with it), so call this inside ``engine.begin()``."""
    if not conn.execute(sa.text("SELECT has_table_privilege('alembic_version', 'SELECT')")).scalar():
        conn.execute(sa.text("SET LOCAL ROLE NONE"))
    return tuple(sorted(r[0] for r in conn.execute(sa.text("SELECT version_num FROM alembic_version"))))


def ping(conn: Connection) -> None:
    """One round trip; raises if the database does not answer."""
    conn.execute(sa.text("SELECT 1"))


def view_readable(conn: Connection, view: str) -> bool:
    """The reporting view exists and this role may read it."""
    return bool(
        conn.execute(
            sa.text("SELECT to_regclass(:v) IS NOT NULL AND has_table_privilege(to_regclass(:v), 'SELECT')"),
            {"v": view},
        ).scalar()
    )


__all__ = ["migration_revisions", "ping", "view_readable"]
