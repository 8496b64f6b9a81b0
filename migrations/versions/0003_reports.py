"""Reporting views (one per file in migrations/sql/) and the reporting role's grants.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
VIEWS = [
    "v_group_wait_times",
    "v_unschedulable_reasons",
    "v_preemptions",
    "v_pod_allocation_changes",
    "v_node_utilization",
    "v_quota_usage",
    "v_thrash",
]


def upgrade() -> None:
    op.execute(
        "CREATE INDEX events_decision_pod_idx ON events ((data->>'pod'), position) WHERE type = 'PodBound'"
    )
    op.execute(
        "CREATE INDEX events_decision_group_idx ON events ((data->>'group'), position) "
        "WHERE type IN ('PodGroupUnschedulable', 'PodGroupScheduled', 'PodGroupConditionChanged', 'PodGroupRetried')"
    )
    for name in VIEWS:
        op.execute((SQL / f"{name}.sql").read_text())
    op.execute((SQL / "grants_reporting.sql").read_text())


def downgrade() -> None:
    for name in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    op.execute("DROP INDEX IF EXISTS events_decision_pod_idx, events_decision_group_idx")
