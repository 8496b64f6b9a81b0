"""GPU allocation over time (issue 21): ``v_gpu_allocation``, one row per allocation change
that moves GPUs with the cluster's and the namespace's allocated GPUs after it and the GPUs the
nodes offer, readable by the reporting and application roles like the other views (the Grafana
dashboard's GPU panel reads it).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "v_gpu_allocation.sql").read_text())
    for role in ("podledger_reporting", "podledger_app"):
        op.execute(f"GRANT SELECT ON v_gpu_allocation TO {role}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_gpu_allocation")
