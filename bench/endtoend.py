"""End-to-end scheduling through the ledger (``python -m bench.endtoend``).

Shape of kube-scheduler's SchedulingBasic/5000Nodes_10000Pods: 5,000 nodes, 10,000 plain pods.
- ingest: manifests -> admission -> events + projection (pods/s);
- end to end: fold the log into the core, schedule every pod, append every decision (one
  transaction per run) and update the projection: pods bound per second. Goal >= 1,500/s
  (kube-scheduler's CI floor at this shape: 680-810 pods/s). Baseline measured in the same
  run: the in-memory core alone on the same objects (the ratio is the ledger's overhead);
- steady arrival (as the worker sees pods): 5,000 more pods in batches of 10-100 (seeded), one
  append request per batch, then one ``Bridge.run_until_idle`` per batch; pods bound per second
  of scheduling wall time (goal >= 1,500/s at 5,000 nodes), and including the append requests;
  also per CPU second of this process in the runs (client CPU; the machine may be shared);
- diagnosis size: one unschedulable gang at 5,000 nodes: bytes of PodGroupUnschedulable (goal
  <= 1 KB) and bytes a retry with unchanged inputs adds (PodGroupRetried).
"""

from __future__ import annotations

import os
import random
import time

import orjson

from bench.append import drop_database, fresh_database
from bench.common import Metric, print_table, write
from bench.writes import apply
from ledger import db, store
from ledger.resources.parse import Document
from ledger.sql import scalar

N_NODES = 5_000
N_PODS = 10_000
N_STEADY = 2_000 if os.environ.get("BENCH_QUICK") == "1" else 5_000


def _node(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i:05d}",
            "labels": {"rack": f"rack-{i // 100:02d}", "zone": f"zone-{i % 4}"},
        },
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": 110}},
    }


