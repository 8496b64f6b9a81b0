"""SchedulePod: filter, score and select a host for one pod, vectorized over the snapshot.

Filters: the profile's node-static filters (default: NodeUnschedulable, TaintToleration,
NodeAffinity; cached per pod filter signature until the node set changes), then NodeResourcesFit
(dynamic, built in: an incremental per-node cache). Scores: NodeResourcesFit (not normalized)
plus the profile's node-static scorers (default: TaintToleration reverse-normalized, NodeAffinity
normalized), weighted by ``config.plugin_weights``. Pod-aware filters and scorers (NodePorts
before NodeResourcesFit; PodTopologySpread, InterPodAffinity after it; their scores) read the
scheduled pods and are evaluated per pod, only when ``active`` for it: a pod none of them
concerns decides exactly as without them. All feasible nodes are scored unless
``config.percentage_of_nodes_to_score`` is below 100: then only the first
``num_feasible_nodes_to_find`` feasible nodes in node order (upstream rotates the start node
between cycles; podledger always starts at the first node: deterministic).

Deterministic tie-break: among nodes with the highest total score, the lowest node index
(= first node in ``(seq, name)`` order) wins; upstream picks one at random.
A pod with ``nominated_node`` set gets that node when it passes all filters (upstream's
"evaluate the nominated node first").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler import gpushare
from scheduler.fitcache import DynamicInfo
from scheduler.framework import (
    Diagnosis,
    FilterPlugin,
    FilterResult,
    FilterSignature,
    PodFilterPlugin,
    PodScorePlugin,
    ScorePlugin,
    diagnose,
    signature_of,
)
from scheduler.messages import ERR_TOO_MANY_PODS
from scheduler.model import Pod, SchedulerConfig
from scheduler.nominated import NominatedColumns
from scheduler.plugins import gpu, node_affinity, node_resources_fit, node_unschedulable, taint_toleration
from scheduler.snapshot import R_PODS, Demand, Snapshot, make_demand

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]
IDX = npt.NDArray[np.intp]

MAX_SCORE = 100
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind (percentage 0 = the adaptive default)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    if percentage <= 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class StaticInfo:
    generation: int
    results: list[FilterResult]  # one per profile filter, in order
    ok: BOOL
    raws: tuple[I64 | None, ...]  # one per profile score plugin (None: cannot change the ranking)
    all_ok: bool = False
    ranks: bool = False  # does any node-static score plugin rank the nodes (a raw that is not None)?


@dataclass(slots=True)
class PodInfo:
    pod: Pod
    demand: Demand
    rows: tuple[int, ...]
    sig: FilterSignature
    fit_key: tuple[
        object, ...
    ]  # (signature, demand): pods with equal fit_key are interchangeable for filtering
    st: StaticInfo | None = None
    dyn: DynamicInfo | None = None
    dyn_gen: int = -1


def default_normalize(scores: I64, reverse: bool) -> I64:
    m = int(scores.max()) if len(scores) else 0
    if m == 0:
        if reverse:
            return np.full(len(scores), MAX_SCORE, dtype=np.int64)
        return scores
    out: I64 = scores * MAX_SCORE // m
    if reverse:
        out = MAX_SCORE - out
    return out


class PodScheduler:
    def __init__(self, snap: Snapshot, config: SchedulerConfig) -> None:
        self.snap = snap
        self.config = config
        self._info: dict[str, PodInfo] = {}
        # per pod shape (what ``info`` reads of a pod but its identity), the PodInfo of the last
        # pod of that shape: a pod of a known shape shares its demand, rows and signature and
        # starts from its static and dynamic caches (both checked before use)
        self._shapes: dict[tuple[object, ...], PodInfo] = {}
        self._static: dict[FilterSignature, StaticInfo] = {}
        self._dynamic: dict[tuple[object, ...], DynamicInfo] = {}
        self._dyn_gen = 0
        self._gen = -1
        self.nominated: dict[str, dict[str, tuple[int, Demand]]] = {}  # node -> pod -> (priority, demand)
        self._nominated_of: dict[str, str] = {}
        self._nom_cols = NominatedColumns()  # `nominated` as NumPy columns
        self.filters: tuple[FilterPlugin, ...] = (
            node_unschedulable.NodeUnschedulable(),
            taint_toleration.TaintToleration(),
            node_affinity.NodeAffinity(),
        )
        self.scores: tuple[ScorePlugin, ...] = (
            taint_toleration.TaintToleration(),
            node_affinity.NodeAffinity(),
        )
        self.pod_filters: tuple[PodFilterPlugin, ...] = ()
        self.pod_scores: tuple[PodScorePlugin, ...] = ()
        self._pod_cache: tuple[Pod, object, list[FilterResult]] | None = None
        # device-level GPU sharing (scheduler.gpushare): FGD's target workload, and the devices
        # chosen for a pod by the last ``schedule`` that placed it
        self.workload = gpushare.Workload()
        self.gpu_choice: dict[str, tuple[int, ...]] = {}
        self._derive()

    def _derive(self) -> None:
        """What each cycle reads of the config and the plugins, worked out when they change (and
        the pod shapes forgotten: their PodInfos carry caches made under the old ones)."""
        self._shapes.clear()
        w = self.config.plugin_weights
        self._gpu_policy = gpu.active(w)
        self._gpu_tags = gpu.wants_tags(self._gpu_policy)
        self._weighted_pod_scores = tuple(
            sc for sc in self.pod_scores if int(w.get(sc.name, sc.default_weight)) > 0
        )

    def set_plugins(
        self,
        filters: tuple[FilterPlugin, ...],
        scores: tuple[ScorePlugin, ...],
        pod_filters: tuple[PodFilterPlugin, ...] = (),
        pod_scores: tuple[PodScorePlugin, ...] = (),
    ) -> None:
        """The profile's filters and scorers (drops every cached result)."""
        self.filters, self.scores = filters, scores
        self.pod_filters, self.pod_scores = pod_filters, pod_scores
        self._pod_cache = None
        self._static.clear()
        self._info.clear()
        self._gen = -1
        self._derive()

    def set_config(self, config: SchedulerConfig) -> None:
        self.config = config
        self._dynamic.clear()
        self._dyn_gen += 1
        self._derive()

    # --------------------------------------------------------------- caches
    def info(self, pod: Pod) -> PodInfo:
        key = pod.key
        pi = self._info.get(key)
        if pi is not None and pi.pod is pod:
            return pi
        shape = (
            tuple(pod.requests.items()),
            tuple(pod.tolerations),
            tuple(pod.node_selector.items()),
            tuple(pod.required_terms),
            tuple(pod.preferred_terms),
            pod.spec_node_name,
        )
        like = self._shapes.get(shape)
        if like is None:
            d = make_demand(pod.requests)
            sig = signature_of(pod)
            pi = PodInfo(pod, d, self.snap.resource_rows(d), sig, (sig, d))
            if len(self._shapes) >= 4096:
                self._shapes.clear()
        else:
            pi = PodInfo(pod, like.demand, like.rows, like.sig, like.fit_key, like.st, like.dyn, like.dyn_gen)
        self._shapes[shape] = pi
        self._info[key] = pi
        return pi

    def forget(self, key: str) -> None:
        self._info.pop(key, None)

    def static(self, pi: PodInfo) -> StaticInfo:
        snap = self.snap
        if snap._stale:
            snap.refresh()
        st0 = pi.st
        if st0 is not None and st0.generation == snap.generation:
            return st0
        if self._gen != snap.generation:
            self._static.clear()
            self._gen = snap.generation
        st = self._static.get(pi.sig)
        if st is None:
            sig = pi.sig
            results = [f.filter(sig, snap) for f in self.filters]
            ok: BOOL = np.ones(snap.n, dtype=np.bool_)
            for r in results:
                ok &= r.ok
            raws = tuple(sc.score_raw(sig, snap) for sc in self.scores)
            ranks = any(r is not None for r in raws)
            st = StaticInfo(snap.generation, results, ok, raws, bool(ok.all()), ranks)
            if len(self._static) > 4096:
                self._static.clear()
            self._static[pi.sig] = st
        pi.st = st
        return st

    def dynamic(self, pi: PodInfo) -> DynamicInfo:
        """The pod's DynamicInfo with every value exact (its fit; its scores too unless a GPU
        policy ranks the nodes: ``scored``)."""
        c = self._dyn(pi)
        c.refresh(self.snap)
        return c

    def scored(self, pi: PodInfo) -> DynamicInfo:
        """The pod's DynamicInfo with every value exact, its scores included."""
        c = self._dyn(pi)
        c.score_too(self.snap)
        return c

    def _dyn(self, pi: PodInfo) -> DynamicInfo:
        snap = self.snap
        if snap._stale:
            snap.refresh()
        c = pi.dyn
        if c is None or pi.dyn_gen != self._dyn_gen:
            key = (pi.rows, pi.demand)
            c = self._dynamic.get(key)
            if c is None:
                # while a GPU policy ranks the nodes, NodeResourcesFit's and
                # BalancedAllocation's scores are not read: the cache keeps the fit alone
                c = DynamicInfo(snap, pi.demand, pi.rows, self.config, self._gpu_policy is None)
                if len(self._dynamic) >= 256:
                    self._dynamic.clear()
                    self._dyn_gen += 1
                self._dynamic[key] = c
            pi.dyn = c
            pi.dyn_gen = self._dyn_gen
        return c

    # ------------------------------------------------------------- pod-aware plugins
    def _active_scores(self, pod: Pod) -> list[PodScorePlugin]:
        snap, cfg = self.snap, self.config
        return [sc for sc in self._weighted_pod_scores if sc.score_active(pod, snap, cfg)]

    def pod_aware(self, pi: PodInfo) -> bool:
        """Does a pod-aware filter or scorer concern this pod now?"""
        pod, snap, cfg = pi.pod, self.snap, self.config
        for f in self.pod_filters:
            if f.active(pod, snap):
                return True
        for sc in self._weighted_pod_scores:
            if sc.score_active(pod, snap, cfg):
                return True
        return False

    def interchange_key(self, pi: PodInfo) -> object:
        """Pods with equal keys get the same filter verdicts in the same cluster state."""
        return pi.fit_key if not self.pod_aware(pi) else (pi.fit_key, pi.pod.key)

    def _limited(self) -> bool:
        """Does ``percentage_of_nodes_to_score`` leave feasible nodes unscored?"""
        pct = self.config.percentage_of_nodes_to_score
        if pct >= 100:
            return False
        n = self.snap.n
        return num_feasible_nodes_to_find(pct, n) < n

    def pod_results(self, pi: PodInfo) -> list[FilterResult]:
        """Results of the pod-aware filters active for the pod (in profile order)."""
        if not self.pod_filters:
            return []
        snap = self.snap
        snap.refresh()
        pod = pi.pod
        key = (snap.epoch, snap.generation, len(snap.pod_log))
        c = self._pod_cache
        if c is not None and c[0] is pod and c[1] == key:
            return c[2]
        out = [f.filter_pod(pod, snap) for f in self.pod_filters if f.active(pod, snap)]
        self._pod_cache = (pod, key, out)
        return out

    # ------------------------------------------------------------- filtering
    # ------------------------------------------------- nominated pods (upstream addNominatedPods)
    def set_nominated(self, pod_key: str, node: str | None, priority: int, d: Demand | None) -> None:
        """Register (or clear, with ``node=None``) a pending pod's nominated node: its requests are
        reserved on that node when filtering pods of lower or equal priority."""
        old = self._nominated_of.pop(pod_key, None)
        if old is not None:
            per = self.nominated.get(old)
            if per is not None:
                gone = per.pop(pod_key, None)
                self._nom_cols.remove(pod_key, gone[1] if gone is not None else None)
                self.snap.unwatch(pod_key)
                if not per:
                    del self.nominated[old]
        if node is not None and d is not None:
            self.nominated.setdefault(node, {})[pod_key] = (priority, d)
            self._nominated_of[pod_key] = node
            self._nom_cols.add(pod_key, node, priority, d)
            self.snap.watch(pod_key)

    def _reserved_check(self, pi: PodInfo) -> tuple[I64, list[tuple[str, BOOL]]] | None:
        """The nominated-pod check (upstream addNominatedPods + NodeResourcesFit) as per-node
        NumPy totals: the nodes holding nominated pods that count against ``pi`` (priority >= its
        own, not ``pi`` itself, not assumed), ascending, and per fit reason (too many pods, then
        each of ``pi``'s resources) which of those nodes fail it once the nominated pods'
        requests are added. Only ``pi``'s own resources are compared. None when no node holds
        such a pod."""
        if not self.nominated:
            return None
        cols, snap = self._nom_cols, self.snap
        sel = cols.counted(snap.index, pi.pod.priority, (pi.pod.key,), snap.pods_among(snap.watched))
        if not sel.any():
            return None
        count, tots = cols.totals(snap.index, snap.n, sel, pi.demand.names)
        nodes = np.flatnonzero(count)
        free, ri = snap.free, snap.res_index
        reasons: list[tuple[str, BOOL]] = [(ERR_TOO_MANY_PODS, free[R_PODS, nodes] - count[nodes] < 1)]
        for name, a, tot in zip(pi.demand.names, pi.demand.amounts, tots, strict=True):
            r = ri.get(name)
            have = free[r, nodes] if r is not None else np.zeros(len(nodes), dtype=np.int64)
            reasons.append((node_resources_fit.insufficient(name), a > have - tot[nodes]))
        return nodes, reasons

    def feasible(self, pi: PodInfo, subset: BOOL | None) -> BOOL:
        st = self.static(pi)
        ok: BOOL = self.dynamic(pi).fit
        if not st.all_ok:
            ok &= st.ok
        if subset is not None:
            ok &= subset
        for r in self.pod_results(pi):
            ok &= r.ok
        check = self._reserved_check(pi)
        if check is not None:
            nodes, reasons = check
            bad = np.zeros(len(nodes), dtype=np.bool_)
            for _, hit in reasons:
                bad |= hit
            ok[nodes[bad]] = False
        return ok

    def diagnose(self, pi: PodInfo, subset: BOOL | None) -> Diagnosis:
        if self.snap.n == 0:
            return Diagnosis(0, {}, {})
        # the profile's filters, when they pass every node, reject none: nothing to count
        return diagnose(self.filter_results(pi, passing=False), subset)

    def filter_results(self, pi: PodInfo, passing: bool = True) -> list[FilterResult]:
        """Every filter's result, in filter order (the profile's filters first); without
        ``passing``, none of the profile's filters when they all pass every node."""
        st = self.static(pi)
        head = st.results if passing or not st.all_ok else []
        fit = node_resources_fit.filter_nodes(pi.demand, self.snap)
        check = self._reserved_check(pi)
        if check is not None:
            nodes, reasons = check
            fit.ok = fit.ok.copy()
            masks = {r: m.copy() for r, m in fit.reasons}
            bad = np.zeros(len(nodes), dtype=np.bool_)
            for _, hit in reasons:
                bad |= hit
            fit.ok[nodes] = ~bad
            for m in masks.values():
                m[nodes] = False
            for r, hit in reasons:
                if hit.any():
                    masks.setdefault(r, np.zeros(self.snap.n, dtype=np.bool_))[nodes[hit]] = True
            fit.reasons = sorted(masks.items())
        pod_res = self.pod_results(pi)
        if pod_res:
            before = [r for r, f in zip(pod_res, self._active_filters(pi), strict=True) if f.before_fit]
            after = [r for r in pod_res if all(r is not b for b in before)]
            out = [*head, *before, fit, *after]
        else:
            out = [*head, fit]
        device = gpushare.device_filter(self.snap, pi.pod.gpu)
        return out if device is None else [*out, device]

    def _active_filters(self, pi: PodInfo) -> list[PodFilterPlugin]:
        return [f for f in self.pod_filters if f.active(pi.pod, self.snap)]

    # --------------------------------------------------------------- scoring
    def score(self, pi: PodInfo, idx: IDX) -> I64:
        cfg = self.config
        w: Mapping[str, int] = cfg.plugin_weights
        st = self.static(pi)
        total: I64 = self.scored(pi).mscore[idx]  # NodeResourcesFit + BalancedAllocation, weighted
        for sc, raw in zip(self.scores, st.raws, strict=True):
            wt = int(w.get(sc.name, sc.default_weight))
            if raw is not None and wt:
                total += default_normalize(raw[idx], reverse=sc.reverse) * wt
        for psc in self._active_scores(pi.pod):
            got = psc.score_pod(pi.pod, self.snap, idx, cfg)
            if got is not None:
                total += got * int(w.get(psc.name, psc.default_weight))
        return total

    def select(self, pi: PodInfo, ok: BOOL) -> int:
        """Best feasible node of ``ok`` (-1 if none)."""
        nominated = pi.pod.nominated_node
        if nominated is not None:
            i = self.snap.index.get(nominated)
            if i is not None and ok[i]:
                return i
        st = self.static(pi)
        if self._limited():
            cnt = np.cumsum(ok)
            k = num_feasible_nodes_to_find(self.config.percentage_of_nodes_to_score, self.snap.n)
            ok = ok & (cnt <= k)
        if not st.ranks and not self._active_scores(pi.pod):
            # only the per-demand scores rank: argmax over the cached per-node scores
            masked = np.where(ok, self.scored(pi).mscore, -1)
            best = int(np.argmax(masked))
            return best if ok[best] else -1
        idx = np.flatnonzero(ok)
        if len(idx) == 0:
            return -1
        if len(idx) == 1:
            return int(idx[0])
        scores = self.score(pi, idx)
        return int(idx[int(np.argmax(scores))])

    def best_node(self, pi: PodInfo, subset: BOOL | None) -> int:
        """Filter + score + select host for one pod (-1 if no node fits)."""
        st = self.static(pi)
        if (
            st.ranks
            or pi.pod.nominated_node is not None
            or self.nominated
            or ((self.pod_filters or self.pod_scores) and self.pod_aware(pi))
            or self._limited()
        ):
            return self.select(pi, self.feasible(pi, subset))
        mask: BOOL | None = None
        if subset is not None:
            mask = st.ok & subset
        elif not st.all_ok:
            mask = st.ok
        return self._dyn(pi).best(self.snap, mask)

    def schedule(self, pod: Pod, subset: BOOL | None = None) -> tuple[int, PodInfo]:
        pi = self.info(pod)
        if self.snap.n == 0:
            return -1, pi
        policy = self._gpu_policy
        if policy is not None or gpushare.shares(pod.gpu):
            return self._gpu_node(pi, subset, policy), pi
        return self.best_node(pi, subset), pi

    def _gpu_node(self, pi: PodInfo, subset: BOOL | None, policy: object) -> int:
        """Device-aware placement (``scheduler.gpushare``): the nodes passing every filter whose
        devices hold the pod, ranked by the GPU policy (NodeResourcesFit & co. without one)."""
        ok = self.feasible(pi, subset)
        if not np.count_nonzero(ok):  # (``ok.any()`` through NumPy's Python wrapper costs more)
            return -1
        ok, v = gpu.gpu_fit(self.snap, pi.pod, ok, self._gpu_tags)
        if len(v.idx) == 0:
            return -1
        if policy is None:
            node = self.select(pi, ok)
            if node < 0:
                return -1
            row = int(np.flatnonzero(v.idx == node)[0])
            devs = gpu.choose_devices("best", v.free[row], gpushare.request_of(pi.pod), pi.pod.key, None, row)
        else:
            node, devs = gpu.place(policy, v, pi.pod, self.workload)  # type: ignore[arg-type]
        self.gpu_choice[pi.pod.key] = devs
        return node
