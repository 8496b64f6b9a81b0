"""Retry compaction (issue 14): a retry that changes nothing is one small event (``PodRetried``
for a plain pod, ``PodGroupRetried`` with ``attempts`` for a group) that points at the verdict it
repeats. ``v_pending_now`` reads a pod's last attempt from either PodUnschedulable or PodRetried
(by the pod's scheduler stream, which the stream index serves).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "v_pending_now_v2.sql").read_text())


def downgrade() -> None:
    op.execute((SQL / "v_pending_now.sql").read_text())
