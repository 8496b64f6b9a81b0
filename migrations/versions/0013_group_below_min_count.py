"""Time below minCount per PodGroup (issue 16): ``v_group_below_min_count`` over the
``PodGroupSatisfiedChanged`` events of the live PodGroupSatisfied condition (KEP-6413, gate
PodGroupSatisfiedCondition), readable by the reporting and application roles like the other views.

Revision ID: 0013
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0013"
down_revision = "0011"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
VIEW = "v_group_below_min_count"


def upgrade() -> None:
    op.execute((SQL / f"{VIEW}.sql").read_text())
    for role in ("podledger_reporting", "podledger_app"):
        op.execute(f"GRANT SELECT ON {VIEW} TO {role}")


def downgrade() -> None:
    op.execute(f"DROP VIEW IF EXISTS {VIEW}")
