"""The FGD paper's protocol: the node order (how the artifact's equal scores are resolved), the
manifests a run writes (nodes, pods, its SchedulerConfig) and the fragmentation it reports.

The artifact (``SIM/pkg/simulator/simulator.go``, ``syncClusterResourceList``) sorts the nodes
by name, draws ``rand.Perm(n)`` from Go's ``math/rand`` (the global source, seeded with the run's
seed in ``core.go``'s ``Simulate`` and already advanced by the tuning's draws) and renames the
node at sorted position ``i`` to ``fmt.Sprintf("%04d-", perm[i]) + name``; its ``selectHost``
(the vendored ``generic_scheduler.go``) keeps, among the nodes of the highest score, the one with
the smallest name. Equal scores therefore go to a random node order drawn once per seed.

``artifact`` (the default) reproduces that construction: the same renaming from a seeded
permutation, the node's trace name kept in the annotation ``TRACE_NODE``, and the nodes appended
to the ledger in the order of their new names. podledger's core resolves equal scores by the
lowest node index (nodes ordered by the log position at which they were first observed, then
name), so the lowest index is the smallest name and the scheduler's own tie-break applies the
artifact's order: nothing in the core changes and ``replay --verify`` re-derives every decision
from the log.

The permutation is Python's ``random.Random`` seeded with ``"paper-node-order/<seed>"``, not
Go's ``math/rand``: reproducing Go's generator needs its 607-value seed table, and the artifact's
stream position at ``Perm`` depends on the tuning's draws, which are Python's here too (item 1 of
"Known differences" in ``docs/paper.md``). So the order has the artifact's distribution (uniform
per seed, independent of the pod sequence), not its exact values.

``index``: the nodes keep their trace names and the CSV file's order (podledger's tie-break
before this option existed).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler import gpufrag
from scheduler import gpushare as gs

if TYPE_CHECKING:
    from bench.paper import Task

NODE_ORDERS = ("artifact", "index")
DEFAULT_NODE_ORDER = "artifact"
TRACE_NODE = "bench.podledger.io/trace-node"  # node annotation: the node's name in the trace
NAMESPACE = "openb"  # the namespace of every pod of a run


def node_permutation(n: int, seed: int) -> list[int]:
    """A permutation of ``0..n-1`` drawn from ``seed`` (the same for a seed on every run)."""
    perm = list(range(n))
    random.Random(f"paper-node-order/{seed}").shuffle(perm)
    return perm


def ordered_nodes(rows: Sequence[dict[str, Any]], seed: int, order: str) -> list[tuple[str, dict[str, Any]]]:
    """``(ledger name, trace row)`` per node, in the order they are appended to the ledger (the
    scheduler's tie-break order). ``artifact``: the artifact's renaming (trace names sorted,
    ``%04d-<name>`` from a per-seed permutation) sorted by the new name; ``index``: trace names,
    file order."""
    if order == "index":
        return [(r["sn"], r) for r in rows]
    if order != "artifact":
        raise ValueError(f"node order {order!r}: one of {', '.join(NODE_ORDERS)}")
    by_name = sorted(rows, key=lambda r: r["sn"])
    perm = node_permutation(len(by_name), seed)
    named = [(f"{perm[i]:04d}-{r['sn']}", r) for i, r in enumerate(by_name)]
    return sorted(named, key=lambda nr: nr[0])


# ------------------------------------------------------------- the run's manifests
def node_manifest(r: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The trace row as a Node named ``name`` (default: its trace name, else the trace name is
    kept in the annotation ``TRACE_NODE``)."""
    cap = {"cpu": f"{r['cpu_milli']}m", "memory": f"{r['memory_mib']}Mi", gs.NVIDIA_GPU: str(r["gpu"])}
    meta: dict[str, Any] = {"name": name or r["sn"]}
    if name and name != r["sn"]:
        meta["annotations"] = {TRACE_NODE: r["sn"]}
    if (r.get("model") or "").strip():
        meta["labels"] = {gs.GPU_MODEL: r["model"].strip()}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"capacity": cap}}


def pod_manifest(t: Task) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": t.name.lower(), "namespace": NAMESPACE}
    spec: dict[str, Any] = {
        "containers": [
            {"name": "task", "resources": {"requests": {"cpu": f"{t.cpu}m", "memory": f"{t.mem}Mi"}}}
        ]
    }
    if t.count > 0:
        ann = {gs.GPU_MILLI: str(t.milli), gs.GPU_COUNT: str(t.count)}
        if t.spec:
            ann[gs.GPU_MODEL] = "|".join(t.spec)
            term = {"matchExpressions": [{"key": gs.GPU_MODEL, "operator": "In", "values": list(t.spec)}]}
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            }
        meta["annotations"] = ann
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def config_manifest(policy: str) -> dict[str, Any]:
    return {
        "apiVersion": "podledger.io/v1alpha1",
        "kind": "SchedulerConfig",
        "metadata": {"name": "paper"},
        "spec": {"pluginWeights": {policy: 1}, "preemptionAlgorithm": "None"},
    }


def frag_at(
    named: list[tuple[str, dict[str, Any]]], placed: list[tuple[Task, str, tuple[int, ...]]], typical: Any
) -> tuple[float, float]:
    """(fragmentation in GPUs, % of the free GPUs) of the cluster (``(name, row)`` per node)
    holding ``placed``."""
    idx = {nm: i for i, (nm, _) in enumerate(named)}
    nodes = [r for _, r in named]
    g = max(int(r["gpu"]) for r in nodes)
    free = np.full((len(nodes), g), -1, dtype=np.int64)
    cpu = np.array([int(r["cpu_milli"]) for r in nodes], dtype=np.int64)
    for i, r in enumerate(nodes):
        free[i, : int(r["gpu"])] = gs.MILLI
    for t, node, devs in placed:
        i = idx[node]
        cpu[i] -= t.cpu
        for dv in devs:
            free[i, dv] -= t.milli
    mid = gs.model_ids((r.get("model") or "").strip() for r in nodes)
    amount = float(gpufrag.fragmentation(free, cpu, mid, typical).sum())
    idle = float(np.maximum(free, 0).sum())
    return amount / 1000, 100 * amount / idle if idle else 0.0
