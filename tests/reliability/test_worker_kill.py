"""kill -9 the scheduler worker at random (seeded) points while pods keep arriving, restart it,
and check the ledger afterwards: no pod bound twice, no decision without its cycle, the
projection equals a full replay, the hash chain verifies and every run replays byte for byte.

Fault injection: a test-only trigger makes every statement that appends a cycle summary sleep
100 ms, so a worker spends a good part of its life inside an open append transaction. Each
kill is preceded by SIGSTOP and a look at ``pg_stat_activity`` (the worker's connections carry
``application_name`` = its name), which tells whether the kill hit an open write transaction;
the test keeps killing (bounded) until at least two kills did.
"""

from __future__ import annotations

import random
import signal
import threading
import time

import psycopg
import pytest

from api.services.replay import verify_replay
from ledger.verify import verify_chain

from .conftest import (
    PRIORITY_CLASSES,
    SEED,
    apply_text,
    assert_projection_equals_replay,
    decisions_without_cycle,
    double_binds,
    event_count,
    interleaved_transactions,
    log_count,
    nodes_yaml,
    pod_yaml,
    rows,
    scalar,
    start_worker,
    stream_gaps,
    wait_until,
)

LIVES = 8  # workers killed with SIGKILL (more, up to MAX_LIVES, until two kills hit an open append)
PODS = 110  # 200m each; 4 nodes x 4 cpu hold 80 of them, the rest stay unschedulable
CAPACITY = 80
HIGH = PODS // 5  # every 5th pod; they preempt low-priority ones when the nodes are full on arrival
LATE = 4  # high-priority pods applied once the nodes are full: each must preempt a bound low one
MAX_LIVES = 14
SLOW_DECISIONS = """
CREATE FUNCTION test_slow_decisions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM new_rows WHERE type = 'SchedulingCycleCompleted') THEN
    PERFORM pg_sleep(0.1);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER test_slow_decisions AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION test_slow_decisions();
"""


def _feed(engine, stop: threading.Event, rng: random.Random, made: list[str]) -> None:
    """Pods keep arriving (one request every 50-250 ms; every 5th one is high priority)."""
    for i in range(PODS):
        if stop.wait(rng.uniform(0.05, 0.25)):
            return
        name = f"p-{i}"
        apply_text(engine, pod_yaml(name, "200m", "high" if i % 5 == 4 else "low"))
        made.append(name)


def _bound(engine) -> tuple[int, int]:
    """(pods bound now, high-priority pods among them), from the projection."""
    r = rows(
        engine,
        "SELECT count(*), count(*) FILTER (WHERE object->'spec'->>'priorityClassName' = 'high') "
        "FROM objects WHERE kind = 'Pod' AND status->>'phase' = 'Bound'",
    )
    return int(r[0][0]), int(r[0][1])


def _per_node(engine) -> dict[str, int]:
    return dict(
        rows(
            engine,
            "SELECT status->>'nodeName', count(*) FROM objects "
            "WHERE kind = 'Pod' AND status->>'phase' = 'Bound' GROUP BY 1",
        )
    )


def _kill_loop(su, rng, procs, tmp_path, db_url, engine, kills: list[dict[str, object]]) -> None:
    life = 0
    while life < LIVES or (sum(1 for k in kills if k["in_tx"]) < 2 and life < MAX_LIVES):
        name = f"w{life}"
        log = tmp_path / f"{name}.log"
        before = event_count(engine)
        w = start_worker(procs, name, log, db_url, env={"PGAPPNAME": name})
        wait_until(lambda log=log: log_count(log, "leader") >= 1, 30, f"worker {name} to lead")
        # A random point after it took the lead: while it runs cycles, appends, or idles.
        delay = rng.uniform(0.0, 1.0)
        time.sleep(delay)
        w.send_signal(signal.SIGSTOP)  # freeze it, look whether it is inside a write transaction
        in_tx = su.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND backend_xid IS NOT NULL",
            (name,),
        ).fetchone()[0]
        w.send_signal(signal.SIGKILL)
        assert w.wait(10) == -signal.SIGKILL
        appended = event_count(engine) - before
        kills.append({"life": life, "delay": round(delay, 2), "in_tx": bool(in_tx), "appended": appended})
        life += 1


