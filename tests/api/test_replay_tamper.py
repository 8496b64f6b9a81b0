"""replay --verify reads the log as lean rows (ledger/replay_rows.py) and compares payloads without
re-hashing event ids: a forged retry pointer, or a forged decision after a run of unchanged
retries, is still reported as a mismatch at its position."""

from __future__ import annotations

import psycopg
import pytest

from api.services.replay import is_cycle, verify_replay
from bench.retries import run
from ledger import store

PODS = 12
MINUTES = 10


@pytest.fixture()
def compacted(database):
    run(database, PODS, MINUTES)
    rep = verify_replay(database)
    assert rep.ok, rep.mismatches[:3]
    return database


def _forge(db_url: str, sql: str) -> int:
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")
        row = su.execute(sql + " RETURNING position").fetchone()
    assert row is not None
    return int(row[0])


def _mismatch_at(database, position: int) -> dict:
    rep = verify_replay(database)
    assert not rep.ok
    first = rep.mismatches[0]
    assert first["position"] == position, rep.mismatches[:3]
    return first


@pytest.mark.parametrize(
    ("typ", "field", "value"),
    [
        ("PodRetried", "attempts", "999"),
        ("PodRetried", "diagnosis_position", "1"),
        ("PodGroupRetried", "attempts", "999"),
    ],
)
def test_a_forged_retry_pointer_is_a_mismatch(compacted, db_url, typ, field, value):
    pos = _forge(
        db_url,
        f"UPDATE events SET data = jsonb_set(data, '{{{field}}}', '{value}') WHERE position = "
        f"(SELECT max(position) FROM events WHERE type = '{typ}')",
    )
    first = _mismatch_at(compacted, pos)
    assert first["recorded"][1] == typ and first["recorded"][2][field] == int(value)
    assert first["replayed"][2][field] != int(value)


def test_a_forged_backoff_after_unchanged_retries_is_a_mismatch(compacted, db_url):
    pos = _forge(
        db_url,
        "UPDATE events SET data = jsonb_set(data, '{backoff}', '12345.0') WHERE position = "
        "(SELECT max(position) FROM events WHERE type = 'PodRetried' AND data ? 'backoff')",
    )
    first = _mismatch_at(compacted, pos)
    assert first["recorded"][2]["backoff"] == 12345.0


def _logged_cycles(database) -> int:
    return sum(1 for ev in store.iter_all(database) if is_cycle(ev))


def test_the_cycles_counted_are_the_logs(compacted, db_url):
    """A matching run counts one cycle per cycle replayed; a differing one counts the log's
    cycle events (here one fewer than the replay ran)."""
    assert verify_replay(compacted).cycles == _logged_cycles(compacted)
    pos = _forge(
        db_url,
        "UPDATE events SET type = 'PodRequeued' WHERE position = "
        "(SELECT max(position) FROM events WHERE type = 'SchedulingCycleCompleted')",
    )
    rep = verify_replay(compacted)
    assert rep.mismatches[0]["position"] == pos
    assert rep.cycles == _logged_cycles(compacted)
