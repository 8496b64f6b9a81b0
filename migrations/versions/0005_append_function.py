"""ledger_begin_append(): stream versions, ledger lock and chain head in one round trip.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "ledger_begin_append.sql").read_text())
    op.execute("GRANT EXECUTE ON FUNCTION ledger_begin_append(text[], int[]) TO podledger_app")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS ledger_begin_append(text[], int[])")
