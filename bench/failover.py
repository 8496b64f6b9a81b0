"""Failover of the ledger's PostgreSQL under load (``python -m bench.failover [--rounds N]
[--async-rounds M] [--load-seconds S]``, issue 35).

A primary and a standby on this machine (``tests/replication/cluster.py``: the embedded
package's own ``initdb``/``pg_basebackup``/``pg_ctl``), a scheduler worker and a writer on the
multi-host URL (pods applied with idempotency keys and events with fixed ids, acknowledged only
once committed, retried across the outage). Each round: the load runs ``--load-seconds`` (the
standby's replay lag sampled every 0.1 s), a checkpoint is signed, the primary is crashed
(``pg_ctl stop -m immediate``) and the standby promoted (``pg_ctl promote``); measured are the
time until the writer's next acknowledged writes and until the worker binds a pod created after
the promotion; then the load stops and the ledger is checked (every acknowledged write present
exactly once, the chain, ``replay --verify``, a projection rebuild, every checkpoint extended),
and the old primary is rebuilt as the new synchronous standby.

Synchronous (``synchronous_standby_names`` naming the standby): ``--rounds`` (default 5)
failovers; the goal is 0 acknowledged events lost and resume <= 10 s. The baseline of the
resume time is the promotion itself (crash until the promoted server accepts a write: the
server's own floor). Asynchronous: ``--async-rounds`` (default 2) failovers of the same load
without a synchronous standby; what is lost is the loss window (acknowledged writes not on the
promoted server), reported with the replay lag at the crash.

Run it niced on a shared machine: ``nice -n 10 .venv/bin/python -m bench.failover``.
Writes bench/results/failover.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Metric, print_table, write


def _sample_lag(cluster: Any, seconds: float) -> tuple[list[int], list[float]]:
    """The standby's replay lag (bytes, seconds) every 0.1 s for ``seconds`` while the load runs."""
    sizes: list[int] = []
    times: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        b, s = cluster.replay_lag()
        if b >= 0:
            sizes.append(b)
            times.append(s)
        time.sleep(0.1)
    return sizes, times


def _present(database: Any, pods: list[str], events: list[str]) -> tuple[int, int]:
    from tests.reliability.conftest import rows

    created = {
        r[0]
        for r in rows(
            database, "SELECT stream FROM events WHERE type = 'PodCreated' AND stream LIKE 'pod/default/%'"
        )
    }
    found = {
        r[0]
        for r in rows(
            database,
            "SELECT event_id::text FROM events WHERE event_id = ANY(CAST(%(ids)s AS uuid[]))",
            ids=events,
        )
    }
    return sum(f"pod/default/{p}" in created for p in pods), sum(e in found for e in events)


def run(sync: bool, rounds: int, load_seconds: float, root: Path) -> dict[str, Any]:
    from ledger import anchor, db
    from tests.reliability.conftest import Procs, apply_text, dump_on_failure, nodes_yaml
    from tests.replication.cluster import Cluster
    from tests.replication.failover import Load, acks, check, fail_over

    out: dict[str, Any] = {"rounds": [], "acked": 0, "present": 0, "lost": 0}
    signer = anchor.create_key(root / f"checkpoint-{'sync' if sync else 'async'}.key")
    notes: list[str] = []
    procs = Procs()
    with Cluster(root / ("sync" if sync else "async"), sync=sync) as cluster:
        url = cluster.url("podledger")
        os.environ["PODLEDGER_DATABASE_URL"] = url
        database = db.get_database(url)
        apply_text(database, nodes_yaml(16, "256"))  # 1,760 pods: room for every round's pods
        try:
            for n in range(rounds):
                load = Load(procs, url, root, prefix=f"{'s' if sync else 'a'}{n}")
                load.start()
                sizes, secs = _sample_lag(cluster, load_seconds)
                notes.append(anchor.make_checkpoint(database, signer).note)
                with dump_on_failure(*load.logs(), cluster.primary.log, cluster.standby.log):
                    r = fail_over(cluster, load, database)
                    load.stop(database)
                pods, events = load.all_pods(), acks(load.ackfile)[1]
                have_pods, have_events = _present(database, pods, events)
                lost = (len(pods) - have_pods) + (len(events) - have_events)
                if sync:
                    check(database, load, notes, signer.verifier)
                out["rounds"].append(
                    {
                        "promote_s": round(r.promote_s, 3),
                        "write_resume_s": round(r.write_resume_s, 3),
                        "schedule_resume_s": round(r.schedule_resume_s, 3),
                        "http_resume_s": round(r.http_resume_s or 0.0, 3),
                        "lag_bytes_at_crash": r.lag_bytes,
                        "lag_bytes_p50": int(statistics.median(sizes)) if sizes else 0,
                        "lag_bytes_max": max(sizes) if sizes else 0,
                        "lag_s_max": round(max(secs), 4) if secs else 0.0,
                        "acked": len(pods) + len(events),
                        "lost": lost,
                    }
                )
                out["acked"] += len(pods) + len(events)
                out["present"] += have_pods + have_events
                out["lost"] += lost
                print(f"{'sync' if sync else 'async'} round {n + 1}: {out['rounds'][-1]}", flush=True)
                if not sync:  # the lost writes' checkpoints are not extended: sign anew
                    notes.clear()
                t0 = time.monotonic()
                cluster.rejoin()
                out["rounds"][-1]["rejoin_s"] = round(time.monotonic() - t0, 3)
        finally:
            procs.kill_all()
            db.dispose_all()
    return out


