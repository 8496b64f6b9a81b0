"""attach (issue 18): the shadow-mode views ``v_shadow_pod_differences`` (pods podledger would
have bound elsewhere than the cluster did) and ``v_shadow_group_differences`` (gangs podledger
would have admitted or held unlike the cluster), readable by the reporting and application
roles.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
VIEWS = ["v_shadow_pod_differences", "v_shadow_group_differences"]


def upgrade() -> None:
    for name in VIEWS:
        op.execute((SQL / f"{name}.sql").read_text())
    for role in ("podledger_reporting", "podledger_app"):
        op.execute(f"GRANT SELECT ON {', '.join(VIEWS)} TO {role}")


def downgrade() -> None:
    for name in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
