"""A transaction that appended to the log is terminated if it then sits idle (default 5 s).

Every append holds the ledger lock (``ledger_serialize_appends``) until it commits or rolls back,
so a client that appended and then went idle without committing (a hung process, a forgotten
psql session, a paused debugger) would stall every other append indefinitely. The serialising
trigger now also sets ``idle_in_transaction_session_timeout`` for the rest of that transaction
(``set_config(..., true)``, transaction-local): once idle that long, PostgreSQL terminates the
session, its uncommitted append is rolled back and the lock passes on. Transactions that did
not append are unaffected. ``ledger.store`` sets the same value in the round trip that takes the
lock, which covers the short window between taking the lock and inserting.

The timeout is ``podledger.ledger_idle_timeout`` when set (``ALTER DATABASE ... SET
podledger.ledger_idle_timeout = '10s'``), else 5 s (eventsourcing's default, see
docs/semantics.md L.6).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"

UPGRADE = """
CREATE OR REPLACE FUNCTION ledger_serialize_appends() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(7243150001);
  -- the lock is held until COMMIT/ROLLBACK: never let an idle transaction keep it
  PERFORM set_config('idle_in_transaction_session_timeout',
                     coalesce(nullif(current_setting('podledger.ledger_idle_timeout', true), ''), '5s'),
                     true);
  RETURN NULL;
END
$$;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute((SQL / "serialize_appends.sql").read_text().split("CREATE TRIGGER")[0])
