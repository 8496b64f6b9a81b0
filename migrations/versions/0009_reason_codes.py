"""Reason codes in SQL (issue 21): ``v_unschedulable_reasons`` grouped by the decisions' reason
codes, ``v_pending_now`` (pending groups and pods: wait, last reason code and message, queue
position) and ``v_idle_capacity`` (idle nodes and free GPUs per topology domain), readable by the
reporting and application roles like the other views. An index finds a pod's last
PodUnschedulable.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
NEW_VIEWS = ["v_pending_now", "v_idle_capacity"]


def upgrade() -> None:
    op.execute(
        "CREATE INDEX events_pod_unschedulable_idx ON events ((data->>'pod'), position) "
        "WHERE type = 'PodUnschedulable'"
    )
    op.execute((SQL / "v_unschedulable_reasons_v2.sql").read_text())
    for name in NEW_VIEWS:
        op.execute((SQL / f"{name}.sql").read_text())
    for role in ("podledger_reporting", "podledger_app"):
        op.execute(f"GRANT SELECT ON v_unschedulable_reasons, {', '.join(NEW_VIEWS)} TO {role}")


def downgrade() -> None:
    for name in reversed(NEW_VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    op.execute("DROP VIEW v_unschedulable_reasons")  # drops the added `codes` column
    op.execute((SQL / "v_unschedulable_reasons.sql").read_text())
    for role in ("podledger_reporting", "podledger_app"):
        op.execute(f"GRANT SELECT ON v_unschedulable_reasons TO {role}")
    op.execute("DROP INDEX IF EXISTS events_pod_unschedulable_idx")
