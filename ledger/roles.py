"""The database roles of a ledger and what each may do (``podledger db roles``).

- the *owner*: the login of ``PODLEDGER_DATABASE_URL``; runs the migrations and owns the tables
  (and so their triggers). Only maintenance commands use it.
- ``podledger_app``: the login of the API server and the worker. SELECT and INSERT on ``events``
  and nothing else there (no UPDATE, DELETE, TRUNCATE, REFERENCES or TRIGGER); it is no superuser
  and cannot create roles or databases, bypass row security or replicate.
- ``podledger_reporting``: SELECT on the reporting views (and the published checkpoints) only.

Neither may create temporary objects (TEMP on the database, migration 0024: a temporary table
is searched before every schema), insert a position or a transaction id into ``events``, or
write the Merkle tree and checkpoint tables (only their SECURITY DEFINER functions do).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.db import APP_ROLE, REPORTING_ROLE
from ledger.sql import scalar

if TYPE_CHECKING:
    from ledger.database import Database

EVENT_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
_COLUMN_LEVEL = {"SELECT", "INSERT", "UPDATE", "REFERENCES"}  # may be granted per column
ANCHOR_TABLES = ("merkle_leaves", "merkle_nodes", "checkpoints")


@dataclass(frozen=True, slots=True)
class RoleInfo:
    name: str
    purpose: str
    exists: bool
    login: bool = False
    superuser: bool = False
    createrole: bool = False
    createdb: bool = False
    bypassrls: bool = False
    replication: bool = False
    owns_events: bool = False
    events: tuple[str, ...] = ()  # privileges on events (on the table or on any of its columns)
    sessions: int = 0  # sessions in this database logged in as the role now
    temp: bool = False  # may create temporary objects in this database
    server_columns: tuple[str, ...] = ()  # of position, tx_id: those it may insert
    anchor_writes: tuple[str, ...] = ()  # Merkle tree / checkpoint tables it may write directly


def describe(db: Database) -> list[RoleInfo]:
    """The owner (the table owner of ``events``), the application and the reporting role."""
    with db.connect() as conn:
        owner = scalar(conn, "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'events'::regclass")
        out = []
        for name, purpose in (
            (owner, "owner: migrations, owns tables and triggers"),
            (APP_ROLE, "application and worker login"),
            (REPORTING_ROLE, "reporting views, read-only"),
        ):
            row = conn.execute(
                "SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolreplication "
                "FROM pg_roles WHERE rolname = %s",
                (name,),
            ).fetchone()
            if row is None:
                out.append(RoleInfo(name, purpose, False))
                continue

            def has(sql: str, **params: str) -> bool:
                return bool(scalar(conn, sql, params))

            privs = tuple(
                p
                for p in EVENT_PRIVILEGES
                if has(
                    "SELECT has_any_column_privilege(%(n)s, 'events', %(p)s)"
                    if p in _COLUMN_LEVEL
                    else "SELECT has_table_privilege(%(n)s, 'events', %(p)s)",
                    n=name,
                    p=p,
                )
            )
            temp = has("SELECT has_database_privilege(%(n)s, current_database(), 'TEMP')", n=name)
            server_columns = tuple(
                c
                for c in ("position", "tx_id")
                if has("SELECT has_column_privilege(%(n)s, 'events', %(c)s, 'INSERT')", n=name, c=c)
            )
            anchor_writes = tuple(
                t
                for t in ANCHOR_TABLES
                if has(
                    "SELECT has_table_privilege(%(n)s, %(t)s, 'INSERT, UPDATE, DELETE, TRUNCATE')",
                    n=name,
                    t=t,
                )
            )
            sessions = scalar(
                conn,
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND datname = current_database()",
                (name,),
            )
            login, superuser, createrole, createdb, bypassrls, replication = (bool(v) for v in row)
            out.append(
                RoleInfo(
                    name,
                    purpose,
                    True,
                    login=login,
                    superuser=superuser,
                    createrole=createrole,
                    createdb=createdb,
                    bypassrls=bypassrls,
                    replication=replication,
                    owns_events=name == owner,
                    events=privs,
                    sessions=int(sessions),
                    temp=temp,
                    server_columns=server_columns,
                    anchor_writes=anchor_writes,
                )
            )
    return out


def problems(roles: list[RoleInfo]) -> list[str]:
    """What breaks least privilege (empty when the roles are as they should be)."""
    out: list[str] = []
    for r in roles[1:]:
        if not r.exists:
            out.append(f"role {r.name} does not exist (run the migrations)")
            continue
        if not r.login:
            out.append(f"role {r.name} cannot log in (ALTER ROLE {r.name} LOGIN)")
        for flag in ("superuser", "createrole", "createdb", "bypassrls", "replication"):
            if getattr(r, flag):
                out.append(f"role {r.name} has {flag.upper()}")
        if r.temp:
            out.append(
                f"role {r.name} may create temporary objects "
                f"(REVOKE TEMPORARY ON DATABASE <db> FROM PUBLIC, {r.name})"
            )
        if r.server_columns:
            out.append(f"role {r.name} may insert {', '.join(r.server_columns)} into events")
        if r.anchor_writes:
            out.append(f"role {r.name} may write {', '.join(r.anchor_writes)} directly")
    app, reporting = roles[1], roles[2]
    if app.exists and set(app.events) != {"SELECT", "INSERT"}:
        out.append(
            f"role {app.name} has {', '.join(app.events) or 'no privileges'} on events (want SELECT, INSERT)"
        )
    if reporting.exists and reporting.events:
        out.append(f"role {reporting.name} has {', '.join(reporting.events)} on events (want none)")
    return out