@pytest.mark.timeout(150)
def test_kill9_worker_at_random_points(engine, db_url, procs, tmp_path):
    rng = random.Random(SEED)
    apply_text(engine, PRIORITY_CLASSES + "---\n" + nodes_yaml(4, "4"))
    made: list[str] = []
    stop = threading.Event()
    failure: list[BaseException] = []

    def feed() -> None:
        try:
            _feed(engine, stop, random.Random(SEED + 1), made)
        except BaseException as exc:  # re-raised by the test thread
            failure.append(exc)

    feeder = threading.Thread(target=feed, name="feeder", daemon=True)
    feeder.start()
    kills: list[dict[str, object]] = []
    try:
        with psycopg.connect(db_url, autocommit=True) as su:  # superuser: fault injection, inspection
            su.execute(SLOW_DECISIONS)
            try:
                _kill_loop(su, rng, procs, tmp_path, db_url, engine, kills)
            finally:
                su.execute("DROP TRIGGER test_slow_decisions ON events")
        feeder.join(60)
        assert not feeder.is_alive() and not failure, failure
        # The next worker must converge from whatever the killed ones left behind.
        log = tmp_path / "final.log"
        w = start_worker(procs, "final", log, db_url)
        wait_until(lambda: log_count(log, "leader") >= 1, 30, "the final worker to lead")
        wait_until(
            lambda: _bound(engine) == (CAPACITY, HIGH), 30, "every high-priority pod bound, nodes full"
        )
        # Whether a high pod of the feed met full nodes depends on where the kills fell (a pod
        # that arrives while no worker runs is queued by priority, ahead of the low ones), so the
        # preemption path is exercised for sure by pods that arrive when the nodes are full.
        apply_text(engine, "---\n".join(pod_yaml(f"late-{i}", "200m", "high") for i in range(LATE)))
        wait_until(lambda: _bound(engine) == (CAPACITY, HIGH + LATE), 30, "the late high-priority pods bound")
        w.send_signal(signal.SIGTERM)
        assert w.wait(30) == 0
        assert log_count(log, "stopped") == 1
    finally:
        stop.set()
        feeder.join(30)

    info = f"seed={SEED} kills={kills}"
    print(info)
    assert sum(1 for k in kills if k["in_tx"]) >= 2, info
    assert len(made) == PODS
    assert sum(1 for k in kills if k["appended"]) >= LIVES // 2, info  # most lives did write
    assert double_binds(engine) == {}, info
    assert _per_node(engine) == {f"node-{i}": 20 for i in range(4)}, info  # 20 x 200m = 4 cpu each
    preempted = int(
        scalar(engine, "SELECT count(DISTINCT data->>'victim') FROM events WHERE type = 'PodPreempted'")
    )
    assert preempted >= LATE, info
    assert decisions_without_cycle(engine) == [], info
    assert interleaved_transactions(engine) == [], info
    assert stream_gaps(engine) == [], info
    assert assert_projection_equals_replay(engine) == 2 + 4 + PODS + LATE
    chain = verify_chain(engine)
    assert chain.ok and chain.checked == event_count(engine), (chain, info)
    rep = verify_replay(engine)
    assert rep.ok, (rep.mismatches[:3], info)
    starts = int(scalar(engine, "SELECT count(*) FROM events WHERE type = 'SchedulerStarted'"))
    assert rep.runs >= starts >= 2, (rep.runs, starts, info)


@pytest.mark.timeout(90)
def test_worker_survives_its_session_killed_mid_append(engine, db_url, procs, tmp_path):
    """The worker's database session dies inside an append (pg_terminate_backend) while its
    leader-lock session survives: the uncommitted decisions must not stay in its memory, so the
    pods of that append are bound after all, once each."""
    apply_text(engine, nodes_yaml(2, "8"))
    log = tmp_path / "w.log"
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute(SLOW_DECISIONS)
        w = start_worker(procs, "w", log, db_url, env={"PGAPPNAME": "w"})
        wait_until(lambda: log_count(log, "leader") >= 1, 30, "the worker to lead")
        killed = 0
        for round_ in range(3):
            apply_text(engine, "---\n".join(pod_yaml(f"r{round_}-{i}") for i in range(5)))
            # its append transaction sleeps 100 ms in the trigger: terminate that session
            pid = wait_until(
                lambda: su.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'w' AND backend_xid IS NOT NULL"
                ).fetchone(),
                10,
                "the worker's append transaction",
                interval=0.005,
            )[0]
            killed += bool(su.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0])
        su.execute("DROP TRIGGER test_slow_decisions ON events")
        want = {f"default/r{r}-{i}" for r in range(3) for i in range(5)}
        bound = "SELECT data->>'pod' FROM events WHERE type = 'PodBound'"
        wait_until(lambda: want <= {r[0] for r in rows(engine, bound)}, 30, "every pod bound")
        assert w.poll() is None
        w.send_signal(signal.SIGTERM)
        assert w.wait(30) == 0
    text = log.read_text()
    assert killed == 3 and log_count(log, "db-error") >= 3, text[-2000:]
    assert "raised an exception" not in text, text[-2000:]
    assert double_binds(engine) == {}
    assert decisions_without_cycle(engine) == []
    assert_projection_equals_replay(engine)
    assert verify_replay(engine).ok
