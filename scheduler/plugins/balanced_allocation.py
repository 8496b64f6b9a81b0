"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay balanced.

Score (kube-scheduler): per resource (cpu, memory) ``fraction = min(requested / allocatable, 1)``
with the node's requested amount plus the pod's (plain requests, not the non-zero defaults);
resources with allocatable 0 are skipped; ``std`` = ``|f1 - f2| / 2`` for two fractions (the
population standard deviation in general); score = ``int((1 - std) * 100)``, not normalized.
Skipped for a pod that requests neither resource. Weight 1 in upstream's default profile
(``default_plugins.go``) and in podledger's; ``pluginWeights`` changes it (0 turns it off).

The score depends only on the pod's cpu and memory requests and the node's resources, so the pod
scheduler keeps it per demand in NodeResourcesFit's incremental cache (``scheduler.fitcache``)
beside NodeResourcesFit's own score: it is not a pod-aware plugin of the profile. ``score_nodes``
and ``score_node`` here are the same formula over a pod (benchmarks and the pure-Python reference).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.model import CPU, MEMORY, Pod
from scheduler.snapshot import R_CPU, R_MEM, Snapshot

NAME = "NodeResourcesBalancedAllocation"
RESOURCES = ((CPU, R_CPU), (MEMORY, R_MEM))
MAX_NODE_SCORE = 100

I64 = npt.NDArray[np.int64]


def skip(pod: Pod) -> bool:
    return all(int(pod.requests.get(r, 0)) <= 0 for r, _ in RESOURCES)


def score_node(pod: Pod, alloc: Mapping[str, int], requested: Mapping[str, int]) -> int:
    fractions = []
    for res, _ in RESOURCES:
        a = int(alloc.get(res, 0))
        if a == 0:
            continue
        f = float(int(requested.get(res, 0)) + int(pod.requests.get(res, 0))) / float(a)
        fractions.append(min(f, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def requests_of(pod: Pod) -> tuple[int, int] | None:
    """The pod's (cpu, memory) requests as the score reads them; None when it is skipped."""
    if skip(pod):
        return None
    return int(pod.requests.get(CPU, 0)), int(pod.requests.get(MEMORY, 0))


def score_demand(snap: Snapshot, cpu: int, mem: int, idx: npt.NDArray[np.intp] | None) -> I64:
    """The score of a pod requesting ``cpu`` and ``mem`` on the nodes ``idx`` (all when None)."""
    fr = []
    valid = []
    for (_, r), req in zip(RESOURCES, (cpu, mem), strict=True):
        a = snap.alloc[r] if idx is None else snap.alloc[r][idx]
        free = snap.free[r] if idx is None else snap.free[r][idx]
        used = a - free + req
        ok = a > 0
        f = np.where(ok, used.astype(np.float64) / np.where(ok, a, 1).astype(np.float64), 0.0)
        fr.append(np.minimum(f, 1.0))
        valid.append(ok)
    both = valid[0] & valid[1]
    std = np.where(both, np.abs((fr[0] - fr[1]) / 2), 0.0)
    out: I64 = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return out


def score_one(alloc_cpu: int, alloc_mem: int, free_cpu: int, free_mem: int, cpu: int, mem: int) -> int:
    """``score_demand`` for one node, in plain Python (the same IEEE operations, the same result)."""
    fc = min((alloc_cpu - free_cpu + cpu) / alloc_cpu, 1.0) if alloc_cpu > 0 else 0.0
    fm = min((alloc_mem - free_mem + mem) / alloc_mem, 1.0) if alloc_mem > 0 else 0.0
    std = abs((fc - fm) / 2) if alloc_cpu > 0 and alloc_mem > 0 else 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def score_nodes(pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp]) -> I64:
    cpu, mem = int(pod.requests.get(CPU, 0)), int(pod.requests.get(MEMORY, 0))
    return score_demand(snap, cpu, mem, idx)


class BalancedAllocation:
    """The plugin's name and default weight (its score is built into the pod scheduler)."""

    name = NAME
    default_weight = 1
