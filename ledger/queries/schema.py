"""What the database says about its own schema: migration revisions and readable views."""

from __future__ import annotations

from ledger.sql import Conn, scalar


def migration_revisions(conn: Conn) -> tuple[str, ...]:
    """The alembic revisions the database is at, sorted. The application role may not read
    ``alembic_version``: it is then read with the login role for this transaction only (SET
    LOCAL ends with it), so call this inside a transaction (``Database.transaction()``)."""
    if not scalar(conn, "SELECT has_table_privilege('alembic_version', 'SELECT')"):
        conn.execute("SET LOCAL ROLE NONE")
    return tuple(sorted(r[0] for r in conn.execute("SELECT version_num FROM alembic_version")))


def ping(conn: Conn) -> None:
    """One round trip; raises if the database does not answer."""
    conn.execute("SELECT 1")


def view_readable(conn: Conn, view: str) -> bool:
    """The reporting view exists and this role may read it."""
    return bool(
        scalar(
            conn,
            "SELECT to_regclass(%(v)s) IS NOT NULL AND has_table_privilege(to_regclass(%(v)s), 'SELECT')",
            {"v": view},
        )
    )


__all__ = ["migration_revisions", "ping", "view_readable"]
