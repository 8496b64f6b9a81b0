"""Placement scoring (§6.4): which successful placement of a group wins.

Two PlacementScore plugins, each giving every candidate placement a score 0..100; the totals
``sum(weight(plugin) * score)`` are compared, weights from ``config.plugin_weights`` (default 1):

* ``NodeResourcesFit`` (bin packing): MostAllocated shape over the placement as a whole,
  ``min(used, alloc) * 100 // alloc`` per resource of ``config.resource_weights`` (weight > 0,
  allocatable > 0), where ``alloc`` sums the placement's allocatable and ``used`` its requested
  resources plus the pods the evaluation proposes there; weighted average (integer division);
* ``PodGroupPodsCount``: raw ``s(p)`` = pods of the group already scheduled + proposed in ``p``,
  normalized ``s * 100 // max s`` (``max s == 0``: upstream reports ``no pods from pod group are
  assigned to any of the candidate placements``; no successful placement can have it, every
  candidate then scores 0).

Highest total wins; equal totals -> the placement whose name (``<topology key>=<value>``) sorts
first (upstream breaks ties at random). Sums over a placement's nodes come from per-domain sums
(``np.add.reduceat``) when every candidate is a predicted single domain, else from node masks;
both give the same integers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scheduler.framework import PlacementScorePlugin
from scheduler.model import SchedulerConfig
from scheduler.plugins import node_resources_fit
from scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from scheduler.cycle.results import PlacementEval

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

POD_COUNT_NAME = "PodGroupPodsCount"
MAX_SCORE = node_resources_fit.MAX_NODE_SCORE


@dataclass
class Candidates:
    """The successful placements of one evaluation, as the scorers see them.

    ``key``/``parent`` are set when every candidate is a single topology domain predicted by the
    vectorized evaluation (domain sums); otherwise each placement's node mask is summed.
    """

    evals: Sequence[PlacementEval]
    snap: Snapshot
    config: SchedulerConfig
    key: str | None = None
    parent: BOOL | None = None
    _usage: tuple[dict[str, I64], dict[str, I64]] | None = field(default=None, repr=False)

    def usage(self) -> tuple[dict[str, I64], dict[str, I64]]:
        """Per scored resource: (allocatable sums, requested + proposed sums), one per candidate."""
        if self._usage is None:
            self._usage = self._sums()
        return self._usage

    def counts(self) -> I64:
        return np.array([ev.scheduled_before + ev.placed for ev in self.evals], dtype=np.int64)

    def _sums(self) -> tuple[dict[str, I64], dict[str, I64]]:
        snap, evals = self.snap, self.evals
        alloc_s: dict[str, I64] = {}
        used_s: dict[str, I64] = {}
        for res, w in self.config.resource_weights.items():
            r = snap.res_index.get(res)
            if r is None or w <= 0:
                continue
            a = snap.alloc[r]
            add = np.array([ev.added.get(res, 0) for ev in evals], dtype=np.int64)
            if self.key is not None and self.parent is not None:
                dom = snap.domains(self.key)
                ids = np.array([ev.placement.domain for ev in evals], dtype=np.intp)
                alloc_s[res] = dom.sums(np.where(self.parent, a, 0))[ids]
                used_s[res] = dom.sums(np.where(self.parent, a - snap.free[r], 0))[ids] + add
            else:
                al = np.array([int(a[ev.placement.nodes].sum()) for ev in evals], dtype=np.int64)
                fr = np.array([int(snap.free[r][ev.placement.nodes].sum()) for ev in evals], dtype=np.int64)
                alloc_s[res] = al
                used_s[res] = al - fr + add
        return alloc_s, used_s


def bin_packing_scores(
    alloc_sums: dict[str, I64], used_sums: dict[str, I64], weights: Mapping[str, int]
) -> I64:
    """MostAllocated score of each placement from its resource sums (weighted average)."""
    n = len(next(iter(alloc_sums.values()))) if alloc_sums else 0
    total: I64 = np.zeros(n, dtype=np.int64)
    wsum: I64 = np.zeros(n, dtype=np.int64)
    for res, w in sorted(weights.items()):
        if w <= 0 or res not in alloc_sums:
            continue
        a = alloc_sums[res]
        u = used_sums[res]
        pos = a > 0
        safe = np.where(pos, a, 1)
        s = np.minimum(u, safe) * MAX_SCORE // safe
        total += np.where(pos, s * w, 0)
        wsum += np.where(pos, w, 0)
    out: I64 = np.where(wsum > 0, total // np.maximum(wsum, 1), 0)
    return out


def normalize_counts(raw: I64) -> I64:
    """``s * 100 // max s``; all zeros when ``max s <= 0`` (see the module docstring)."""
    m = int(raw.max()) if len(raw) else 0
    if m <= 0:
        return np.zeros(len(raw), dtype=np.int64)
    out: I64 = raw * MAX_SCORE // m
    return out


class NodeResourcesFitPlacement:
    """PlacementScore: bin packing over the placement."""

    name = node_resources_fit.NAME
    default_weight = 1

    def placement_scores(self, candidates: Candidates) -> I64:
        alloc_s, used_s = candidates.usage()
        return bin_packing_scores(alloc_s, used_s, candidates.config.resource_weights)


class PodGroupPodsCount:
    """PlacementScore: placements that hold more pods of the group score higher."""

    name = POD_COUNT_NAME
    default_weight = 1

    def placement_scores(self, candidates: Candidates) -> I64:
        return normalize_counts(candidates.counts())


def best(candidates: Candidates, plugins: Sequence[PlacementScorePlugin]) -> PlacementEval:
    """The winning candidate: highest weighted total, then the first placement name."""
    evals = candidates.evals
    weights = candidates.config.plugin_weights
    total: I64 = np.zeros(len(evals), dtype=np.int64)
    for p in plugins:
        total = total + int(weights.get(p.name, p.default_weight)) * p.placement_scores(candidates)
    order = sorted(range(len(evals)), key=lambda k: (-int(total[k]), evals[k].placement.name))
    return evals[order[0]]
