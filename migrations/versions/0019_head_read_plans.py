"""Chain-head reads that stay index probes (issue 13): the functions that read the newest event
(``ledger_append_one`` and ``ledger_begin_batch``: ``ORDER BY position DESC LIMIT 1``;
``ledger_notify_append``: ``max(position)``) run with ``enable_seqscan = off``.

PL/pgSQL plans each static statement once per session and keeps the plan until the tables'
statistics change. A session that starts on a small or freshly made log (a new ledger, the
template a simulation copies, a bench run) plans these reads as a sequential scan of every
partition plus a sort, and keeps that plan while the log grows: each append then read the whole
log (the openb trace replay spent ~0.4 ms of server CPU per append here, growing with the log,
until autovacuum's next ANALYZE replanned it). With sequential scans disabled inside these
functions the plan is always the backward scan of each partition's primary-key index (one probe
per partition), whatever the statistics say. Nothing else in the functions scans a table.

The setting is attached with ``ALTER FUNCTION ... SET`` to every function of these names, so it
does not depend on their argument lists; a later ``CREATE OR REPLACE`` of one of them must carry
``SET enable_seqscan = off`` itself (or re-run this).

Revision ID: 0019
Revises: 0017 (the lead re-chains it after 0018)
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0017"
branch_labels = None
depends_on = None

FUNCTIONS = ("ledger_append_one", "ledger_begin_batch", "ledger_notify_append")


def _alter(action: str) -> None:
    names = ", ".join(f"'{name}'" for name in FUNCTIONS)
    op.execute(
        f"""
DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
           WHERE p.proname IN ({names}) AND p.pronamespace = to_regnamespace(current_schema())
  LOOP
    EXECUTE format('ALTER FUNCTION %s {action}', f);
  END LOOP;
END
$$"""
    )


def upgrade() -> None:
    _alter("SET enable_seqscan = off")


def downgrade() -> None:
    _alter("RESET enable_seqscan")
