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


# the columns every append sets (the app login holds INSERT on these columns only, migration 0024)
APPEND_COLUMNS = ("stream", "version", "type", "event_id", "data", "meta", "recorded_at", "prev_hash", "hash")


def write_blockers(conn: Conn) -> list[str]:
    """Why this login could not append to the ledger now (empty: it can), without writing: the
    server is a standby, transactions are read-only (``default_transaction_read_only``, a full
    disk's emergency setting), or the role has lost INSERT on the columns an append sets. Call it before anything
    changes the transaction's role."""
    row = conn.execute(
        "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on', "
        "CASE WHEN to_regclass('events') IS NULL THEN false ELSE (SELECT bool_and("
        "has_column_privilege('events', c, 'INSERT')) FROM unnest(%s::text[]) AS c) END, current_user",
        (list(APPEND_COLUMNS),),
    ).fetchone()
    assert row is not None
    standby, read_only, may_insert, user = row
    blockers = []
    if standby:
        blockers.append("the server is a read-only standby")
    if read_only:
        blockers.append("transactions are read-only")
    if not may_insert:
        blockers.append(f"role {user} may not insert into events")
    return blockers


def view_readable(conn: Conn, view: str) -> bool:
    """The reporting view exists and this role may read it."""
    return bool(
        scalar(
            conn,
            "SELECT to_regclass(%(v)s) IS NOT NULL AND has_table_privilege(to_regclass(%(v)s), 'SELECT')",
            {"v": view},
        )
    )


__all__ = ["migration_revisions", "ping", "view_readable", "write_blockers"]
