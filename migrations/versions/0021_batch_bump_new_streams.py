"""ledger_begin_batch(): new streams by a plain INSERT; HOT-friendly ``streams`` pages.

Issue 13 (batched append >= 0.7x raw COPY): bumping the 1,000 streams of a batch was the largest
server cost above the COPY itself. For a batch whose streams are all new, the upsert of migration
0020 costs about twice a plain INSERT per row (speculative insertion); the function now reads
whether any of the batch's streams exists (one index scan) and inserts them plainly when none
does, falling back to the upsert when one does or a concurrent transaction created one
(migrations/sql/ledger_begin_batch_v3.sql). Same arguments, results and lock order.
``SET enable_seqscan = off`` (migration 0019) is carried by the new definition.

``streams`` gets ``fillfactor = 80``: a bump of an existing stream updates only ``version``, which
no index covers, so with room left on its page the update is a heap-only tuple (no new entry in
``streams_pkey``). Pages written from now on keep that room; nothing is rewritten.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"


def upgrade() -> None:
    op.execute((SQL / "ledger_begin_batch_v3.sql").read_text())
    op.execute("ALTER TABLE streams SET (fillfactor = 80)")


def downgrade() -> None:
    op.execute("ALTER TABLE streams RESET (fillfactor)")
    op.execute((SQL / "ledger_begin_batch_v2.sql").read_text())
