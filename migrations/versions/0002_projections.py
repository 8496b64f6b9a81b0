"""Current-state projection (objects) and async projection checkpoints; roles and grants.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def sql(name: str) -> None:
    op.execute((SQL / f"{name}.sql").read_text())


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE objects (
            kind             text        NOT NULL,
            namespace        text        NOT NULL DEFAULT '',
            name             text        NOT NULL,
            uid              text        NOT NULL,
            object           jsonb       NOT NULL,
            status           jsonb       NOT NULL DEFAULT '{}'::jsonb,
            created_position bigint      NOT NULL,
            updated_position bigint      NOT NULL,
            created_at       timestamptz NOT NULL,
            updated_at       timestamptz NOT NULL,
            PRIMARY KEY (kind, namespace, name)
        )
        """
    )
    op.execute(
        """
        CREATE TABLE projection_checkpoints (
            name       text        PRIMARY KEY,
            position   bigint      NOT NULL DEFAULT 0,
            updated_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE event_type_counts (
            type          text   PRIMARY KEY,
            count         bigint NOT NULL,
            last_position bigint NOT NULL
        )
        """
    )
    sql("roles")
    sql("grants_app")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS objects, projection_checkpoints, event_type_counts CASCADE")
