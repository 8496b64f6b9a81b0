"""The application login boxed in, and recorded_at inside the event hash (issue 37, items 1-2).

- Every SECURITY DEFINER function pins ``search_path`` to ``public, pg_temp`` (pg_temp last):
  ``ledger_record_event_keys`` and ``ledger_ensure_partitions`` used ``FROM CURRENT``, which
  left pg_temp searched first, so a temporary table named ``event_keys`` (with a trigger on
  it) made them write there, or run the trigger, as the owner.
- TEMP on the database and CREATE on schema public belong to the owner only
  (``database_privileges.sql``); ``objects_at`` reads the view ``podledger_as_of.objects``
  instead of a temporary view (``as_of_objects.sql``).
- The log refuses at insert time a row whose chain link, position, (stream, version),
  hash length or recorded_at is wrong (``ledger_record_event_keys_v2.sql``); the application
  may no longer set ``position`` or ``tx_id``.
- ``merkle_leaves``, ``merkle_nodes`` and ``checkpoints`` are written only by
  ``ledger_extend_tree`` and ``ledger_store_checkpoint`` (SECURITY DEFINER), which compute or
  check what they store against the log.
- Hash version 2: the event hash covers ``recorded_at``, which the server's clock sets once the
  ledger lock is held (``ledger_append_one_v2.sql``; the batched append reads it in the round
  trip of its stream bump). ``recorded_at`` has no default any more: every append names it.
  ``event_hash_versions`` records that version 2 starts at the first position drawn after this
  migration; events before it are still verified under version 1.

The downgrade restores the functions, grants and defaults of 0023, gives TEMP back to PUBLIC
(the code of 0023 needs it for its temporary views), and starts a version-1 segment in
``event_hash_versions``, which it keeps: the events hashed under version 2 stay verifiable.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
LEDGER_LOCK = 7243150001
DEFINERS = ("ledger_ensure_partitions(int, bigint)", "ledger_record_event_keys()")
APPEND_ONE_SIG = "text, int, text, smallint, uuid, bytea, bytea, timestamptz, bytea, bytea, boolean"


def _ddl(statement: str) -> None:
    """Run SQL text as is (no bind-parameter parsing) in the migration's transaction."""
    op.get_bind().connection.driver_connection.execute(statement)


def _segment(version: int) -> None:
    """Hash ``version`` from the first position drawn after now (no append is in flight: the
    ledger lock is held until the migration commits)."""
    _ddl(f"SELECT pg_advisory_xact_lock({LEDGER_LOCK})")
    drawn = int(op.get_bind().execute(sa.text("SELECT ledger_position_drawn()")).scalar_one())
    _ddl(f"INSERT INTO event_hash_versions (first_position, version) VALUES ({drawn + 1}, {version})")


def upgrade() -> None:
    _ddl((SQL / "event_hash_versions.sql").read_text())
    _segment(2)  # positions before the first segment are hashed under version 1
    _ddl("ALTER TABLE events ALTER COLUMN recorded_at DROP DEFAULT")
    for name in (
        "ledger_record_event_keys_v2.sql",
        "ledger_append_one_v2.sql",
        "ledger_begin_batch_v4.sql",
        "ledger_tree_root.sql",
        "ledger_extend_tree.sql",
        "ledger_store_checkpoint.sql",
        "database_privileges.sql",
        "as_of_objects.sql",
        "grants_boxed_app.sql",
    ):
        _ddl((SQL / name).read_text())
    for fn in DEFINERS:
        _ddl(f"ALTER FUNCTION {fn} SET search_path = public, pg_temp")


def downgrade() -> None:
    _segment(1)
    _ddl("ALTER TABLE events ALTER COLUMN recorded_at SET DEFAULT clock_timestamp()")
    _ddl("DROP FUNCTION IF EXISTS ledger_store_checkpoint(text, bigint, bytea, text, text)")
    _ddl("DROP FUNCTION IF EXISTS ledger_extend_tree(bigint, bigint)")
    _ddl("DROP FUNCTION IF EXISTS ledger_tree_root(bigint)")
    _ddl("DROP SCHEMA IF EXISTS podledger_as_of CASCADE")
    _ddl((SQL / "ledger_begin_batch_v3.sql").read_text())
    # the single append of migration 0016 (idempotency through event_keys)
    append_one = (SQL / "ledger_append_one.sql").read_text()
    looked_up = "FROM events e WHERE e.event_id = p_event_id"
    assert looked_up in append_one
    _ddl(append_one.replace(looked_up, "FROM event_keys e WHERE e.event_id = p_event_id"))
    _ddl(f"ALTER FUNCTION ledger_append_one({APPEND_ONE_SIG}) SET enable_seqscan = off")  # as 0019 left it
    # the key recording of migration 0016, search_path still pinned
    _ddl(
        """
        CREATE OR REPLACE FUNCTION ledger_record_event_keys() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        BEGIN
          INSERT INTO event_keys (event_id, stream, version, position)
          SELECT n.event_id, n.stream, n.version, n.position FROM new_events n;
          RETURN NULL;
        END
        $$
        """
    )
    _ddl("REVOKE INSERT ON events FROM podledger_app")
    _ddl("GRANT INSERT ON events TO podledger_app")
    _ddl("GRANT INSERT ON merkle_leaves, merkle_nodes, checkpoints TO podledger_app")
    _ddl("GRANT USAGE, SELECT ON SEQUENCE checkpoints_id_seq TO podledger_app")
    _ddl("DO $$ BEGIN EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO PUBLIC', current_database()); END $$")
