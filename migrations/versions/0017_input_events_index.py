"""Input events by position (issue 14): explain's "what changed since the last attempt" reads the
edits of quotas, quota trees, nodes, PodDisruptionBudgets and priority classes in a range of
positions. Without an index of its own the range was scanned event by event, so live explain of
a group scheduled long ago read every event since (hundreds of thousands on a long log); this
partial index holds the input streams' events only.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# a query must repeat the predicate word for word to use the index (migrations/sql/ledger_input_changes.sql does)
PREDICATE = "stream ~ '^(elasticquota|elasticquotatree|node|poddisruptionbudget|priorityclass)/'"


def upgrade() -> None:
    op.execute(f"CREATE INDEX events_input_position_idx ON events (position) WHERE {PREDICATE}")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS events_input_position_idx")
