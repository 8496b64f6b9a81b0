"""NodeResourcesFit's incremental per-demand cache: the fit and node score of one demand over
every node, kept current through the snapshot's change log (only nodes changed since the last
use are recomputed). Used by ``scheduler.podsched``.

The cached score is the weighted sum of the two scores that depend on nothing but the demand and
the node: NodeResourcesFit's and NodeResourcesBalancedAllocation's (upstream's default profile
scores with both, weight 1 each; ``pluginWeights`` sets them)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.model import CPU, MEMORY, SchedulerConfig
from scheduler.plugins import balanced_allocation, node_resources_fit
from scheduler.snapshot import R_CPU, R_MEM, R_PODS, Demand, Snapshot

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]
IDX = npt.NDArray[np.intp]
MAX_SCORE = 100


class DynamicInfo:
    """Per-demand NodeResourcesFit fit + score over all nodes: ``mscore[n]`` is the node score
    (NodeResourcesFit's times its weight plus NodeResourcesBalancedAllocation's times its weight)
    when the pod fits node ``n`` and -1 otherwise. Kept current through the snapshot's change log:
    only nodes changed since the last use are recomputed."""

    __slots__ = (
        "epoch",
        "pos",
        "mscore",
        "rows",
        "amounts",
        "demand",
        "plan",
        "plan_alloc",
        "need",
        "most",
        "simple",
        "strategy",
        "weights",
        "need_rows",
        "need_amt",
        "all_nz",
        "plan_rows",
        "plan_w",
        "plan_add",
        "wsum",
        "w_fit",
        "w_bal",
        "bal",
        "bal_alloc",
        "scored",
    )

    def __init__(
        self, snap: Snapshot, d: Demand, rows: tuple[int, ...], cfg: SchedulerConfig, scored: bool = True
    ) -> None:
        self.scored = scored
        self.rows = rows
        self.amounts = d.amounts
        self.demand = d
        self.strategy = cfg.scoring_strategy
        self.weights = cfg.resource_weights
        self.most = cfg.scoring_strategy == "MostAllocated"
        dn = d.as_dict()
        plan: list[tuple[int, int, bool, int]] = []
        for r, w, res in node_resources_fit.scored_resources(snap, d, cfg.resource_weights):
            if r == R_CPU:
                plan.append((r, w, True, d.nz_cpu))
            elif r == R_MEM:
                plan.append((r, w, True, d.nz_mem))
            else:
                plan.append((r, w, False, dn.get(res, 0)))
        self.plan = plan
        self.need = ((R_PODS, 1), *zip(rows, d.amounts, strict=True))  # (row, amount) a node must hold
        self.need_rows = np.array([*rows, R_PODS], dtype=np.intp)[:, None]
        self.need_amt = np.array([*d.amounts, 1], dtype=np.int64)[:, None]
        self.all_nz = bool(plan) and all(p[2] for p in plan)
        self.plan_rows = np.array([p[0] for p in plan], dtype=np.intp)[:, None]
        self.plan_w = np.array([p[1] for p in plan], dtype=np.int64)[:, None]
        self.plan_add = np.array([p[3] for p in plan], dtype=np.int64)[:, None]
        self.wsum = int(sum(p[1] for p in plan))
        pw = cfg.plugin_weights
        self.w_fit = int(pw.get(node_resources_fit.NAME, 1))
        self.w_bal = int(
            pw.get(balanced_allocation.NAME, balanced_allocation.BalancedAllocation.default_weight)
        )
        cpu, mem = dn.get(CPU, 0), dn.get(MEMORY, 0)
        # (cpu, memory) requests when BalancedAllocation scores this demand (weighted, not skipped)
        self.bal = (cpu, mem) if self.w_bal > 0 and (cpu > 0 or mem > 0) else None
        self.full(snap)

    @property
    def fit(self) -> BOOL:
        out: BOOL = self.mscore >= 0
        return out

    def full(self, snap: Snapshot) -> None:
        fit = node_resources_fit.fit_mask(snap, self.rows, self.amounts)
        self.epoch = snap.epoch
        self.pos = len(snap.log)
        if not self.scored:
            self.mscore = np.where(fit, 0, -1)
            return
        score = node_resources_fit.score_nodes(snap, self.demand, None, self.strategy, self.weights)
        score = score * self.w_fit
        if self.bal is not None:
            score = score + self.w_bal * balanced_allocation.score_demand(snap, *self.bal, None)
            self.bal_alloc = (snap.alloc[R_CPU].tolist(), snap.alloc[R_MEM].tolist())
        self.mscore = np.where(fit, score, -1)
        self.simple = all(bool((snap.alloc[r] > 0).all()) for r, _, _, _ in self.plan)
        # the plan with each resource's allocatable per node as Python ints (it changes only with
        # the epoch): the few-node path reads them without a NumPy conversion per node
        self.plan_alloc = [(r, w, is_nz, add, snap.alloc[r].tolist()) for r, w, is_nz, add in self.plan]

    def refresh(self, snap: Snapshot) -> None:
        """Make every cached value exact: the nodes named by the log entries since the last use
        are recomputed (all of them after a new epoch or when too many changed)."""
        log = snap.log
        n = len(log)
        if self.epoch != snap.epoch or n - self.pos > max(64, len(snap.names) // 8):
            self.full(snap)
        elif self.pos < n:
            changed = {i if i >= 0 else ~i for i in log[self.pos : n]}
            self.pos = n
            self._recompute(snap, changed)

    def score_too(self, snap: Snapshot) -> None:
        """Make a fit-only cache (``scored=False``) score as well, every value exact."""
        if not self.scored:
            self.scored = True
            self.full(snap)
        else:
            self.refresh(snap)

    def best(self, snap: Snapshot, mask: BOOL | None) -> int:
        """argmax of the exact masked score over the nodes of ``mask`` (all when None); -1 if no
        node fits. Ties -> lowest node index."""
        self.score_too(snap)
        ms = self.mscore if mask is None else np.where(mask, self.mscore, -1)
        c = int(ms.argmax())
        return c if ms[c] >= 0 else -1

    def _recompute(self, snap: Snapshot, changed: set[int] | tuple[int, ...]) -> None:
        if not changed:
            return
        free, nz, alloc = snap.free, snap.nz, snap.alloc
        if not self.scored:
            self._refit(free, changed)
            return
        if len(changed) <= 3 and self.simple:
            ms, need, most, wsum = self.mscore, self.need, self.most, self.wsum
            w_fit, w_bal, bal = self.w_fit, self.w_bal, self.bal
            for i in changed:
                # the node's columns as Python ints: one conversion each instead of one per read
                f_i = free[:, i].tolist()
                for r, a in need:
                    if f_i[r] < a:
                        ms[i] = -1
                        break
                else:
                    nz_i = nz[:, i].tolist()
                    tot = 0
                    for r, w, is_nz, add, al_of in self.plan_alloc:
                        al = al_of[i]
                        used = (nz_i[r] if is_nz else al - f_i[r]) + add
                        if most:
                            sc = min(used, al) * MAX_SCORE // al
                        else:
                            sc = (al - used) * MAX_SCORE // al if used <= al else 0
                        tot += sc * w
                    v = (tot // wsum if wsum else 0) * w_fit
                    if bal is not None:
                        ac, am = self.bal_alloc
                        v += w_bal * balanced_allocation.score_one(
                            ac[i], am[i], f_i[R_CPU], f_i[R_MEM], bal[0], bal[1]
                        )
                    ms[i] = v
            return
        idx = np.fromiter(changed, dtype=np.intp, count=len(changed))
        fit = (free[self.need_rows, idx] >= self.need_amt).all(axis=0)
        if self.simple and self.all_nz and self.wsum:
            pr = self.plan_rows
            al2 = alloc[pr, idx]
            used2 = nz[pr, idx] + self.plan_add
            if self.most:
                sc2 = np.minimum(used2, al2) * MAX_SCORE // al2
            else:
                sc2 = np.maximum(al2 - used2, 0) * MAX_SCORE // al2
            score = (sc2 * self.plan_w).sum(axis=0) // self.wsum
        else:
            score = node_resources_fit.score_nodes(snap, self.demand, idx, self.strategy, self.weights)
        score = score * self.w_fit
        if self.bal is not None:
            score = score + self.w_bal * balanced_allocation.score_demand(snap, *self.bal, idx)
        self.mscore[idx] = np.where(fit, score, -1)

    def _refit(self, free: I64, changed: set[int] | tuple[int, ...]) -> None:
        """``_recompute`` of a fit-only cache: 0 where the pod fits, -1 elsewhere."""
        ms, need = self.mscore, self.need
        if len(changed) <= 3:
            for i in changed:
                f_i = free[:, i].tolist()
                for r, a in need:
                    if f_i[r] < a:
                        ms[i] = -1
                        break
                else:
                    ms[i] = 0
            return
        idx = np.fromiter(changed, dtype=np.intp, count=len(changed))
        fit = (free[self.need_rows, idx] >= self.need_amt).all(axis=0)
        ms[idx] = np.where(fit, 0, -1)
