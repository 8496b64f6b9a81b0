"""Stream look-ups through ``event_keys`` (issue 13: batched append >= 0.7x raw COPY on the
partitioned log).

Migration 0016 kept a non-unique index ``events_stream_version_idx`` on ``events`` beside the
unique ``(stream, version)`` of ``event_keys``: every appended event paid for two btree entries
on the same key. Measured on the 2-core machine (index made and dropped between interleaved
batches): ~3 us of ~20-22 us per batched event (docs/benchmarks.md).

``event_keys`` (one row per event, filled in the inserting statement by ``events_record_keys``)
already has ``(stream, version) -> position``, so the readers that select events by stream
look the positions up there and fetch the events by primary key (``position IN (SELECT
k.position FROM event_keys k WHERE k.stream ...)``): ledger/store.py ``read_stream``,
ledger/queries (log, explain, inputs), api/services/demo.py, api/attach/mirror.py, and the view
``v_pending_now`` (replaced here: a pod's last attempt is read newest first through
``event_keys``; its columns are unchanged, so owner and grants stay). ``object_history`` takes
its positions from three indexes instead of an ``OR`` that would now scan the whole log.

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
# a pod's last attempt: its stream's events newest first through event_keys (by version, which
# within a stream follows position), each fetched by primary key until one is an attempt
OLD_LOOKUP = """    FROM events x
    LEFT JOIN events d ON x.type = 'PodRetried' AND d.position = (x.data->>'diagnosis_position')::bigint
    WHERE r.kind = 'Pod' AND x.stream = 'sched/pod/' || r.namespace || '/' || r.name
      AND x.type IN ('PodUnschedulable', 'PodRetried')
    ORDER BY x.position DESC LIMIT 1"""
NEW_LOOKUP = """    FROM event_keys k
    JOIN events x ON x.position = k.position
    LEFT JOIN events d ON x.type = 'PodRetried' AND d.position = (x.data->>'diagnosis_position')::bigint
    WHERE r.kind = 'Pod' AND k.stream = 'sched/pod/' || r.namespace || '/' || r.name
      AND x.type IN ('PodUnschedulable', 'PodRetried')
    ORDER BY k.version DESC LIMIT 1"""


def _pending_now(old: bool) -> str:
    text = (SQL / "v_pending_now_v2.sql").read_text()
    assert OLD_LOOKUP in text
    return text if old else text.replace(OLD_LOOKUP, NEW_LOOKUP)


def upgrade() -> None:
    op.execute(_pending_now(old=False))
    op.execute("DROP INDEX events_stream_version_idx")
    op.execute("ANALYZE event_keys")


def downgrade() -> None:
    op.execute("CREATE INDEX events_stream_version_idx ON events (stream, version)")
    op.execute(_pending_now(old=True))
