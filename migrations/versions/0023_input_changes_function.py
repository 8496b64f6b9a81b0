"""The input changes of explain and history as a function with a pinned plan (issue 14):
``ledger_input_changes``.

``explain`` and ``history`` list the inputs that changed since a group's or pod's last attempt
(``ledger/queries/inputs.py``). As a statement over the partitioned log it was planned on every
call: on a 1M-event log, 1.4 ms of planning for 0.1 ms of execution, the largest single cost of
a live ``explain``. The function plans its query once per session with sequential scans, hash
and merge joins disabled, so the plan is the one that is right at every size (the partial index
of input events, ``event_keys`` probes), also when it was made on an empty ledger (migration
0019).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "ledger_input_changes.sql").read_text())


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS ledger_input_changes(bigint, bigint, text[], text[])")
