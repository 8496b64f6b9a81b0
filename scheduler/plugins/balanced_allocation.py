"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay balanced.

Score (kube-scheduler): per resource (cpu, memory) ``fraction = min(requested / allocatable, 1)``
with the node's requested amount plus the pod's (plain requests, not the non-zero defaults);
resources with allocatable 0 are skipped; ``std`` = ``|f1 - f2| / 2`` for two fractions (the
population standard deviation in general); score = ``int((1 - std) * 100)``, not normalized.
Skipped for a pod that requests neither resource. Off by default in podledger (weight 0: it
would change every existing decision); enable it with ``pluginWeights``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.model import CPU, MEMORY, Pod, SchedulerConfig
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


def score_nodes(pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp]) -> I64:
    fr = []
    valid = []
    for res, r in RESOURCES:
        a = snap.alloc[r][idx]
        used = a - snap.free[r][idx] + int(pod.requests.get(res, 0))
        ok = a > 0
        f = np.where(ok, used.astype(np.float64) / np.where(ok, a, 1).astype(np.float64), 0.0)
        fr.append(np.minimum(f, 1.0))
        valid.append(ok)
    both = valid[0] & valid[1]
    std = np.where(both, np.abs((fr[0] - fr[1]) / 2), 0.0)
    out: I64 = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return out


class BalancedAllocation:
    name = NAME
    default_weight = 0

    def score_active(self, pod: Pod, snap: Snapshot, config: SchedulerConfig) -> bool:
        return int(config.plugin_weights.get(NAME, self.default_weight)) > 0 and not skip(pod)

    def score_pod(
        self, pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp], config: SchedulerConfig
    ) -> I64 | None:
        if skip(pod):
            return None
        return score_nodes(pod, snap, idx)
