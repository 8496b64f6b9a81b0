"""ledger_begin_batch(): the stream bump as one upsert, without migration 0010's subtransaction.

Migration 0010 inserted the batch's streams with a plain INSERT inside a subtransaction and,
on unique_violation, rolled it back and ran the upsert. Replaying the openb trace, most batches
bump existing streams, so most calls paid for the subtransaction, the failed INSERT and its
rollback before the upsert (issue 13: ``ledger_begin_batch`` 1.6 s of server time). The upsert
alone gives the same results. ``SET enable_seqscan = off`` (migration 0019) is carried by the
new definition. No data changes.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "ledger_begin_batch_v2.sql").read_text())


def downgrade() -> None:
    op.execute((SQL / "ledger_begin_batch.sql").read_text())
    op.execute("ALTER FUNCTION ledger_begin_batch(text[], int[]) SET enable_seqscan = off")
