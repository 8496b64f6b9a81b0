"""kill -9 the scheduler worker at seeded points while preemptions are being decided, restart
it, and check the ledger afterwards: no pod bound twice, exactly one preemption per high-priority
pod, no decision without its cycle, the projection equals a full replay, the hash chain verifies
and every run replays byte for byte.

The nodes are filled first (80 low-priority pods bound by a worker that is stopped cleanly), so
every high-priority pod that arrives later needs a preemption. Each worker life then takes the
lead, two high-priority pods are applied, and the life is killed: on even lives as soon as its
append transaction is open (the preemption computed, not committed), on odd lives after a seeded
random delay (often after the commit). Fault injection: a test-only trigger makes every statement
that appends a cycle summary sleep 100 ms, so that transaction stays open long enough to be
seen. Each kill is preceded by SIGSTOP and a look at ``pg_stat_activity`` (the worker's
connections carry ``application_name`` = its name). The loop (bounded) goes on until at least two
kills hit an open append, one life was killed after computing a preemption it had not committed,
and one after committing a preemption.
"""

from __future__ import annotations

import json
import random
import signal
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

LIVES = 8  # workers killed with SIGKILL (more, up to MAX_LIVES, until every case was hit)
MAX_LIVES = 14
CAPACITY = 80  # 4 nodes x 4 cpu hold 80 pods of 200m: the low-priority fill
HIGH_PER_LIFE = 2  # high-priority pods applied in each life; each preempts one low-priority pod


