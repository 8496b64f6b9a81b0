"""SQLAlchemy Core metadata of the schema: the target Alembic compares against.

The revisions in migrations/versions create these objects; tests/ledger/test_schema.py
checks that the migrated database and this metadata agree.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg


class XID8(sa.types.UserDefinedType[int]):
    """PostgreSQL's 64-bit transaction id (diagnostics; a possible xmin-horizon reader later)."""

    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "xid8"


metadata = sa.MetaData()

events = sa.Table(
    "events",
    metadata,
    sa.Column("position", sa.BigInteger, sa.Identity(always=True), primary_key=True),
    sa.Column("stream", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("schema_version", sa.SmallInteger, nullable=False, server_default="1"),
    sa.Column("event_id", pg.UUID(as_uuid=True), nullable=False),
    sa.Column("data", pg.JSONB, nullable=False),
    sa.Column("meta", pg.JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column(
        "recorded_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("clock_timestamp()")
    ),
    sa.Column("effective_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("tx_id", XID8(), nullable=False, server_default=sa.text("pg_current_xact_id()")),
    sa.Column("prev_hash", pg.BYTEA, nullable=False),
    sa.Column("hash", pg.BYTEA, nullable=False),
    sa.UniqueConstraint("stream", "version", name="events_stream_version_key"),
    sa.UniqueConstraint("event_id", name="events_event_id_key"),
    sa.CheckConstraint("version > 0", name="events_version_positive"),
    sa.Index("events_type_position_idx", "type", "position"),
    sa.Index("events_decision_pod_idx", sa.text("(data->>'pod')"), "position",
             postgresql_where=sa.text("type = 'PodBound'")),
    sa.Index("events_decision_group_idx", sa.text("(data->>'group')"), "position",
             postgresql_where=sa.text("type IN ('PodGroupUnschedulable', 'PodGroupScheduled', "
                                      "'PodGroupConditionChanged', 'PodGroupRetried')")),
)

streams = sa.Table(
    "streams",
    metadata,
    sa.Column("stream", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
)

objects = sa.Table(
    "objects",
    metadata,
    sa.Column("kind", sa.Text, primary_key=True),
    sa.Column("namespace", sa.Text, primary_key=True, server_default=""),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("uid", sa.Text, nullable=False),
    sa.Column("object", pg.JSONB, nullable=False),
    sa.Column("status", pg.JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("created_position", sa.BigInteger, nullable=False),
    sa.Column("updated_position", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

projection_checkpoints = sa.Table(
    "projection_checkpoints",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
)

event_type_counts = sa.Table(
    "event_type_counts",
    metadata,
    sa.Column("type", sa.Text, primary_key=True),
    sa.Column("count", sa.BigInteger, nullable=False),
    sa.Column("last_position", sa.BigInteger, nullable=False),
)
