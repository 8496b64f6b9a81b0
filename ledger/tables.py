"""SQLAlchemy Core metadata of the schema: the target Alembic compares against.

The revisions in migrations/versions create these objects; tests/ledger/test_schema.py
checks that the migrated database and this metadata agree.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg


class XID8(sa.types.UserDefinedType[int]):
    """PostgreSQL's 64-bit transaction id (diagnostics; a possible xmin-horizon reader later)."""

    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "xid8"


metadata = sa.MetaData()

# a pod's group name, as PostgreSQL spells the expression back (so the comparison matches)
POD_GROUP_EXPR = sa.text("(((object -> 'spec'::text) -> 'schedulingGroup'::text) ->> 'podGroupName'::text)")

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
    # set by every append from the server's clock, inside the event hash (migration 0024)
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("effective_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("tx_id", XID8(), nullable=False, server_default=sa.text("pg_current_xact_id()")),
    sa.Column("prev_hash", pg.BYTEA, nullable=False),
    sa.Column("hash", pg.BYTEA, nullable=False),
    sa.CheckConstraint("version > 0", name="events_version_positive"),
    sa.Index("events_type_position_idx", "type", "position"),
    sa.Index(
        "events_decision_pod_idx",
        sa.text("(data->>'pod')"),
        "position",
        postgresql_where=sa.text("type = 'PodBound'"),
    ),
    sa.Index(
        "events_decision_group_idx",
        sa.text("(data->>'group')"),
        "position",
        postgresql_where=sa.text(
            "type IN ('PodGroupUnschedulable', 'PodGroupScheduled', "
            "'PodGroupConditionChanged', 'PodGroupRetried')"
        ),
    ),
    sa.Index(
        "events_preemptor_idx",
        sa.text("(data->>'preemptor')"),
        "position",
        postgresql_where=sa.text("type = 'PodPreempted'"),
    ),
    sa.Index(
        "events_admission_rejected_idx",
        sa.text("(data->'rejected')"),
        postgresql_using="gin",
        postgresql_where=sa.text("type = 'AdmissionRejected'"),
    ),
    sa.Index(
        "events_pod_unschedulable_idx",
        sa.text("(data->>'pod')"),
        "position",
        postgresql_where=sa.text("type = 'PodUnschedulable'"),
    ),
    sa.Index(
        "events_input_position_idx",
        "position",
        postgresql_where=sa.text(
            "stream ~ '^(elasticquota|elasticquotatree|node|poddisruptionbudget|priorityclass)/'"
        ),
    ),
    # the raw edges of an analytics window (migration 0025)
    sa.Index(
        "events_analytics_at_idx",
        "effective_at",
        postgresql_where=sa.text(
            "type IN ('PodGroupUnschedulable', 'PodGroupRetried', 'PodUnschedulable', 'PodRetried', 'PodPreempted')"
        ),
    ),
)

# events is PARTITION BY RANGE (position) (migration 0016): its partitions (events_p<lo>,
# events_default) are not in this metadata, and the global uniqueness of event ids and stream
# versions lives here, one row per event written by the trigger events_record_keys. events has no
# index by stream (migration 0018): a read by stream looks the positions up here
# (``position IN (SELECT k.position FROM event_keys k WHERE k.stream ...)``).
PARTITION_NAME = re.compile(r"^events_(p[0-9]+|default)$")

