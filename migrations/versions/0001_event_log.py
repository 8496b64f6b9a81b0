"""The event log: events, streams, ordering and immutability triggers.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def sql(name: str) -> None:
    op.execute((SQL / f"{name}.sql").read_text())


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE events (
            position       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
            hash           bytea       NOT NULL,
            CONSTRAINT events_stream_version_key UNIQUE (stream, version),
            CONSTRAINT events_event_id_key UNIQUE (event_id),
            CONSTRAINT events_version_positive CHECK (version > 0)
        )
        """
    )
    op.execute("CREATE INDEX events_type_position_idx ON events (type, position)")
    op.execute(
        """
        CREATE TABLE streams (
            stream     text        PRIMARY KEY,
            version    integer     NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    for name in (
        "serialize_appends",
        "events_serialize_trigger",
        "forbid_mutation",
        "events_immutable_triggers",
        "notify_append",
        "events_notify_trigger",
    ):
        sql(name)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS events, streams CASCADE")
    op.execute(
        "DROP FUNCTION IF EXISTS ledger_serialize_appends, ledger_forbid_mutation, ledger_notify_append"
    )
