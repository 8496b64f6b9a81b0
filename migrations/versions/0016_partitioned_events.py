"""Partitioned log (issue 14 item 4): ``events`` becomes PARTITION BY RANGE (position).

What depends on ``events`` is read from the catalogs, dropped and made again on the new table:
the views over it (``v_*``, in dependency order, with their options, owners, comments and
grants, so the reporting role keeps its SELECTs), its indexes, triggers, check and foreign-key
constraints, its grants and its position sequence's grants.

A unique constraint on a partitioned table must contain the partition key, so the global
uniqueness of ``event_id`` and of ``(stream, version)`` moves to the side table ``event_keys``
(one row per event, written in the same statement by the trigger ``events_record_keys``). Its
constraints keep the names ``events_event_id_key`` and ``events_stream_version_key``: a
duplicate fails with the same unique_violation as before. The idempotency look-ups read it.

``position``: GENERATED ALWAYS AS IDENTITY where the server allows identity columns on a
partitioned table (PostgreSQL >= 17); on 15 and 16 a sequence ``events_position_seq`` owned by
the column is its default. The sequence continues where the old one stopped.

Partitions of ``PODLEDGER_PARTITION_SIZE`` positions (default 1,000,000) cover the rows and
``PODLEDGER_PARTITIONS_AHEAD`` (default 2) more; a DEFAULT partition takes anything past the
last one, so an append never fails for want of a partition (migrations/sql/partitions.sql,
ledger/partitions.py, docs/operations.md).

The rows are copied (the table is rewritten once, under an exclusive lock). The downgrade
copies them back into a plain table, archived partitions (schema ``event_archive``) included;
it refuses when detached partitions were dropped.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
APPEND_ONE_SIG = "text, int, text, smallint, uuid, bytea, bytea, timestamptz, bytea, bytea, boolean"
COLUMNS = (
    "position, stream, version, type, schema_version, event_id, data, meta, recorded_at, "
    "effective_at, tx_id, prev_hash, hash"
)
# columns after position, as migration 0001 made them
BODY = """
    stream         text        NOT NULL,
    version        integer     NOT NULL,
    type           text        NOT NULL,
    schema_version smallint    NOT NULL DEFAULT 1,
    event_id       uuid        NOT NULL,
    data           jsonb       NOT NULL,
    meta           jsonb       NOT NULL DEFAULT '{}'::jsonb,
    recorded_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    effective_at   timestamptz NOT NULL,
    tx_id          xid8        NOT NULL DEFAULT pg_current_xact_id(),
    prev_hash      bytea       NOT NULL,
    hash           bytea       NOT NULL
"""
FUNCTIONS = (
    "ledger_ensure_partitions(int, bigint)",
    "ledger_detach_partitions(bigint, boolean)",
    "ledger_create_partition(bigint, bigint)",
    "ledger_drop_cloned_triggers(text)",
    "ledger_position_drawn()",
    "ledger_event_partitions()",
    "ledger_record_event_keys()",
)
OWN_TRIGGERS = {"events_record_keys"}  # made by this revision, not carried over
OWN_INDEXES = {"events_stream_version_idx"}


@dataclass
class View:
    name: str  # schema-qualified, quoted
    kind: str  # v | m
    depth: int
    definition: str
    owner: str
    options: list[str]
    comment: str | None
    grants: list[str]
    indexes: list[str]


@dataclass
class Dependents:
    """What hangs on ``events``, as SQL to make it again."""

    views: list[View] = field(default_factory=list)
    indexes: list[tuple[str, str]] = field(default_factory=list)  # (name, CREATE INDEX ...)
    triggers: list[tuple[str, str, str]] = field(default_factory=list)  # (name, def, enabled)
    checks: list[tuple[str, str]] = field(default_factory=list)  # (name, definition)
    foreign_keys: list[tuple[str, str, str]] = field(default_factory=list)  # (table, name, definition)
    grants: list[str] = field(default_factory=list)
    seq_grants: list[str] = field(default_factory=list)
    owner: str = ""
    comment: str | None = None


def _rows(sql: str, **params: Any) -> list[Any]:
    return list(op.get_bind().execute(sa.text(sql), params).fetchall())


def _one(sql: str, **params: Any) -> Any:
    return op.get_bind().execute(sa.text(sql), params).scalar()


def _ddl(statement: str) -> None:
    """Run SQL text as is (no bind-parameter parsing) in the migration's transaction."""
    op.get_bind().connection.driver_connection.execute(statement)


def _literal(text: str) -> str:
    return str(_one("SELECT quote_literal(:t)", t=text))