def _decisions_trigger(name: str, perform: str) -> str:
    """A trigger that runs ``perform`` inside every append holding a scheduling decision."""
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM new_rows WHERE type = 'SchedulingCycleCompleted') THEN
    PERFORM {perform};
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER {name} AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {name}();
"""


SLOW_DECISIONS = _decisions_trigger("test_slow_decisions", "pg_sleep(0.1)")
# The same place, but the append waits there until the test lets it go: on an advisory lock the
# test holds (so the test kills an append that is certainly still open, whatever the load).
HELD_LOCK = 724315077  # below 2**31: pg_locks shows it as objid
HELD_DECISIONS = _decisions_trigger("test_held_decisions", f"pg_advisory_xact_lock_shared({HELD_LOCK})")
IN_TX = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND backend_xid IS NOT NULL"


def _bound(database) -> tuple[int, int]:
    """(pods bound now, high-priority pods among them), from the projection."""
    r = rows(
        database,
        "SELECT count(*), count(*) FILTER (WHERE object->'spec'->>'priorityClassName' = 'high') "
        "FROM objects WHERE kind = 'Pod' AND status->>'phase' = 'Bound'",
    )
    return int(r[0][0]), int(r[0][1])


def _per_node(database) -> dict[str, int]:
    return dict(
        rows(
            database,
            "SELECT status->>'nodeName', count(*) FROM objects "
            "WHERE kind = 'Pod' AND status->>'phase' = 'Bound' GROUP BY 1",
        )
    )


def _preemptions_computed(log) -> int:
    """Cycles of this life that decided a preemption (logged before their append commits)."""
    n = 0
    for line in log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if (
            rec.get("event") == "cycle"
            and rec.get("result") == "waiting-on-preemption"
            and rec.get("decisions")
        ):
            n += 1
    return n


def _fill(database, procs, tmp_path, db_url) -> None:
    """Bind CAPACITY low-priority pods with a worker that is then stopped cleanly."""
    apply_text(database, PRIORITY_CLASSES + "---\n" + nodes_yaml(4, "4"))
    apply_text(database, "---\n".join(pod_yaml(f"low-{i}", "200m", "low") for i in range(CAPACITY)))
    log = tmp_path / "fill.log"
    w = start_worker(procs, "fill", log, db_url)
    wait_until(lambda: _bound(database) == (CAPACITY, 0), 60, "the nodes to fill with low-priority pods")
    w.send_signal(signal.SIGTERM)
    assert w.wait(30) == 0


def _done(kills: list[dict[str, object]]) -> bool:
    return (
        sum(1 for k in kills if k["in_tx"]) >= 2
        and any(k["computed"] > k["committed"] for k in kills)  # killed before a preemption's commit
        and any(k["committed"] for k in kills)  # killed after a preemption's commit
    )


def _kill_loop(su, rng, procs, tmp_path, db_url, database, kills: list[dict[str, object]]) -> int:
    """Returns the number of high-priority pods applied."""
    life = high = 0
    while life < LIVES or (not _done(kills) and life < MAX_LIVES):
        name = f"w{life}"
        log = tmp_path / f"{name}.log"
        before = event_count(database)
        w = start_worker(procs, name, log, db_url, env={"PGAPPNAME": name})
        wait_until(lambda log=log: log_count(log, "leader") >= 1, 30, f"worker {name} to lead")
        apply_text(
            database, "---\n".join(pod_yaml(f"high-{high + j}", "200m", "high") for j in range(HIGH_PER_LIFE))
        )
        high += HIGH_PER_LIFE
        if life % 2 == 0:
            # Kill inside the append: wait (bounded) until its write transaction is open.
            mode = "in-append"
            wait_until(
                lambda name=name: su.execute(IN_TX, (name,)).fetchone()[0],
                10,
                f"worker {name}'s append transaction",
                interval=0.005,
            )
        else:
            mode = "random"
            time.sleep(rng.uniform(0.0, 1.0))
        w.send_signal(signal.SIGSTOP)  # freeze it, look whether it is inside a write transaction
        in_tx = su.execute(IN_TX, (name,)).fetchone()[0]
        w.send_signal(signal.SIGKILL)
        assert w.wait(10) == -signal.SIGKILL
        committed = su.execute(
            "SELECT count(*) FROM events WHERE type = 'PodPreempted' AND meta->>'actor' = %s", (name,)
        ).fetchone()[0]
        kills.append(
            {
                "life": life,
                "mode": mode,
                "in_tx": bool(in_tx),
                "appended": event_count(database) - before,
                "computed": _preemptions_computed(log),
                "committed": int(committed),
            }
        )
        life += 1
    return high


@pytest.mark.timeout(200)
def test_kill9_worker_at_random_points(database, db_url, procs, tmp_path):
    rng = random.Random(SEED)
    _fill(database, procs, tmp_path, db_url)
    kills: list[dict[str, object]] = []
    with psycopg.connect(db_url, autocommit=True) as su:  # superuser: fault injection, inspection
        su.execute(SLOW_DECISIONS)
        try:
            high = _kill_loop(su, rng, procs, tmp_path, db_url, database, kills)
        finally:
            su.execute("DROP TRIGGER test_slow_decisions ON events")
    # The next worker must converge from whatever the killed ones left behind.
    log = tmp_path / "final.log"
    w = start_worker(procs, "final", log, db_url)
    wait_until(lambda: log_count(log, "leader") >= 1, 30, "the final worker to lead")
    wait_until(lambda: _bound(database) == (CAPACITY, high), 30, "every high-priority pod bound, nodes full")
    w.send_signal(signal.SIGTERM)
    assert w.wait(30) == 0
    assert log_count(log, "stopped") == 1

    info = f"seed={SEED} high={high} kills={kills}"
    print(info)
    assert _done(kills), info
    assert double_binds(database) == {}, info
    assert _per_node(database) == {f"node-{i}": 20 for i in range(4)}, info  # 20 x 200m = 4 cpu each
    # Exactly one preemption per high-priority pod: none lost with a killed life, none doubled
    # by the life after it, and every victim a low-priority pod.
    preempted = rows(
        database,
        "SELECT count(*), count(DISTINCT data->>'victim'), "
        "count(*) FILTER (WHERE data->>'victim' LIKE 'default/low-%%') FROM events WHERE type = 'PodPreempted'",
    )[0]
    assert tuple(preempted) == (high, high, high), (preempted, info)
    assert decisions_without_cycle(database) == [], info
    assert interleaved_transactions(database) == [], info
    assert stream_gaps(database) == [], info
    assert assert_projection_equals_replay(database) == 2 + 4 + CAPACITY + high
    chain = verify_chain(database)
    assert chain.ok and chain.checked == event_count(database), (chain, info)
    rep = verify_replay(database)
    assert rep.ok, (rep.mismatches[:3], info)
    starts = int(scalar(database, "SELECT count(*) FROM events WHERE type = 'SchedulerStarted'"))
    assert rep.runs >= starts >= 2, (rep.runs, starts, info)


@pytest.mark.timeout(90)
def test_worker_survives_its_session_killed_mid_append(database, db_url, procs, tmp_path):
    """The worker's database session dies inside an append (pg_terminate_backend) while its
    leader-lock session survives: the uncommitted decisions must not stay in its memory, so the
    pods of that append are bound after all, once each."""
    apply_text(database, nodes_yaml(2, "8"))
    log = tmp_path / "w.log"
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute(HELD_DECISIONS)
        su.execute("SELECT pg_advisory_lock(%s)", (HELD_LOCK,))
        w = start_worker(procs, "w", log, db_url, env={"PGAPPNAME": "w"})
        wait_until(lambda: log_count(log, "leader") >= 1, 30, "the worker to lead")
        # the pods come first (an apply would queue behind a held append's ledger lock); each
        # append that would bind them then waits in the trigger for the lock we hold, and is
        # terminated there, three times (the next life appends them again)
        apply_text(database, "---\n".join(pod_yaml(f"r{r}-{i}") for r in range(3) for i in range(5)))
        killed: list[int] = []
        for _ in range(3):
            # not a session killed before: a terminated backend is listed until it has exited
            pid = wait_until(
                lambda: su.execute(
                    "SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid "
                    "WHERE a.application_name = 'w' AND l.locktype = 'advisory' AND l.objid::bigint = %s "
                    "AND NOT l.granted AND a.pid <> ALL(%s)",
                    (HELD_LOCK, killed),
                ).fetchone(),
                10,
                "the worker's append transaction",
                interval=0.005,
            )[0]
            # and wait (up to 10 s) until it has exited
            if su.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,)).fetchone()[0]:
                killed.append(pid)
        su.execute("SELECT pg_advisory_unlock(%s)", (HELD_LOCK,))
        su.execute("DROP TRIGGER test_held_decisions ON events")
        want = {f"default/r{r}-{i}" for r in range(3) for i in range(5)}
        bound = "SELECT data->>'pod' FROM events WHERE type = 'PodBound'"
        wait_until(lambda: want <= {r[0] for r in rows(database, bound)}, 30, "every pod bound")
        assert w.poll() is None
        w.send_signal(signal.SIGTERM)
        assert w.wait(30) == 0
    text = log.read_text()
    assert len(killed) == 3 and log_count(log, "db-error") >= 3, text[-2000:]
    assert "raised an exception" not in text, text[-2000:]
    assert double_binds(database) == {}
    assert decisions_without_cycle(database) == []
    assert_projection_equals_replay(database)
    assert verify_replay(database).ok