def metrics(sync: dict[str, Any], asyn: dict[str, Any]) -> list[Metric]:
    rs = sync["rounds"]
    promote = max(r["promote_s"] for r in rs)
    write_resume = max(r["write_resume_s"] for r in rs)
    sched_resume = max(r["schedule_resume_s"] for r in rs)
    http_resume = max(r["http_resume_s"] for r in rs)
    ms: list[Metric] = [
        Metric("sync failovers under load", len(rs), "failovers", goal=">= 5", met=len(rs) >= 5),
        Metric(
            "sync: acknowledged writes lost",
            sync["lost"],
            "writes",
            "acknowledged writes",
            sync["acked"],
            sync["lost"] / sync["acked"] if sync["acked"] else None,
            "0",
            sync["lost"] == 0 and sync["present"] == sync["acked"],
        ),
        Metric(
            "sync: writes resume after promotion (max)",
            write_resume,
            "s",
            "crash until promoted server accepts writes (max)",
            promote,
            write_resume / promote if promote else None,
            "<= 10 s",
            write_resume <= 10,
        ),
        Metric("sync: HTTP writes resume (max)", http_resume, "s", goal="<= 10", met=http_resume <= 10),
        Metric("sync: scheduling resumes (max)", sched_resume, "s", goal="<= 10", met=sched_resume <= 10),
        Metric(
            "sync: standby replay lag under load (max of p50)",
            max(r["lag_bytes_p50"] for r in rs),
            "bytes",
        ),
        Metric("sync: standby replay lag (max)", max(r["lag_s_max"] for r in rs) * 1000, "ms"),
    ]
    ar = asyn["rounds"]
    if ar:
        ms += [
            Metric(
                "async: acknowledged writes lost (the loss window)",
                asyn["lost"],
                "writes",
                "acknowledged writes",
                asyn["acked"],
                asyn["lost"] / asyn["acked"] if asyn["acked"] else None,
                "measured",
            ),
            Metric("async: replay lag at the crash (max)", max(r["lag_bytes_at_crash"] for r in ar), "bytes"),
            Metric("async: replay lag (max)", max(r["lag_s_max"] for r in ar) * 1000, "ms"),
        ]
    return ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--async-rounds", type=int, default=2)
    ap.add_argument("--load-seconds", type=float, default=2.0)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="podledger-bench-failover-"))
    os.environ["PODLEDGER_CHECKPOINT_KEY"] = str(root / "unused.key")
    results: dict[str, dict[str, Any]] = {}
    try:
        results["sync"] = run(True, args.rounds, args.load_seconds, root)
        results["async"] = run(False, args.async_rounds, args.load_seconds, root)
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    ms = metrics(results["sync"], results["async"])
    print_table("Failover under load (synchronous and asynchronous streaming replication)", ms)
    path = write("failover", ms)
    (path.parent / "failover_rounds.json").write_text(__import__("json").dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