event_keys = sa.Table(
    "event_keys",
    metadata,
    sa.Column("event_id", pg.UUID(as_uuid=True), nullable=False),
    sa.Column("stream", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("event_id", name="events_event_id_key"),
    sa.UniqueConstraint("stream", "version", name="events_stream_version_key"),
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
    sa.Index("objects_pod_group_idx", "namespace", POD_GROUP_EXPR, postgresql_where=sa.text("kind = 'Pod'")),
)

object_versions = sa.Table(
    "object_versions",
    metadata,
    sa.Column("kind", sa.Text, primary_key=True),
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("valid_from", sa.BigInteger, primary_key=True),
    sa.Column("valid_to", sa.BigInteger, nullable=False, server_default="9223372036854775807"),
    sa.Column("uid", sa.Text, nullable=False),
    sa.Column("object", pg.JSONB, nullable=False),
    sa.Column("status", pg.JSONB, nullable=False),
    sa.Column("created_position", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("valid_from < valid_to"),
    sa.Index("object_versions_open_idx", "kind", "namespace", "valid_to", "valid_from"),
    sa.Index(
        "object_versions_pod_group_idx",
        "namespace",
        POD_GROUP_EXPR,
        "valid_from",
        postgresql_where=sa.text("kind = 'Pod'"),
    ),
)

quota_usage = sa.Table(
    "quota_usage",
    metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("valid_from", sa.BigInteger, primary_key=True),
    sa.Column("used", pg.JSONB, nullable=False),
)

# Windowed analytics (migration 0025, ledger/projections/analytics.py): hourly (and per-minute)
# buckets and one row per start, written by the inline projection.
analytics_hourly = sa.Table(
    "analytics_hourly",
    metadata,
    sa.Column("metric", sa.Text, primary_key=True),
    sa.Column("hour", sa.DateTime(timezone=True), primary_key=True),
    sa.Column("k1", sa.Text, primary_key=True, server_default=sa.text("''")),
    sa.Column("k2", sa.Text, primary_key=True, server_default=sa.text("''")),
    sa.Column("k3", sa.Text, primary_key=True, server_default=sa.text("''")),
    sa.Column("n", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("delta", sa.Float(53), nullable=False, server_default="0"),
    sa.Column("tail", sa.Float(53), nullable=False, server_default="0"),
)

analytics_waits = sa.Table(
    "analytics_waits",
    metadata,
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("wait_seconds", sa.Float(53), nullable=False),
    sa.Index("analytics_waits_at_idx", "at"),
    sa.Index("analytics_waits_namespace_at_idx", "namespace", "at"),
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

# Which event hash rule applies from which position (migration 0024, ledger/verify.py).
event_hash_versions = sa.Table(
    "event_hash_versions",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), primary_key=True),
    sa.Column("first_position", sa.BigInteger, nullable=False),
    sa.Column("version", sa.SmallInteger, nullable=False),
)

# Anchored history (migration 0007, ledger/anchor.py): the Merkle tree and signed checkpoints.
merkle_leaves = sa.Table(
    "merkle_leaves",
    metadata,
    sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("position", sa.BigInteger, nullable=False, unique=True),
    sa.Column("hash", sa.LargeBinary, nullable=False),
)

merkle_nodes = sa.Table(
    "merkle_nodes",
    metadata,
    sa.Column("level", sa.SmallInteger, primary_key=True, autoincrement=False),
    sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("hash", sa.LargeBinary, nullable=False),
)

checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), primary_key=True),
    sa.Column("origin", sa.Text, nullable=False),
    sa.Column("tree_size", sa.BigInteger, nullable=False),
    sa.Column("root", sa.LargeBinary, nullable=False),
    sa.Column("key_name", sa.Text, nullable=False),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
    sa.Index("checkpoints_size_idx", "tree_size", "id"),
)

# Derived data, not the log (migration 0031, api/services/pending_predictions.py): the latest
# predicted start of each pending PodGroup or plain pod, replaced as a whole by each refresh.
pending_predictions = sa.Table(
    "pending_predictions",
    metadata,
    sa.Column("kind", sa.Text, primary_key=True),
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("as_of_position", sa.BigInteger, nullable=False),
    sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
    sa.Column("p50_seconds", sa.Float(53)),
    sa.Column("p90_seconds", sa.Float(53)),
    sa.Column("point_seconds", sa.Float(53)),
    sa.Column("cases", sa.Integer, nullable=False),
    sa.Column("censored", sa.Integer, nullable=False),
    sa.Column("holders", sa.Integer, nullable=False),
    sa.Column("queue_ahead", sa.Integer, nullable=False),
    sa.Column("closest_domain", sa.Text),
    sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
    sa.CheckConstraint("kind IN ('PodGroup', 'Pod')", name="pending_predictions_kind_check"),
)
