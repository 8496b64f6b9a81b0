"""The predicted start in ``v_pending_now`` (issue 34 item 1): a view cannot run the estimator,
so its output is derived data in a table, ``pending_predictions`` (one row per pending PodGroup
or plain pod: p50/p90, the cases it rests on, the position it was computed as of), replaced as
a whole by ``api/services/pending_predictions.py`` (the worker after it schedules, and
``podledger predictions refresh``). Nothing is written to the log: predictions are not facts.

``v_pending_now`` v3 (``v_pending_now_v3.sql``) keeps the columns of 0018's view and adds
``predicted_start_p50``, ``predicted_start_p90``, ``prediction_cases``,
``predicted_as_of_position`` and ``predicted_as_of`` (NULL when none was computed). Grants: the
application login may SELECT, INSERT and DELETE the table (no UPDATE, no TRUNCATE); the
reporting role reads it only through the view, whose grants stay.

The downgrade drops the new columns (the view is dropped and 0018's made again, with its
grants) and the table.

Revision ID: 0031
Revises: 0029
Create Date: 2026-12-06
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = "0031"
down_revision = "0029"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[1] / "sql"
VIEW_READERS = ("podledger_reporting", "podledger_app")


def _ddl(statement: str) -> None:
    """Run SQL text as is (no bind-parameter parsing) in the migration's transaction."""
    op.get_bind().connection.driver_connection.execute(statement)


def _view_of_0018() -> str:
    """The ``v_pending_now`` migration 0018 made (v2 with its stream look-up through event_keys)."""
    path = Path(__file__).with_name("0018_stream_lookups_through_event_keys.py")
    spec = importlib.util.spec_from_file_location("podledger_migration_0018", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module._pending_now(old=False))


def upgrade() -> None:
    _ddl((SQL / "pending_predictions.sql").read_text())
    _ddl((SQL / "v_pending_now_v3.sql").read_text())  # the same columns first: replaced in place


def downgrade() -> None:
    _ddl("DROP VIEW v_pending_now")  # a view's columns cannot be dropped in place
    _ddl(_view_of_0018())
    for role in VIEW_READERS:
        _ddl(f"GRANT SELECT ON v_pending_now TO {role}")
    _ddl("DROP TABLE pending_predictions")
