"""ledger_begin_batch(): the batched append's stream bump as a plain INSERT when every stream is new.

Same arguments and results as ledger_begin_append() (migration 0005, kept for code that still
calls it); an upsert is used only when some stream already exists. No data changes.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "ledger_begin_batch.sql").read_text())
    op.execute("GRANT EXECUTE ON FUNCTION ledger_begin_batch(text[], int[]) TO podledger_app")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS ledger_begin_batch(text[], int[])")
