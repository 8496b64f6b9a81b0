"""``bench.paper --core``: a run's scheduling alone, through the pure core (no database)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.paper_protocol import DEFAULT_NODE_ORDER, NAMESPACE, ordered_nodes
from scheduler import gpushare as gs

if TYPE_CHECKING:
    from bench.paper import Task


def core_scheduler(
    rows: list[dict[str, Any]],
    tasks: list[Task],
    policy: str,
    seed: int,
    node_order: str = DEFAULT_NODE_ORDER,
) -> Any:
    """The pure core (``scheduler.Scheduler``, no database) holding the run's nodes (named and
    ordered as in the ledger) and pods, nothing scheduled yet."""
    from dataclasses import replace as _replace

    from scheduler.model import GpuShare, Node, Pod, SchedulerConfig
    from scheduler.scheduler import Scheduler

    cfg = SchedulerConfig(preemption_algorithm="None", plugin_weights={policy: 1})
    sch = Scheduler(_replace(cfg, backoff_initial_seconds=0.0, backoff_max_seconds=0.0))
    seq = 0
    for name, r in ordered_nodes(rows, seed, node_order):
        seq += 1
        alloc = {"cpu": int(r["cpu_milli"]), "memory": int(r["memory_mib"]) << 20, "pods": 110}
        model = (r.get("model") or "").strip()
        sch.upsert_node(
            Node(
                name,
                {**alloc, gs.NVIDIA_GPU: int(r["gpu"])},
                {gs.GPU_MODEL: model} if model else {},
                seq=seq,
            )
        )
    for t in tasks:
        seq += 1
        gpu = GpuShare(t.milli, t.count, t.spec) if t.count > 0 else None
        req = {"cpu": t.cpu, "memory": t.mem << 20}
        sch.upsert_pod(Pod(NAMESPACE, t.name.lower(), req, priority=100, gpu=gpu, seq=seq), 0.0)
    return sch


def core_cpu(
    folder: Path,
    trace: str,
    policy: str,
    seed: int,
    limit: int | None = None,
    node_order: str = DEFAULT_NODE_ORDER,
) -> tuple[int, float]:
    """(pods bound, CPU seconds) of the scheduling alone: the run's nodes and pods through the
    pure core (``Scheduler.run_until_idle``, no database), the policy's share of a run's cost."""
    from bench.paper import read_nodes, read_tasks, tune

    nodes = read_nodes(folder)
    tasks = tune(read_tasks(folder, trace), sum(int(r["gpu"]) for r in nodes) * gs.MILLI, seed, limit)
    sch = core_scheduler(nodes, tasks, policy, seed, node_order)
    c0 = time.process_time()
    sch.run_until_idle(0.0, max_cycles=10 * len(tasks) + 100)
    cpu = time.process_time() - c0
    return sum(1 for t in tasks if (p := sch.pod(f"{NAMESPACE}/{t.name.lower()}")) and p.node_name), cpu
