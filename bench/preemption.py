"""Preemption benchmarks (``python -m bench.preemption``; results in ``bench/results/preemption.json``).

1. **pod-preempts-PodGroup** (shape of upstream scheduler_perf ``PreemptionPodGroupDisruptionMode``,
   docs/semantics.md §13): 1,000 nodes of 4 CPU, 1,000 PodGroups x 10 victim pods of 300m CPU at priority 1
   (3 CPU used per node), then plain preemptor pods of 3970m CPU at priority 1000, one at a time.
   Variants: ``NoPodGroup`` (plain victims), ``Single`` and ``All`` disruption mode. Each
   preemptor needs a node emptied (10 victims; with ``All`` the 10 groups on that node, 100 pods
   over 10 nodes). Measured: the wall time of the scheduling cycle that runs the preemption
   (filter over 1,000 nodes, diagnosis, PostFilter with the dry run over up to 100 candidate nodes,
   victim removal and decisions), through the pure ``Scheduler`` facade; only cycles that preempt
   count (with ``All`` the emptied nodes take the next preemptors without preemption). The
   garbage collector runs as it does in the worker: ``scheduler/edge/worker.py`` does not freeze the
   heap (``gc.freeze``), so neither does this benchmark, and CPython's full collections over the
   ~10^5 objects of the state land in the measured cycles as they would in production.
   Goal: p99 <= 35 ms (upstream reports 48-69 ms for this shape).
2. **preemption throughput** (shape of upstream ``PreemptionBasic``): 500 nodes of 4 CPU filled
   with 2,000 low-priority 1-CPU pods, then 500 high-priority 3-CPU pods applied at once, all
   through the real ledger: admission + append, ``Bridge.run_until_idle`` (fold, cycles,
   ``PodPreempted``/``PodNominated``/``PodBound`` events appended), the virtual clock advanced over
   the backoff until every preemptor is bound. Goal (issue 13): >= 330 preemptor pods/s over the
   scheduling wall time, 2.5x the upper end of upstream's PreemptionBasic (99.5-132 pods/s in its
   CI), with every eviction recorded (PodPreempted events == victims); the CPU time of this
   process over the same span is reported beside it.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from typing import Any

from bench.common import Metric, print_table, write
from scheduler.decisions import PodPreempted
from scheduler.model import ALL, SINGLE, Node, Pod, PodGroup, SchedulerConfig
from scheduler.scheduler import Scheduler

QUICK = os.environ.get("BENCH_QUICK") == "1"
NODES = 1000
GROUPS = 1000
PER_GROUP = 10
GI = 1 << 30


def _percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


def pod_preempts_podgroup(variant: str, preemptors: int) -> tuple[list[float], int]:
    """Returns (preemption cycle wall times in ms, victims)."""
    s = Scheduler(SchedulerConfig(backoff_initial_seconds=1.0, backoff_max_seconds=1.0))
    for i in range(NODES):
        s.upsert_node(Node(f"node-{i:04d}", {"cpu": 4000, "memory": 32 * GI, "pods": 110}, seq=i + 1))
    seq = NODES + 1
    mode = ALL if variant == "All" else SINGLE
    for g in range(GROUPS):
        if variant != "NoPodGroup":
            s.upsert_pod_group(
                PodGroup("bench", f"g{g:04d}", min_count=1, priority=1, disruption_mode=mode, seq=seq), 0.0
            )
            seq += 1
        for i in range(PER_GROUP):
            node = f"node-{(g * PER_GROUP + i) % NODES:04d}"
            s.upsert_pod(
                Pod(
                    "bench",
                    f"v{g:04d}-{i}",
                    {"cpu": 300, "memory": GI},
                    uid=f"uid-v{g:04d}-{i}",
                    priority=1,
                    node_name=node,
                    pod_group=None if variant == "NoPodGroup" else f"g{g:04d}",
                    seq=seq,
                    start_time=0.0,
                ),
                0.0,
            )
            seq += 1
    s.run_until_idle(0.0)
    # No gc.freeze(): the worker does not freeze its heap, so the measured cycles pay for the
    # full collections a long-lived worker pays for.
    gc.collect()
    times: list[float] = []
    victims = 0
    now = 0.0
    for k in range(preemptors):
        now += 10.0
        p = Pod(
            "bench", f"hi-{k:04d}", {"cpu": 3970, "memory": GI}, uid=f"uid-hi-{k}", priority=1000, seq=seq
        )
        seq += 1
        s.upsert_pod(p, now)
        t0 = time.perf_counter()
        r = s.run_cycle(now)
        dt = (time.perf_counter() - t0) * 1000
        assert r is not None
        if r.result == "waiting-on-preemption":
            times.append(dt)
            victims += sum(1 for d in r.decisions if isinstance(d, PodPreempted))
        s.run_until_idle(now)
        s.run_until_idle(now + 5.0)  # the preemptor binds after its backoff
        cur = s.pod(p.key)
        assert cur is not None and cur.node_name is not None, f"{p.key} not bound"
    return times, victims


def throughput(nodes: int = 500, low: int = 2000, high: int = 500) -> dict[str, Any]:
    """Preemption throughput through the ledger (see module docstring)."""
    from api.services.objects import load_documents
    from api.services.simulate import EPOCH, private_ledger
    from bench.writes import apply
    from ledger.resources.parse import Document
    from ledger.sql import scalar
    from scheduler.edge.bridge import Bridge

    def load(manifests: list[dict[str, Any]]) -> list[Any]:
        docs = [Document(index=i + 1, source="bench", raw=m) for i, m in enumerate(manifests)]
        objs, errs = load_documents(docs)
        assert not errs, errs
        return objs

    def pod(name: str, cpu: str, cls: str, node: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "priorityClassName": cls,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        }
        if node:
            spec["nodeName"] = node
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": spec,
        }

    setup: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 1,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    ]
    setup += [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i:04d}"},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
        }
        for i in range(nodes)
    ]
    per_node = low // nodes
    setup += [pod(f"low-{i:05d}", "1", "low", f"node-{i // per_node:04d}") for i in range(low)]
    preemptors = [pod(f"high-{i:04d}", "3", "high") for i in range(high)]
    with private_ledger() as database:
        t = EPOCH.timestamp()
        from scheduler.edge.bridge import from_ts

        apply(database, load(setup), actor="bench", effective_at=from_ts(t))
        bridge = Bridge(database, actor="bench")
        bridge.run_until_idle(t)
        apply(database, load(preemptors), actor="bench", effective_at=from_ts(t + 1))
        now = t + 1
        t0, c0 = time.perf_counter(), time.process_time()
        cycles = 0
        for _ in range(100):
            cycles += len(bridge.run_until_idle(now))
            bound = sum(
                1 for p in bridge.scheduler.pods() if p.name.startswith("high-") and p.node_name is not None
            )
            if bound == high:
                break
            nxt = bridge.scheduler.next_timer(now)
            now = nxt if nxt is not None and nxt > now else now + 1.0
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        with database.connect() as conn:
            recorded = scalar(conn, "SELECT count(*) FROM events WHERE type = 'PodPreempted'")
            events = scalar(conn, "SELECT count(*) FROM events")
        remaining_low = sum(1 for p in bridge.scheduler.pods() if p.name.startswith("low-"))
    return {
        "bound": bound,
        "wall": wall,
        "cpu": cpu,
        "cycles": cycles,
        "victims": low - remaining_low,
        "recorded": int(recorded),
        "events": int(events),
    }


def main() -> None:
    metrics: list[Metric] = []
    worst_p99 = 0.0
    n = 60 if QUICK else 300
    for variant in ("NoPodGroup", "Single", "All"):
        times, victims = pod_preempts_podgroup(variant, n if variant != "All" else n * 3)
        p50, p99 = _percentile(times, 50), _percentile(times, 99)
        worst_p99 = max(worst_p99, p99)
        metrics.append(
            Metric(
                f"pod-preempts-PodGroup {variant}: decision p50 (GC not frozen, as the worker)",
                p50,
                "ms",
                goal="report",
            )
        )
        metrics.append(
            Metric(
                f"pod-preempts-PodGroup {variant}: decision p99 (GC not frozen, as the worker)",
                p99,
                "ms",
                goal="p99 <= 35",
                met=p99 <= 35.0,
            )
        )
        metrics.append(
            Metric(
                f"pod-preempts-PodGroup {variant}: preemptions / victims",
                float(len(times)),
                f"/{victims}",
                goal=f"mean {statistics.fmean(times):.1f} ms" if times else "",
            )
        )
    res = throughput(250, 1000, 250) if QUICK else throughput()
    rate = res["bound"] / res["wall"] if res["wall"] else 0.0
    metrics.append(
        Metric(
            "preemption throughput (ledger, 500 nodes, 500 preemptors)",
            rate,
            "pods/s",
            "upstream PreemptionBasic (CI, 99.5-132 pods/s), upper end",
            132.0,
            rate / 132.0,
            goal=">= 330 (2.5x upstream)",
            met=rate >= 330 and res["recorded"] == res["victims"],
        )
    )
    metrics.append(
        Metric(
            "evictions recorded (PodPreempted events / victims)",
            float(res["recorded"]),
            f"/{res['victims']}",
            goal="equal",
            met=res["recorded"] == res["victims"],
        )
    )
    metrics.append(
        Metric(
            "throughput run: scheduling wall time",
            res["wall"],
            "s",
            "CPU time of this process, same span",
            res["cpu"],
            res["cpu"] / res["wall"] if res["wall"] else None,
            goal=f"{res['cycles']} cycles",
        )
    )
    path = write("preemption", metrics)
    print_table("preemption", metrics)
    print(f"wrote {path}")


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
