"""The event log as a logical replication stream (issue 35, item 3).

``podledger_events`` publishes the inserts of ``events`` (pgoutput): a PostgreSQL subscriber,
Debezium or ``podledger export --follow`` receives every event, in commit order, which is the
log's position order (appends are serialised by the ledger lock). ``events`` is partitioned by
position: the changes of its partitions are published as changes of ``events`` itself
(``publish_via_partition_root``), so a consumer sees one table whatever partitions come and go.
Only inserts are published: the log is append-only (updates and deletes are refused by the
ledger's triggers and privileges; detaching an archived partition is not a change of the log).

Decoding needs ``wal_level = logical`` on the server; creating the publication does not, so the
migration runs on any server, and a consumer reports the missing setting when it creates its slot.

Revision ID: 0027
Revises: 0025
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0027"
down_revision = "0025"
branch_labels = None
depends_on = None

PUBLICATION = "podledger_events"


def upgrade() -> None:
    op.execute(
        f"CREATE PUBLICATION {PUBLICATION} FOR TABLE events "
        "WITH (publish = 'insert', publish_via_partition_root = true)"
    )


def downgrade() -> None:
    op.execute(f"DROP PUBLICATION IF EXISTS {PUBLICATION}")
