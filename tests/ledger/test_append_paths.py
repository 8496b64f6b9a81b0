"""The three append paths (one server call, unnest INSERT, binary COPY) store the same hash
chain as ``canonical.event_hash``, and the pool recovers from a dead connection by itself."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import psycopg
import pytest

from ledger import store
from ledger.canonical import GENESIS, canonical, event_hash
from ledger.errors import ConcurrencyError
from ledger.sql import scalar
from ledger.store import COPY_THRESHOLD, NewEvent
from ledger.verify import verify_chain

# stream, type-free text and meta values JSON escapes differently than plain ASCII
ODD = ['q"uote', "back\\slash", "tab\tnew\nline", "ctl\x01\x1f", "ünï€😀", "slash/</script>", "del\x7f"]


def odd_event(i: int, eff: datetime | None = None) -> NewEvent:
    s = ODD[i % len(ODD)]
    return NewEvent(
        f"odd/{s}/{i}",
        "NoteRecorded",
        {"text": s * (i % 3 + 1), "attributes": {s: i}},
        meta={"why": s, "n": i} if i % 2 else {},
        effective_at=eff,
    )


def python_chain(db_url: str) -> tuple[int, int]:
    """Recompute every hash in Python from the stored columns (hash version 2: the ledger was
    made after migration 0024); return (checked, mismatches)."""
    import orjson

    prev, bad, n = GENESIS, 0, 0
    with psycopg.connect(db_url) as c:
        assert c.execute("SELECT first_position, version FROM event_hash_versions").fetchall() == [(1, 2)]
        for stream, version, typ, sv, eid, data, meta, eff, ph, h, rec in c.execute(
            "SELECT stream, version, type, schema_version, event_id, data::text, meta::text, effective_at, "
            "prev_hash, hash, recorded_at FROM events ORDER BY position"
        ):
            expect = event_hash(
                prev,
                stream=stream,
                version=version,
                type=typ,
                schema_version=sv,
                event_id=eid,
                data_bytes=canonical(orjson.loads(data)),
                meta_bytes=canonical(orjson.loads(meta)),
                effective_at=eff,
                recorded_at=rec,
            )
            bad += (bytes(ph) != prev) + (bytes(h) != expect)
            prev, n = bytes(h), n + 1
    return n, bad


def test_all_paths_chain_identically_with_awkward_text(database, conn, db_url):
    eff = datetime(1999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)  # before the PostgreSQL epoch
    with psycopg.connect(db_url) as c:
        started = c.execute("SELECT clock_timestamp()").fetchone()[0]
    for i in range(len(ODD)):  # one server call each
        store.append(conn, [odd_event(i, eff if i == 3 else None)])
    with database.transaction() as tx:  # the server call inside a caller's transaction
        store.append(tx, [odd_event(100)])
    store.append(conn, [odd_event(200 + i) for i in range(5)])  # unnest INSERT
    big = [odd_event(300 + i, eff if i % 5 == 0 else None) for i in range(COPY_THRESHOLD * 3)]
    positions = store.append(conn, big)  # binary COPY
    assert positions == list(range(positions[0], positions[0] + len(big)))
    assert python_chain(db_url) == (len(ODD) + 1 + 5 + len(big), 0)
    assert verify_chain(database).ok
    got = store.read_all(conn, after=positions[0] - 1, limit=len(big))
    assert [(e.stream, e.data, e.meta) for e in got] == [(e.stream, e.data, e.meta) for e in big]
    assert got[0].effective_at == eff
    # recorded_at is the server's clock, taken under the ledger lock: it follows positions, and
    # a batch shares one
    recorded = [e.recorded_at for e in store.read_all(conn, limit=10_000)]
    assert recorded == sorted(recorded) and recorded[0] >= started
    assert len({e.recorded_at for e in got}) == 1


def test_single_append_conflict_burns_nothing_and_resend_is_idempotent(database, conn):
    store.append(conn, [NewEvent("a/1", "NoteRecorded", {"text": "x"})], {"a/1": 0})
    with pytest.raises(ConcurrencyError) as exc:
        store.append(conn, [NewEvent("a/1", "NoteRecorded", {"text": "y"})], {"a/1": 0})
    assert (exc.value.expected, exc.value.actual) == (0, 1)
    assert store.stream_version(conn, "a/1") == 1  # the bump was undone (autocommit call)
    eid = uuid.uuid4()
    ev = NewEvent("a/1", "NoteRecorded", {"text": "z"}, event_id=eid)
    first = store.append(conn, [ev], {"a/1": 1})
    assert store.append(conn, [ev], {"a/1": 1}) == first  # re-send: same position, no conflict
    assert first == [2] and store.head(conn) == 2 and store.stream_version(conn, "a/1") == 2
    with database.transaction() as tx:
        stored, new = store.append_stored(tx, [ev])
    assert not new and stored[0].position == 2 and stored[0].version == 2


def test_pooled_connection_killed_by_the_server_is_replaced(database, db_url):
    with database.connect() as c:
        store.append(c, [NewEvent("k/1", "NoteRecorded", {"text": "x"})])
        pid = scalar(c, "SELECT pg_backend_pid()")  # the pooled connection's backend
    with psycopg.connect(db_url, autocommit=True) as su:
        assert su.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        for _ in range(500):  # wait for the backend to be gone (bounded, no fixed sleep)
            if not su.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                break
    with database.connect() as c:
        assert store.append(c, [NewEvent("k/1", "NoteRecorded", {"text": "y"})]) == [2]
        assert store.head(c) == 2


def test_batch_event_ids_are_fresh_version_4_uuids(conn):
    store.append(
        conn, [NewEvent(f"id/{i}", "NoteRecorded", {"text": "x"}) for i in range(COPY_THRESHOLD * 2)]
    )
    ids = [e.event_id for e in store.read_all(conn, limit=1000)]
    assert len(set(ids)) == len(ids) == COPY_THRESHOLD * 2
    assert all(i.version == 4 and i.variant == uuid.RFC_4122 for i in ids)
