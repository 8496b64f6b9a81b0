"""ledger_append_one(): a single-event append (OCC, ledger lock, chain link, insert) in one call.

The sha256 link is computed in SQL, byte-identical to ``ledger.canonical.event_hash`` (the
client sends the canonical header split around the version), so ``podledger verify`` and logs
written before this revision keep passing.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
SIGNATURE = "text, int, text, smallint, uuid, bytea, bytea, timestamptz, bytea, bytea, boolean"


def upgrade() -> None:
    op.execute((SQL / "ledger_append_one.sql").read_text())
    op.execute(f"GRANT EXECUTE ON FUNCTION ledger_append_one({SIGNATURE}) TO podledger_app")


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS ledger_append_one({SIGNATURE})")
