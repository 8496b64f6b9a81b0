"""attach (issue 33 item 3): ``v_shadow_group_differences`` counts the pods of a
CompositePodGroup's leaves for the composite (podledger's verdict on a composite tree is on its
root, while each pod names its leaf PodGroup). Same columns; the grants stay.

Revision ID: 0029
Revises: 0027
Create Date: 2026-12-06
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0029"
down_revision = "0027"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "v_shadow_group_differences_v2.sql").read_text())


def downgrade() -> None:
    op.execute(
        (SQL / "v_shadow_group_differences.sql").read_text().replace("CREATE VIEW", "CREATE OR REPLACE VIEW")
    )