def _grants(oid: int, target: str) -> list[str]:
    """GRANT statements that give every grantee of ``oid`` its privileges on ``target``."""
    out = []
    for grantee, priv, grantable in _rows(
        "SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END, "
        "a.privilege_type, a.is_grantable FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = :o",
        o=oid,
    ):
        out.append(f"GRANT {priv} ON {target} TO {grantee}" + (" WITH GRANT OPTION" if grantable else ""))
    return out


_VIEWS = """
WITH RECURSIVE deps(oid, depth) AS (
  SELECT r.ev_class, 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
  WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
    AND d.refobjid = 'events'::regclass AND r.ev_class <> 'events'::regclass
  UNION ALL
  SELECT r.ev_class, deps.depth + 1 FROM deps
  JOIN pg_depend d ON d.refobjid = deps.oid AND d.classid = 'pg_rewrite'::regclass
                  AND d.refclassid = 'pg_class'::regclass
  JOIN pg_rewrite r ON r.oid = d.objid
  WHERE r.ev_class <> deps.oid
)
SELECT c.oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname), c.relkind::text, max(deps.depth),
       pg_get_viewdef(c.oid), quote_ident(pg_get_userbyid(c.relowner)), coalesce(c.reloptions, '{}'),
       obj_description(c.oid, 'pg_class')
FROM deps JOIN pg_class c ON c.oid = deps.oid JOIN pg_namespace n ON n.oid = c.relnamespace
GROUP BY c.oid, n.nspname, c.relname, c.relkind, c.relowner, c.reloptions
ORDER BY 4, 2
"""


def _capture() -> Dependents:
    dep = Dependents()
    events = _one("SELECT 'events'::regclass::oid")
    for oid, name, kind, depth, definition, owner, options, comment in _rows(_VIEWS):
        indexes = [
            r[0] for r in _rows("SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = :o", o=oid)
        ]
        grants = _grants(oid, name)
        dep.views.append(View(name, kind, depth, definition, owner, list(options), comment, grants, indexes))
    for name, definition in _rows(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = :o AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid "
        "AND k.conrelid = :o) ORDER BY 1",
        o=events,
    ):
        dep.indexes.append((name, definition.replace(" ON ONLY ", " ON ")))
    dep.triggers = [
        (r[0], r[1], r[2])
        for r in _rows(
            "SELECT tgname, pg_get_triggerdef(oid), tgenabled::text FROM pg_trigger "
            "WHERE tgrelid = :o AND NOT tgisinternal AND tgparentid = 0 ORDER BY tgname",
            o=events,
        )
    ]
    dep.checks = [
        (r[0], r[1])
        for r in _rows(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = :o AND contype = 'c' AND coninhcount = 0 ORDER BY 1",
            o=events,
        )
    ]
    dep.foreign_keys = [
        (r[0], r[1], r[2])
        for r in _rows(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE contype = 'f' AND (conrelid = :o OR confrelid = :o) AND conparentid = 0 ORDER BY 1, 2",
            o=events,
        )
    ]
    dep.grants = _grants(events, "events")
    seq = _one("SELECT pg_get_serial_sequence('events', 'position')::regclass::oid")
    dep.seq_grants = _grants(seq, "SEQUENCE events_position_seq") if seq else []
    dep.owner = _one("SELECT quote_ident(pg_get_userbyid(relowner)) FROM pg_class WHERE oid = :o", o=events)
    dep.comment = _one("SELECT obj_description(:o, 'pg_class')", o=events)
    return dep


