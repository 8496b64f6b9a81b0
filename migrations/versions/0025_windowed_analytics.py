"""Windowed analytics (issue 34): hourly buckets and starts maintained by the inline projection
in the append's transaction (``ledger/projections/analytics.py``), the views and window
functions over them (``analytics_views.sql``; docs/reports.md), and ``v_gpu_allocation``
against the GPUs the nodes offered at each position instead of today's.

The upgrade fills the new tables by re-folding the log (as 0008 did).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def _ddl(statement: str) -> None:
    """Run SQL text as is (no bind-parameter parsing) in the migration's transaction."""
    op.get_bind().connection.driver_connection.execute(statement)


def upgrade() -> None:
    _ddl((SQL / "analytics_tables.sql").read_text())
    _ddl((SQL / "v_gpu_allocation_v2.sql").read_text())
    _ddl((SQL / "analytics_views.sql").read_text())

    from ledger.projections.runner import refold_current

    refold_current(op.get_bind().connection.driver_connection)


def downgrade() -> None:
    _ddl(
        "DROP FUNCTION IF EXISTS analytics_unschedulable(timestamptz, timestamptz), "
        "analytics_bucket_counts(text, timestamptz, timestamptz), analytics_window(timestamptz, timestamptz), "
        "analytics_preemptions(timestamptz, timestamptz), analytics_waits_between(timestamptz, timestamptz)"
    )
    _ddl(
        "DROP VIEW IF EXISTS v_node_changes, v_wait_percentiles_hourly, v_waits, v_below_min_hourly, v_pending_hourly, "
        "v_allocation_hourly, v_levels_hourly, v_preemptions_hourly, v_unschedulable_hourly"
    )
    _ddl((SQL / "v_gpu_allocation.sql").read_text())
    _ddl("DROP INDEX IF EXISTS events_analytics_at_idx")
    _ddl("DROP TABLE IF EXISTS analytics_hourly, analytics_waits")
