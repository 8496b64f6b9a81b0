"""The admission read and the projection's read as functions with pinned plans (issue 13):
``ledger_admission_read`` and ``ledger_projection_read``.

Every apply and delete request starts with one read of its objects' manifests, their streams'
versions and every PriorityClass (``api/services/objects.py`` ``_DbState``). Sent as a
statement with array parameters it was planned on every call: with the arrays' lengths known,
each custom plan looked cheaper than the generic one, so PostgreSQL never switched (replaying
the openb trace: 0.18 ms of planning per request, 4x its execution, ~2.8 s of the server's
time). The function plans its query once per session (``plan_cache_mode =
force_generic_plan``) with sequential scans, hash and merge joins disabled, so the plan is the
nested loop of primary-key probes whatever statistics the tables had when it was made (a plan
made on an empty ledger must not scan the tables once they are large: migration 0019). Its
keys arrive as one JSON document (no per-element array encoding in the client).

``ledger_projection_read`` does the same for the two reads of every projection write (the
touched objects' rows and the namespaces' latest quota usage: ~0.15 ms of planning per write),
and returns both as JSON documents in one row. The scratch fold of
``ledger.projections.temporal.fold_objects_at`` (into a temporary ``objects`` table that shadows
the real one) keeps the statements.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "ledger_admission_read.sql").read_text())
    op.execute((SQL / "ledger_projection_read.sql").read_text())


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS ledger_projection_read(jsonb, jsonb)")
    op.execute("DROP FUNCTION IF EXISTS ledger_admission_read(jsonb, text)")