def _detach_dependents(dep: Dependents) -> None:
    for view in sorted(dep.views, key=lambda v: -v.depth):
        _ddl(f"DROP {'MATERIALIZED VIEW' if view.kind == 'm' else 'VIEW'} {view.name}")
    for table, name, _definition in dep.foreign_keys:
        _ddl(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')


def _set_aside(new_name: str) -> None:
    """Rename the current ``events`` and its indexes and sequence out of the way."""
    events = _one("SELECT 'events'::regclass::oid")
    for index, renamed in _rows(
        "SELECT quote_ident(c.relname), quote_ident(left(c.relname, 40) || '__' || :n) "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = :o",
        o=events,
        n=new_name,
    ):
        _ddl(f"ALTER INDEX {index} RENAME TO {renamed}")
    seq = _one("SELECT pg_get_serial_sequence('events', 'position')")
    if seq:
        _ddl(f"ALTER SEQUENCE {seq} RENAME TO {new_name}_position_seq")
    _ddl(f"ALTER TABLE events RENAME TO {new_name}")


def _restore(dep: Dependents, skip_indexes: set[str], skip_triggers: set[str]) -> None:
    for name, definition in dep.indexes:
        if name not in skip_indexes:
            _ddl(definition)
    for name, definition, enabled in dep.triggers:
        if name in skip_triggers:
            continue
        _ddl(definition)
        if enabled == "D":
            _ddl(f'ALTER TABLE events DISABLE TRIGGER "{name}"')
    for name, definition in dep.checks:
        _ddl(f'ALTER TABLE events ADD CONSTRAINT "{name}" {definition}')
    for table, name, definition in dep.foreign_keys:
        _ddl(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    for grant in dep.grants:
        _ddl(grant)
    for grant in dep.seq_grants:
        _ddl(grant)
    if dep.owner != _one("SELECT quote_ident(current_user)"):
        _ddl(f"ALTER TABLE events OWNER TO {dep.owner}")
    if dep.comment is not None:
        _ddl(f"COMMENT ON TABLE events IS {_literal(dep.comment)}")
    for view in sorted(dep.views, key=lambda v: v.depth):
        options = f" WITH ({', '.join(view.options)})" if view.options else ""
        if view.kind == "m":
            _ddl(f"CREATE MATERIALIZED VIEW {view.name}{options} AS {view.definition}")
        else:
            _ddl(f"CREATE VIEW {view.name}{options} AS {view.definition}")
        kind = "MATERIALIZED VIEW" if view.kind == "m" else "VIEW"
        for index in view.indexes:
            _ddl(index)
        if view.owner != _one("SELECT quote_ident(current_user)"):
            _ddl(f"ALTER {kind} {view.name} OWNER TO {view.owner}")
        if view.comment is not None:
            _ddl(f"COMMENT ON {kind} {view.name} IS {_literal(view.comment)}")
        for grant in view.grants:
            _ddl(grant)


def _setval(old_seq: str | None) -> None:
    """The new position sequence continues where ``old_seq`` stopped."""
    if old_seq is None:
        return
    last, called = op.get_bind().execute(sa.text(f"SELECT last_value, is_called FROM {old_seq}")).one()
    _ddl(f"SELECT setval(pg_get_serial_sequence('events', 'position'), {int(last)}, {bool(called)})")


def upgrade() -> None:
    size = int(os.environ.get("PODLEDGER_PARTITION_SIZE") or 1_000_000)
    ahead = int(os.environ.get("PODLEDGER_PARTITIONS_AHEAD") or 2)
    identity = int(_one("SHOW server_version_num")) >= 170000
    dep = _capture()
    _detach_dependents(dep)
    _set_aside("events_unpartitioned")
    old_seq = _one("SELECT pg_get_serial_sequence('events_unpartitioned', 'position')")

    _ddl("CREATE SCHEMA IF NOT EXISTS event_archive")
    _ddl(
        """
        CREATE TABLE IF NOT EXISTS event_archive.detached (
            name           text        PRIMARY KEY,
            lo             bigint      NOT NULL,
            hi             bigint      NOT NULL,
            events         bigint      NOT NULL,
            first_position bigint,
            last_position  bigint,
            last_hash      bytea,
            archived       boolean     NOT NULL,
            detached_at    timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    if identity:
        position = "position bigint GENERATED ALWAYS AS IDENTITY"
    else:
        _ddl("CREATE SEQUENCE events_position_seq AS bigint")
        position = "position bigint NOT NULL DEFAULT nextval('events_position_seq')"
    _ddl(
        f"CREATE TABLE events ({position}, {BODY}, CONSTRAINT events_pkey PRIMARY KEY (position)) "
        "PARTITION BY RANGE (position)"
    )
    if not identity:
        _ddl("ALTER SEQUENCE events_position_seq OWNED BY events.position")
    _ddl((SQL / "partitions.sql").read_text())
    _ddl("CREATE TABLE events_default PARTITION OF events DEFAULT")
    _ddl(
        "CREATE TRIGGER events_partition_no_truncate BEFORE TRUNCATE ON events_default "
        "FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation()"
    )
    head = int(_one("SELECT coalesce(max(position), 0) FROM events_unpartitioned"))
    top = max(head, int(_one(f"SELECT last_value FROM {old_seq}") if old_seq else 0))
    lo = 0
    while lo <= top + ahead * size:
        _ddl(f"SELECT ledger_create_partition({lo}, {lo + size})")
        lo += size
    override = " OVERRIDING SYSTEM VALUE" if identity else ""
    _ddl(
        f"INSERT INTO events ({COLUMNS}){override} SELECT {COLUMNS} FROM events_unpartitioned ORDER BY position"
    )
    _ddl(
        """
        CREATE TABLE event_keys (
            event_id uuid    NOT NULL,
            stream   text    NOT NULL,
            version  integer NOT NULL,
            position bigint  NOT NULL,
            CONSTRAINT events_event_id_key PRIMARY KEY (event_id),
            CONSTRAINT events_stream_version_key UNIQUE (stream, version)
        )
        """
    )
    _ddl(
        "INSERT INTO event_keys (event_id, stream, version, position) "
        "SELECT event_id, stream, version, position FROM events_unpartitioned ORDER BY position"
    )
    _setval(old_seq)
    _ddl("DROP TABLE events_unpartitioned")
    # the stream look-ups (read_stream, views) keep an index on (stream, version), not unique
    _ddl("CREATE INDEX events_stream_version_idx ON events (stream, version)")
    _restore(dep, skip_indexes=set(), skip_triggers=set())
    _ddl(
        "CREATE TRIGGER events_record_keys AFTER INSERT ON events REFERENCING NEW TABLE AS new_events "
        "FOR EACH STATEMENT EXECUTE FUNCTION ledger_record_event_keys()"
    )
    _ddl(
        "CREATE TRIGGER event_keys_no_update BEFORE UPDATE OR DELETE ON event_keys "
        "FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation()"
    )
    _ddl(
        "CREATE TRIGGER event_keys_no_truncate BEFORE TRUNCATE ON event_keys "
        "FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation()"
    )
    for fn in FUNCTIONS:
        _ddl(f"REVOKE EXECUTE ON FUNCTION {fn} FROM PUBLIC")
    _ddl("GRANT EXECUTE ON FUNCTION ledger_ensure_partitions(int, bigint) TO podledger_app")
    _ddl("GRANT EXECUTE ON FUNCTION ledger_event_partitions(), ledger_position_drawn() TO podledger_app")
    _ddl("GRANT SELECT ON event_keys TO podledger_app")
    _ddl("GRANT USAGE ON SCHEMA event_archive TO podledger_app")
    _ddl("GRANT SELECT ON event_archive.detached TO podledger_app")
    # idempotency: an event id is looked up in event_keys (one index probe, archived events too)
    append_one = (SQL / "ledger_append_one.sql").read_text()
    looked_up = "FROM events e WHERE e.event_id = p_event_id"
    assert looked_up in append_one
    _ddl(append_one.replace(looked_up, "FROM event_keys e WHERE e.event_id = p_event_id"))
    _ddl("ANALYZE events, event_keys")


def downgrade() -> None:
    dropped = _one("SELECT count(*) FROM event_archive.detached WHERE NOT archived")
    if dropped:
        raise RuntimeError(
            f"{dropped} detached partitions were dropped (not archived): their events are gone, "
            "a plain events table would not hold the whole chain; refusing to downgrade"
        )
    archived = [r[0] for r in _rows("SELECT quote_ident(name) FROM event_archive.detached WHERE archived")]
    dep = _capture()
    _detach_dependents(dep)
    _set_aside("events_partitioned")
    old_seq = _one("SELECT pg_get_serial_sequence('events_partitioned', 'position')")
    _ddl(
        f"CREATE TABLE events (position bigint GENERATED ALWAYS AS IDENTITY, {BODY}, "
        "CONSTRAINT events_pkey PRIMARY KEY (position))"
    )
    sources = " UNION ALL ".join(
        [f"SELECT {COLUMNS} FROM event_archive.{t}" for t in archived]
        + [f"SELECT {COLUMNS} FROM events_partitioned"]
    )
    _ddl(
        f"INSERT INTO events ({COLUMNS}) OVERRIDING SYSTEM VALUE SELECT * FROM ({sources}) r ORDER BY position"
    )
    _setval(old_seq)
    _ddl("DROP TABLE events_partitioned, event_keys")
    _ddl("DROP SCHEMA event_archive CASCADE")
    # the unique constraints come back to events under their names
    _ddl("ALTER TABLE events ADD CONSTRAINT events_stream_version_key UNIQUE (stream, version)")
    _ddl("ALTER TABLE events ADD CONSTRAINT events_event_id_key UNIQUE (event_id)")
    _restore(dep, skip_indexes=OWN_INDEXES, skip_triggers=OWN_TRIGGERS)
    for fn in FUNCTIONS:
        _ddl(f"DROP FUNCTION IF EXISTS {fn}")
    _ddl((SQL / "ledger_append_one.sql").read_text())
    _ddl("ANALYZE events")
