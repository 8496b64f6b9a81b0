"""Scale: a worker holding 5,000 nodes and 150,000 pods (``python -m bench.scale``).

Setup (not measured): 5,000 nodes and 150,000 running pods (``spec.nodeName`` set, 30 per
node) are written to a fresh ledger as their normalized input events, in batches, without
going through admission. Measured, in a separate process so its peak RSS is the worker's own:
the time to build the scheduler's in-memory state from the log (the worker's start-up path:
binary COPY replay + fold into the core) and the peak RSS afterwards (goal <= 500 MB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from bench.append import drop_database, fresh_database
from bench.common import Metric, print_table, write
from ledger import db, uow
from ledger.store import NewEvent

N_NODES = int(os.environ.get("PODLEDGER_SCALE_NODES", 5_000))
N_PODS = int(os.environ.get("PODLEDGER_SCALE_PODS", 150_000))
BATCH = 5_000

CHILD = r"""
import json, resource, sys, time
from ledger import db
from scheduler.edge.bridge import Bridge
database = db.get_database(sys.argv[1], migrate_on_start=False)
t0 = time.perf_counter()
bridge = Bridge(database)
n = bridge.catch_up()
elapsed = time.perf_counter() - t0
pods = bridge.scheduler.pods()
print(json.dumps({"seconds": elapsed, "events": n, "pods": len(pods),
                  "bound": sum(1 for p in pods if p.node_name), "nodes": len(bridge.nodes),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _node(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "uid": f"n{i}", "labels": {"rack": f"rack-{i // 100:02d}"}},
        "status": {"allocatable": {"cpu": 64000, "memory": 256 << 30, "pods": 110}},
    }


def _pod(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:06d}", "namespace": f"ns-{i % 50}", "uid": f"p{i}"},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": 500, "memory": 1 << 30}}}],
            "nodeName": f"node-{i % N_NODES:05d}",
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "schedulerName": "default-scheduler",
        },
    }


def run() -> list[Metric]:
    url = fresh_database()
    try:
        database = db.get_database(url, migrate_on_start=False)
        t0 = time.perf_counter()
        for b in range(0, N_NODES, BATCH):
            uow.write(
                database,
                [
                    NewEvent(f"node/node-{i:05d}", "NodeCreated", {"object": _node(i)})
                    for i in range(b, min(N_NODES, b + BATCH))
                ],
            )
        for b in range(0, N_PODS, BATCH):
            uow.write(
                database,
                [
                    NewEvent(f"pod/ns-{i % 50}/pod-{i:06d}", "PodCreated", {"object": _pod(i)})
                    for i in range(b, min(N_PODS, b + BATCH))
                ],
            )
            print(f"  setup: {b + BATCH} pods written", file=sys.stderr, flush=True)
        setup = time.perf_counter() - t0
        res = subprocess.run([sys.executable, "-c", CHILD, url], capture_output=True, text=True, timeout=900)
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-2000:])
        out = json.loads(res.stdout.strip().splitlines()[-1])
        assert out["pods"] == N_PODS and out["bound"] == N_PODS and out["nodes"] == N_NODES, out
    finally:
        drop_database(url)
    print(f"  (setup: {N_NODES + N_PODS} events written in {setup:.1f}s)")
    return [
        Metric(
            f"worker start: fold {out['events']:,} events into the core",
            out["seconds"],
            "s",
            None,
            None,
            None,
            "(reported)",
            True,
        ),
        Metric(
            "start-up fold rate",
            out["events"] / out["seconds"],
            "events/s",
            None,
            None,
            None,
            "(reported)",
            True,
        ),
        Metric(
            f"peak RSS holding {N_NODES:,} nodes + {N_PODS:,} pods",
            out["rss_mb"],
            "MB",
            None,
            None,
            None,
            "value <= 500 MB",
            out["rss_mb"] <= 500,
        ),
    ]


def main() -> None:
    metrics = run()
    print_table("scale (bench/results/scale.json)", metrics)
    write("scale", metrics)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
