"""Cheaper keys for the partitioned log (issue 13: batched append >= 0.7x raw COPY).

1. ``events_record_keys`` without a transition table. PostgreSQL's COPY into a partitioned table
falls back from multi-row inserts to one row at a time when the table has an insert trigger
with a transition table (copyfrom.c: "For partitioned tables we can't support multi-inserts
when there are any statement level insert triggers"): a no-op trigger with ``REFERENCING NEW
TABLE`` alone cost the batched append about a quarter of its speed (measured, bench.append's
setup). The trigger stays statement-level and keeps covering every writer, but reads the
statement's rows back from ``events``: every event above the high-water mark of ``event_keys``
(``event_keys_head.position``, advanced in the same statement) is new, because keys are
written in position order under the ledger lock (``events_serialize``), and a nested insert's
trigger simply takes the outer statement's rows with its own. The application role may no
longer name ``position`` in an insert (column-level INSERT grant), so no event can land below
the mark; as before it cannot write ``event_keys`` (nor ``event_keys_head``).

2. No index ``events_stream_version_idx``. Migration 0016 kept a non-unique index ``events_stream_version_idx`` on ``events`` beside the
unique ``(stream, version)`` of ``event_keys``: every appended event paid for two btree entries
on the same key (about a sixth of the batched append's server time).

``event_keys`` (one row per event, filled in the inserting statement by ``events_record_keys``)
already has ``(stream, version) -> position``, so the readers that select events by stream
look the positions up there and fetch the events by primary key (``position IN (SELECT
k.position FROM event_keys k WHERE k.stream ...)``): ledger/store.py ``read_stream``,
ledger/queries (log, explain, inputs), api/services/demo.py, api/attach/mirror.py, and the view
``v_pending_now`` (replaced here; its columns are unchanged, so owner and grants stay).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
OLD_LOOKUP = "WHERE r.kind = 'Pod' AND x.stream = 'sched/pod/' || r.namespace || '/' || r.name"
NEW_LOOKUP = (
    "WHERE r.kind = 'Pod' AND x.position IN (SELECT k.position FROM event_keys k "
    "WHERE k.stream = 'sched/pod/' || r.namespace || '/' || r.name)"
)


def _pending_now(old: bool) -> str:
    text = (SQL / "v_pending_now_v2.sql").read_text()
    assert OLD_LOOKUP in text
    return text if old else text.replace(OLD_LOOKUP, NEW_LOOKUP)


APP_INSERT_COLUMNS = (
    "stream, version, type, schema_version, event_id, data, meta, recorded_at, effective_at, tx_id, "
    "prev_hash, hash"
)
RECORD_KEYS = """
CREATE OR REPLACE FUNCTION ledger_record_event_keys() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  v_from bigint;
  v_to bigint;
BEGIN
  -- the caller holds the ledger lock (events_serialize): nobody else moves the mark
  SELECT h.position INTO v_from FROM event_keys_head h FOR UPDATE;
  WITH k AS (
    INSERT INTO event_keys (event_id, stream, version, position)
    SELECT e.event_id, e.stream, e.version, e.position FROM events e WHERE e.position > v_from
    RETURNING position
  )
  SELECT max(k.position) INTO v_to FROM k;
  IF v_to IS NOT NULL THEN
    UPDATE event_keys_head SET position = v_to;
  END IF;
  RETURN NULL;
END
$$;
"""
OLD_RECORD_KEYS = """
CREATE OR REPLACE FUNCTION ledger_record_event_keys() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO event_keys (event_id, stream, version, position)
  SELECT n.event_id, n.stream, n.version, n.position FROM new_events n;
  RETURN NULL;
END
$$;
"""


def upgrade() -> None:
    op.execute(
        "CREATE TABLE event_keys_head (one boolean PRIMARY KEY DEFAULT true CHECK (one), position bigint NOT NULL)"
    )
    op.execute("INSERT INTO event_keys_head (position) SELECT coalesce(max(position), 0) FROM event_keys")
    op.execute("REVOKE ALL ON event_keys_head FROM PUBLIC")
    op.execute("DROP TRIGGER events_record_keys ON events")
    op.execute(RECORD_KEYS)
    op.execute(
        "CREATE TRIGGER events_record_keys AFTER INSERT ON events "
        "FOR EACH STATEMENT EXECUTE FUNCTION ledger_record_event_keys()"
    )
    # the application names no position: every event it adds lands above the mark
    op.execute("REVOKE INSERT ON events FROM podledger_app")
    op.execute(f"GRANT INSERT ({APP_INSERT_COLUMNS}) ON events TO podledger_app")
    op.execute(_pending_now(old=False))
    op.execute("DROP INDEX events_stream_version_idx")
    op.execute("ANALYZE event_keys")


def downgrade() -> None:
    op.execute("CREATE INDEX events_stream_version_idx ON events (stream, version)")
    op.execute(_pending_now(old=True))
    op.execute(f"REVOKE INSERT ({APP_INSERT_COLUMNS}) ON events FROM podledger_app")
    op.execute("GRANT INSERT ON events TO podledger_app")
    op.execute("DROP TRIGGER events_record_keys ON events")
    op.execute(OLD_RECORD_KEYS)
    op.execute(
        "CREATE TRIGGER events_record_keys AFTER INSERT ON events REFERENCING NEW TABLE AS new_events "
        "FOR EACH STATEMENT EXECUTE FUNCTION ledger_record_event_keys()"
    )
    op.execute("DROP TABLE event_keys_head")
