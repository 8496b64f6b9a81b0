"""Tampering by a superuser (``SET session_replication_role = replica`` bypasses the triggers
that make the log append-only) is found by ``podledger verify``: exit code 1 and the position
named. Covered: a changed payload, a changed payload with its own hash recomputed (found at the
next event), and a deleted event (found at its successor, whose ``prev_hash`` no longer
matches). Each tampering is undone before the next, and ``verify`` is clean again in between.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import orjson
import psycopg
import pytest

from ledger.canonical import canonical, event_hash
from ledger.verify import verify_chain

from .conftest import PODLEDGER, ROOT, apply_text, event_count, nodes_yaml, pod_yaml


def _verify_cli(db_url: str) -> tuple[int, str]:
    env = dict(os.environ, PODLEDGER_DATABASE_URL=db_url)
    p = subprocess.run([PODLEDGER, "verify"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out
    return p.returncode, out


def _rehash(su: psycopg.Connection, position: int) -> None:
    """Recompute one event's own hash from its (changed) contents, as a forger would."""
    r = su.execute(
        "SELECT prev_hash, stream, version, type, schema_version, event_id, data::text, meta::text, "
        "effective_at, recorded_at FROM events WHERE position = %s",
        (position,),
    ).fetchone()
    h = event_hash(
        bytes(r[0]),
        stream=r[1],
        version=r[2],
        type=r[3],
        schema_version=r[4],
        event_id=r[5],
        data_bytes=canonical(orjson.loads(r[6])),
        meta_bytes=canonical(orjson.loads(r[7])),
        effective_at=r[8],
        recorded_at=r[9],  # hash version 2 (the ledger was made after migration 0024)
    )
    su.execute("UPDATE events SET hash = %s WHERE position = %s", (h, position))


@contextmanager
def _superuser(db_url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")  # triggers off: tampering possible
        yield su


@pytest.mark.timeout(90)
def test_verify_finds_modified_and_deleted_events(database, db_url):
    apply_text(database, nodes_yaml(3))
    for i in range(6):
        apply_text(database, pod_yaml(f"p-{i}"))
    n = event_count(database)
    assert n == 9
    code, out = _verify_cli(db_url)
    assert code == 0 and f"ok: {n} events" in out, out

    with psycopg.connect(db_url, autocommit=True) as plain:  # without the bypass it is refused
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            plain.execute("UPDATE events SET data = data WHERE position = 4")

    # 1. a modified payload: found at that position
    with _superuser(db_url) as su:
        original = su.execute("SELECT data::text FROM events WHERE position = 4").fetchone()[0]
        su.execute(
            "UPDATE events SET data = jsonb_set(data, '{object,metadata,labels}', '{\"tampered\": \"yes\"}') "
            "WHERE position = 4"
        )
    code, out = _verify_cli(db_url)
    assert code == 1 and "BROKEN at position 4" in out and "modified" in out, out
    assert verify_chain(database).first_bad_position == 4

    # 2. the same change with the event's own hash recomputed: found at the next event
    with _superuser(db_url) as su:
        _rehash(su, 4)
    code, out = _verify_cli(db_url)
    assert code == 1 and "BROKEN at position 5" in out and "missing or reordered" in out, out

    # undo: restore the payload and its hash; the chain is whole again
    with _superuser(db_url) as su:
        su.execute("UPDATE events SET data = %s::jsonb WHERE position = 4", (original,))
        _rehash(su, 4)
    code, out = _verify_cli(db_url)
    assert code == 0 and f"ok: {n} events" in out, out

    # 3. a deleted event: found at its successor
    with _superuser(db_url) as su:
        su.execute("DELETE FROM events WHERE position = 6")
    code, out = _verify_cli(db_url)
    assert code == 1 and "BROKEN at position 7" in out and "missing" in out, out
    res = verify_chain(database)
    assert not res.ok and res.first_bad_position == 7 and res.checked == 5


@pytest.mark.timeout(60)
def test_verify_finds_a_deleted_newest_event(database, db_url):
    apply_text(database, nodes_yaml(3))
    n = event_count(database)
    with _superuser(db_url) as su:
        su.execute("DELETE FROM events WHERE position = %s", (n,))
    code, out = _verify_cli(db_url)
    assert code == 1, out
