"""Anchored history (Merkle tree and checkpoint tables) and login roles with least privilege.

Revision ID: 0007
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "anchored_history.sql").read_text())
    op.execute((SQL / "login_roles.sql").read_text())


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS checkpoints, merkle_nodes, merkle_leaves CASCADE")
    op.execute("DROP FUNCTION IF EXISTS ledger_forbid_anchor_mutation()")