def _pod(i: int) -> dict:
    cpu = ("500m", "1", "2", "4")[i % 4]
    mem = ("1Gi", "2Gi", "4Gi", "8Gi")[(i // 4) % 4]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "bench"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]},
    }


def _objects(raws: list[dict]) -> list:
    from api.services.objects import load_documents

    objs, errors = load_documents(Document(index=i + 1, source="bench", raw=r) for i, r in enumerate(raws))
    assert not errors, errors[:3]
    return objs


def run() -> list[Metric]:
    from scheduler.edge.bridge import Bridge, node_from, pod_from
    from scheduler.scheduler import Scheduler

    url = fresh_database()
    try:
        database = db.get_database(url, migrate_on_start=False)
        nodes = _objects([_node(i) for i in range(N_NODES)])
        pods = _objects([_pod(i) for i in range(N_PODS)])
        t0 = time.perf_counter()
        for chunk in range(0, N_NODES, 2_500):
            apply(database, nodes[chunk : chunk + 2_500], actor="bench")
        for chunk in range(0, N_PODS, 2_500):
            apply(database, pods[chunk : chunk + 2_500], actor="bench")
        ingest = (N_NODES + N_PODS) / (time.perf_counter() - t0)

        # baseline in the same run: the core alone, on the same objects
        core = Scheduler()
        for i, n in enumerate(nodes):
            core.upsert_node(node_from(n.normalized(), i))
        for i, p in enumerate(pods):
            core.upsert_pod(pod_from(p.normalized(), N_NODES + i, 0.0), 0.0)
        t0 = time.perf_counter()
        core_results = core.run_until_idle(1.0)
        core_rate = sum(1 for r in core_results if r.result == "scheduled") / (time.perf_counter() - t0)

        t0 = time.perf_counter()
        bridge = Bridge(database, actor="bench")
        results = bridge.run_until_idle(time.time())
        e2e_s = time.perf_counter() - t0
        bound = sum(1 for r in results for d in r.decisions if type(d).__name__ == "PodBound")
        with database.connect() as c:
            recorded = scalar(c, "SELECT count(*) FROM events WHERE type = 'PodBound'")
        assert recorded == bound == N_PODS, (recorded, bound)
        e2e = bound / e2e_s

        # steady arrival, as the worker sees it: pods arrive in batches of 10-100 (seeded), each
        # batch appended by its own request, then one scheduling run per batch.
        rng = random.Random(13)
        steady = _objects([_pod(N_PODS + i) for i in range(N_STEADY)])
        sched_s = ingest_s = sched_cpu = 0.0
        steady_bound = runs = 0
        i = 0
        clock = time.time()
        while i < N_STEADY:
            k = rng.randint(10, 100)
            t0 = time.perf_counter()
            apply(database, steady[i : i + k], actor="bench")
            t1, c1 = time.perf_counter(), time.process_time()
            clock += 1.0
            res = bridge.run_until_idle(clock)
            sched_s += time.perf_counter() - t1
            sched_cpu += time.process_time() - c1
            ingest_s += t1 - t0
            steady_bound += sum(1 for r in res for d in r.decisions if type(d).__name__ == "PodBound")
            runs += 1
            i += k
        assert steady_bound == N_STEADY, steady_bound
        steady_rate = steady_bound / sched_s
        steady_total = steady_bound / (sched_s + ingest_s)

        # compact diagnosis at 5,000 nodes, and what a retry adds
        gang = [
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "huge", "namespace": "bench"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            }
        ]
        gang += [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"huge-{i}", "namespace": "bench"},
                "spec": {
                    "schedulingGroup": {"podGroupName": "huge"},
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "100"}}}],
                },
            }
            for i in range(2)
        ]
        apply(database, _objects(gang), actor="bench")
        now = time.time()
        bridge.run_until_idle(now)
        bridge.run_until_idle(now + 60)  # past the backoff: the same attempt again
        with database.connect() as c:
            sizes = dict(
                c.execute(
                    "SELECT type, max(octet_length(data::text)) FROM events WHERE type IN ('PodGroupUnschedulable', 'PodGroupRetried') "
                    "GROUP BY type"
                ).fetchall()
            )
            sample = store.read_all(c, types=["PodGroupUnschedulable"], limit=1)
        diag_bytes = float(sizes.get("PodGroupUnschedulable", 0))
        retry_bytes = float(sizes.get("PodGroupRetried", 0))
        if sample:
            print("diagnosis sample:", orjson.dumps(sample[0].data).decode()[:400])
    finally:
        drop_database(url)
    return [
        Metric(
            "ingest: manifests -> events + projection",
            ingest,
            "objects/s",
            None,
            None,
            None,
            "(reported)",
            True,
        ),
        Metric(
            "end to end: schedule + append every bind (5,000 nodes)",
            e2e,
            "pods/s",
            "in-memory core, same objects",
            core_rate,
            e2e / core_rate,
            "value >= 1,500 pods/s (kube-scheduler floor 680-810)",
            e2e >= 1500,
        ),
        Metric(
            f"steady arrival: batches of 10-100 pods, a run after each ({N_STEADY:,} pods, "
            f"{runs} runs, 5,000 nodes)",
            steady_rate,
            "pods/s",
            "same, including each batch's append request",
            steady_total,
            steady_rate / steady_total,
            "value >= 1,500 pods/s",
            steady_rate >= 1500,
        ),
        Metric(
            "steady arrival: pods bound per CPU second of this process in the runs (the rest of "
            "the wall time is PostgreSQL, commits and waiting for a core on a shared machine)",
            steady_bound / sched_cpu if sched_cpu else 0.0,
            "pods/CPU-s",
            "scheduling wall time of the runs",
            sched_s,
            sched_cpu / sched_s if sched_s else None,
            "(reported)",
            True,
        ),
        Metric(
            "PodGroupUnschedulable diagnosis at 5,000 nodes",
            diag_bytes,
            "bytes",
            None,
            None,
            None,
            "value <= 1024",
            0 < diag_bytes <= 1024,
        ),
        Metric(
            "bytes a retry with unchanged inputs adds (PodGroupRetried)",
            retry_bytes,
            "bytes",
            "full diagnosis",
            diag_bytes,
            retry_bytes / diag_bytes if diag_bytes else None,
            "ratio < 0.5",
            0 < retry_bytes < diag_bytes / 2,
        ),
    ]


def main() -> None:
    metrics = run()
    print_table("end to end (bench/results/endtoend.json)", metrics)
    write("endtoend", metrics)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
