"""Eight processes apply at once: their own objects (distinct streams), four shared nodes
(shared objects, optimistic concurrency on each update) and one shared stream appended with
expected versions. Meanwhile this process tails the log by ``position > checkpoint``.

Afterwards: every acknowledged event is present exactly once and nothing else was appended;
every stream's versions are exactly 1..n (and ``streams`` agrees); each transaction's events
occupy one contiguous run of positions; positions follow commit order (insert timestamps never go
backwards, and the tailing reader, which can only see committed rows, missed none).
"""

from __future__ import annotations

import os
import sys
import threading

import pytest

from ledger import store
from ledger.verify import verify_chain

from .conftest import (
    assert_projection_equals_replay,
    event_count,
    interleaved_transactions,
    rows,
    stream_gaps,
    wait_until,
)

PROCS = 8
ROUNDS = 20  # each: 2 own pods (one transaction), 1 shared node update, 1 shared-stream append


def _tail(database, stop: threading.Event, seen: list[int]) -> None:
    after = 0
    while True:
        done = stop.is_set()  # read once more after the writers finished
        with database.connect() as conn:
            batch = store.read_all(conn, after=after, limit=500)
        for ev in batch:
            seen.append(ev.position)
        if batch:
            after = batch[-1].position
        elif done:
            return
        else:
            stop.wait(0.002)


@pytest.mark.timeout(120)
def test_eight_processes_apply_concurrently(database, db_url, procs, tmp_path):
    seen: list[int] = []
    stop = threading.Event()
    tail = threading.Thread(target=_tail, args=(database, stop, seen), daemon=True)
    tail.start()
    outs = [tmp_path / f"acked-{i}.txt" for i in range(PROCS)]
    env = dict(os.environ, PODLEDGER_DATABASE_URL=db_url)
    children = [
        procs.start(
            [
                sys.executable,
                "-m",
                "tests.reliability._child",
                "applier",
                db_url,
                str(i),
                str(ROUNDS),
                str(out),
            ],
            tmp_path / f"applier-{i}.log",
            env,
        )
        for i, out in enumerate(outs)
    ]
    try:
        wait_until(lambda: all(c.poll() is not None for c in children), 100, "the appliers to finish")
    finally:
        stop.set()
        tail.join(30)
    for i, c in enumerate(children):
        assert c.returncode == 0, (tmp_path / f"applier-{i}.log").read_text()[-2000:]

    acked: list[str] = []
    conflicts = 0
    for out in outs:
        first, *ids = out.read_text().splitlines()
        conflicts += int(first.split()[1])
        acked.extend(ids)
    assert len(acked) == PROCS * ROUNDS * 4
    assert len(set(acked)) == len(acked)
    # every acknowledged event exactly once, and nothing that was not acknowledged
    ids = [r[0] for r in rows(database, "SELECT event_id::text FROM events")]
    assert sorted(ids) == sorted(acked)
    assert event_count(database) == len(acked)
    # versions 1..n per stream, the streams table agrees
    assert stream_gaps(database) == []
    shared = rows(database, "SELECT count(*), max(version) FROM events WHERE stream = 'load/shared'")[0]
    assert tuple(shared) == (PROCS * ROUNDS, PROCS * ROUNDS)
    node_versions = rows(
        database, "SELECT stream, max(version) FROM events WHERE stream LIKE 'node/%' GROUP BY 1"
    )
    assert sum(v for _s, v in node_versions) == PROCS * ROUNDS
    # one transaction = one contiguous run of positions; insert time never goes backwards
    assert interleaved_transactions(database) == []
    backwards = rows(
        database,
        "SELECT position FROM (SELECT position, recorded_at, "
        "lag(recorded_at) OVER (ORDER BY position) AS prev FROM events) t WHERE recorded_at < prev",
    )
    assert backwards == []
    # the tailing reader saw every committed event, in position order, none skipped
    all_positions = [r[0] for r in rows(database, "SELECT position FROM events ORDER BY position")]
    assert seen == all_positions
    assert conflicts > 0  # the shared objects and stream were really contended
    chain = verify_chain(database)
    assert chain.ok and chain.checked == len(acked)
    assert_projection_equals_replay(database)
