"""Temporal projection: every object version with the log range it was current, and per-namespace
quota usage totals, so state at any position (``get --at``, ``explain --at``, the state endpoint)
is an index lookup instead of a fold from position 0, and explain totals quota use without reading
every bound pod of the namespace. Indexes for explain and history's event lookups.

Both tables are maintained by the same fold as ``objects`` (ledger/projections/current.py), in
the same transaction as the append. The upgrade fills them by re-folding the log.

Revision ID: 0008
Revises: 0005 (the integrator relinks it after 0006/0007)
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # valid_to is the position of the next version (or of the deletion); an open version has the
    # largest bigint, so "current at P" is valid_from <= P AND valid_to > P, both btree ranges.
    op.execute(
        """
        CREATE TABLE object_versions (
            kind             text        NOT NULL,
            namespace        text        NOT NULL,
            name             text        NOT NULL,
            valid_from       bigint      NOT NULL,
            valid_to         bigint      NOT NULL DEFAULT 9223372036854775807,
            uid              text        NOT NULL,
            object           jsonb       NOT NULL,
            status           jsonb       NOT NULL,
            created_position bigint      NOT NULL,
            created_at       timestamptz NOT NULL,
            updated_at       timestamptz NOT NULL,
            PRIMARY KEY (kind, namespace, name, valid_from),
            CHECK (valid_from < valid_to)
        )
        """
    )
    # one object at P: the primary key (a handful of versions per object).
    # all objects of a kind/namespace at P: versions alive at P are those with valid_from <= P that
    # end after P; for an early P the primary key prefix with valid_from is selective, for a late P
    # (most versions already closed) the one on valid_to is.
    op.execute(
        "CREATE INDEX object_versions_open_idx ON object_versions (kind, namespace, valid_to, valid_from)"
    )
    # members of a pod group at P (explain of a group in a namespace of 10k pods)
    op.execute(
        "CREATE INDEX object_versions_pod_group_idx ON object_versions "
        "(namespace, (object->'spec'->'schedulingGroup'->>'podGroupName'), valid_from) WHERE kind = 'Pod'"
    )
    op.execute(
        "CREATE INDEX objects_pod_group_idx ON objects "
        "(namespace, (object->'spec'->'schedulingGroup'->>'podGroupName')) WHERE kind = 'Pod'"
    )
    # used: [[resource, total, pods], ...] over the pods Bound in the namespace, from valid_from until
    # the next row of the namespace.
    op.execute(
        """
        CREATE TABLE quota_usage (
            namespace  text   NOT NULL,
            valid_from bigint NOT NULL,
            used       jsonb  NOT NULL,
            PRIMARY KEY (namespace, valid_from)
        )
        """
    )
    # explain: victims of a preemptor; history: a preemptor's victims and admission rejections.
    op.execute(
        "CREATE INDEX events_preemptor_idx ON events ((data->>'preemptor'), position) WHERE type = 'PodPreempted'"
    )
    op.execute(
        "CREATE INDEX events_admission_rejected_idx ON events USING gin ((data->'rejected')) "
        "WHERE type = 'AdmissionRejected'"
    )
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON object_versions, quota_usage TO podledger_app")

    from ledger.projections.runner import refold_current

    refold_current(op.get_bind().connection.driver_connection, analytics=False)  # before 0025


def downgrade() -> None:
    op.execute(
        "DROP INDEX IF EXISTS objects_pod_group_idx, events_preemptor_idx, events_admission_rejected_idx"
    )
    op.execute("DROP TABLE IF EXISTS object_versions, quota_usage")
