"""Scheduling cycles: the classic one-pod cycle and the PodGroup / CompositePodGroup cycle.

PodGroup cycle (spec §5): one snapshot per attempt (``Snapshot.backup``/``restore``), runtime
hierarchy validation, then the root algorithm:

* leaf PodGroup without topology constraint -> default algorithm (§5.2): PlacementFeasible before
  and after each pod, pods placed in queue order on the snapshot, atomic revert on failure;
* leaf with a topology constraint -> placement evaluation loop (§6.3) with the TopologyPlacement
  generator, nominated placement first for standalone groups, and placement scoring (§6.4);
* CompositePodGroup -> per CPG placement, children in forest order, greedy, recursive (§7.2).

Root Success with at least one newly placed pod binds the placed pods; otherwise the attempt is
Unschedulable (``no pods were schedulable``) or an Error.

Placement evaluation is vectorized: for a leaf whose pending pods are interchangeable (same
filter signature and requests) the outcome of every placement is computed at once from per-node
"how many more copies fit" counts summed per domain (``np.add.reduceat``), which is exact because
each placed copy lowers its node's count by exactly one. Only the chosen placement (and, on
failure, the reported first placement) is then run pod by pod. Heterogeneous groups evaluate
each placement pod by pod with ``backup``/``restore``.

Deterministic tie rules (upstream breaks ties at random): equal node scores -> lowest node index
(nodes sorted by ``(seq, name)``); equal placement total scores -> the placement whose name
(``<topology key>=<value>``) sorts first.

PreFilter hook (e.g. an elastic quota): before a plain pod is filtered, and before a group's root
algorithm runs (after validation), the cycle calls ``Cycle.pre_filter(request: PreFilterRequest)
-> Status | None``; set ``Scheduler.pre_filter_hook``. A non-success status fails the attempt
with it (plain pod: ``0/N nodes are available: <message>.``; group: the root status, so the
PostFilter hook still runs when it is Unschedulable).

PodGroupPostFilter hook (preemption lives in ``scheduler/preemption.py``): when the
root status is ``Unschedulable`` (not UnschedulableAndUnresolvable, not Error), and for a plain
pod after a failed filter, the cycle calls ``Cycle.post_filter(request: PostFilterRequest)
-> PostFilterResult | None``. Without a hook it returns None (no preemption);
``Scheduler.post_filter_hook`` (a callable with the same signature) plugs preemption in. A
result with a Success status means "waiting on preemption": nothing binds this cycle, the
``victims`` are removed from the state, ``nominations`` set the pods' nominated node, its
``decisions`` (e.g. PodPreempted) are emitted, and its message is appended to the group/pod
message. ``request.reschedule()`` re-runs the root algorithm on the current snapshot (which the
hook may have modified inside its own ``backup``/``restore``) and returns the root status and the
proposed ``pod key -> node`` assignments, leaving the snapshot unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.decisions import Decision
from scheduler.framework import (
    SUCCESS,
    Code,
    Diagnosis,
    Status,
    error,
    go_quote,
    unschedulable,
)
from scheduler.model import DEFAULT_SCHEDULER, PREEMPT_LOWER, CompositePodGroup, Pod, PodGroup
from scheduler.plugins import gang_scheduling, node_resources_fit, pod_group_pods_count, topology_placement
from scheduler.plugins.topology_placement import Placement
from scheduler.podsched import PodInfo
from scheduler.snapshot import Demand
from scheduler.state import CPG, MAX_DEPTH, PG, State, name_of

BOOL = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]

MSG_NO_PODS_SCHEDULABLE = "no pods were schedulable"
MSG_PLACEMENTS = "0/%d placements are available, first placement status: %s"
MSG_NOMINATED_NO_POD = "nominated placement is feasible but no pending pod was scheduled"
MSG_CHILD_ERROR = "composite pod group evaluation failed due to child error: %s"
MSG_NOT_FOUND = "%s not found in workload forest"
MSG_CYCLE = "cycle detected in composite pod group hierarchy: %s"
MSG_DEPTH = "hierarchy depth of %d exceeds maximum allowed depth of %d (path: %s)"
MSG_GROUP_PRIORITY = "all pod groups in a hierarchy should have the same priority as the root pod group's priority, got %d (%s) and %d (%s)"
MSG_GROUP_POLICY = (
    "all pod groups in a hierarchy should have the same preemption policy as the root pod group's preemption policy, "
    "got %s (%s) and %s (%s)"
)
MSG_POD_SCHEDULER = (
    "all pods in a pod group hierarchy should have the same .spec.schedulerName set, got: %s (%s) and %s (%s)"
)
MSG_POD_PRIORITY = "all pods in a pod group hierarchy should have the same priority as the root pod group's priority, got %d (%s) and %d (%s)"
MSG_POD_POLICY = (
    "all pods in a pod group hierarchy should have the same preemption policy as the root pod group's preemption policy, "
    "got %s (%s) and %s (%s)"
)
MSG_POD_POLICY_NOGATE = (
    "all pods in a pod group hierarchy should have the same preemption policy, got %s (%s) and %s (%s)"
)
MSG_PROFILE = "profile not found for scheduler name %s"

VALIDATION = "PodGroupValidation"

# Vectorized per-domain prediction of placement outcomes for interchangeable pods (exact; the
# benchmark turns it off to measure the pod-by-pod evaluation of every placement as a baseline).
VECTORIZED_PLACEMENTS = True


def q(s: str) -> str:
    return go_quote(s)


# ============================================================================ hook types
@dataclass(frozen=True, slots=True)
class PreFilterRequest:
    kind: str  # pod | podgroup | compositepodgroup
    key: str  # "ns/name" of the pod or root group
    pods: tuple[Pod, ...]  # the attempt's pending pods, queue order
    now: float
    state: State


@dataclass(frozen=True, slots=True)
class PostFilterRequest:
    kind: str  # pod | podgroup | compositepodgroup
    key: str  # "ns/name" of the preemptor pod or root group
    pods: tuple[Pod, ...]  # the attempt's pending pods, queue order
    priority: int
    preemption_policy: str
    status: Status  # the failure being handled
    diagnosis: Diagnosis | None
    now: float
    state: State  # read-only view; state.snap is the snapshot (reservations already reverted)
    reschedule: Callable[[], tuple[Status, dict[str, str]]]


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    status: Status  # Success = preemption started (waiting on preemption)
    nominations: Mapping[str, str] = field(default_factory=dict)  # pod key -> node
    victims: tuple[str, ...] = ()  # pod keys removed from the cluster
    decisions: tuple[Decision, ...] = ()


# ============================================================================ results
@dataclass(slots=True)
class LeafOutcome:
    key: str
    status: Status = SUCCESS
    assigned: list[tuple[str, int]] = field(default_factory=list)  # kept in the snapshot on success
    tried: list[tuple[str, int]] = field(default_factory=list)  # proposals of a failed evaluation
    pod_status: dict[str, Status] = field(default_factory=dict)
    any_scheduled: bool = False
    diag: Diagnosis | None = None
    placement: str | None = None


@dataclass(slots=True)
class PlacementEval:
    placement: Placement
    status: Status
    placed: int  # proposed new pods
    any_scheduled: bool
    outcome: LeafOutcome | None = None  # set when evaluated pod by pod
    proposals: list[tuple[str, int]] = field(default_factory=list)
    added: dict[str, int] = field(default_factory=dict)  # resource -> proposed requests
    scheduled_before: int = 0


@dataclass(slots=True)
class Counters:
    generated: int = 0
    scored: int = 0
    evaluated: int = 0
    predicted: int = 0
    lines: list[str] = field(default_factory=list)
    line_count: int = 0

    def line(self, who: str, name: str, st: Status) -> None:
        self.line_count += 1
        if len(self.lines) < 8:
            msg = "Success" if st.ok else st.message
            self.lines.append(f"{name_of(who)}@{name or '*'}: {msg}"[:110])


@dataclass(slots=True)
class GroupAttempt:
    """Everything the facade needs to apply a group attempt."""

    root_kind: str  # pg | cpg
    root: str
    status: Status
    any_scheduled: bool
    leaves: list[str]
    cpgs: list[str]
    results: dict[str, Status]  # "pg:key"/"cpg:key" -> completed status
    outcomes: dict[str, LeafOutcome]
    counters: Counters
    validation_error: bool = False
    post: PostFilterResult | None = None
    diag: Diagnosis | None = None
    placement: str | None = None  # chosen placement of the root


# ============================================================================ algorithm
class Algorithm:
    """One attempt's root algorithm on the shared snapshot."""

    def __init__(self, state: State, queued: Mapping[str, Sequence[Pod]]) -> None:
        self.state = state
        self.snap = state.snap
        self.ps = state.podsched
        self.queued = queued
        self.tas = state.tas_on
        self.results: dict[str, Status] = {}
        self.outcomes: dict[str, LeafOutcome] = {}
        self.placement_of: dict[str, str] = {}  # CPG key -> chosen placement name
        self.c = Counters()

    # ------------------------------------------------------------ helpers
    def _infos(self, pods: Sequence[Pod]) -> list[PodInfo]:
        return [self.ps.info(p) for p in pods]

    @staticmethod
    def _homogeneous(infos: Sequence[PodInfo]) -> bool:
        if not infos:
            return True
        k = infos[0].fit_key
        return all(pi.fit_key == k for pi in infos[1:])

    # ------------------------------------------------------- §5.2 default
    def default_algorithm(self, pg: PodGroup, pods: Sequence[Pod], subset: BOOL | None) -> LeafOutcome:
        snap, ps = self.snap, self.ps
        out = LeafOutcome(pg.key)
        m = pg.minimum
        s = self.state.scheduled_count(pg.key)
        r = len(pods)
        st = gang_scheduling.placement_feasible(m, s, r)
        if st.code == Code.UNSCHEDULABLE:
            out.status = st
            return out
        mark = snap.backup()
        any_sched = False
        failed: dict[object, Diagnosis] = {}  # fit_key -> diagnosis, valid until the next assume
        for pod in pods:
            pi = ps.info(pod)
            node = -1
            if pi.fit_key not in failed:
                node = ps.best_node(pi, subset) if snap.n else -1
            if node >= 0:
                snap.assume(pod.key, node, pi.demand, pg.key)
                out.assigned.append((pod.key, node))
                s += 1
                failed.clear()
            else:
                diag = failed.get(pi.fit_key)
                if diag is None:
                    diag = ps.diagnose(pi, subset)
                    failed[pi.fit_key] = diag
                out.pod_status[pod.key] = pod_failure(diag)
                if out.diag is None:
                    out.diag = diag
            r -= 1
            st = gang_scheduling.placement_feasible(m, s, r)
            if st.code == Code.UNSCHEDULABLE:
                break
            any_sched = any_sched or node >= 0
        if st.ok:
            snap.release(mark)
            out.status = SUCCESS
            out.any_scheduled = any_sched
        else:
            snap.restore(mark)
            out.status = Status(Code.UNSCHEDULABLE, st.reasons, gang_scheduling.NAME)
            out.tried, out.assigned = out.assigned, []
            out.any_scheduled = False
        return out

    # ------------------------------------------------------- §6.3 leaves
    def schedule_pg(self, pg: PodGroup, parent: BOOL | None, standalone: bool) -> LeafOutcome:
        pods = self.queued.get(pg.key, ())
        key = pg.topology_key if self.tas else None
        if not key:
            out = self.default_algorithm(pg, pods, parent)
        else:
            out = self._placement_loop(pg, pods, parent, key, standalone)
        self.results[f"{PG}:{pg.key}"] = out.status
        self.outcomes[pg.key] = out
        return out

    def _evaluate_exact(self, pg: PodGroup, pods: Sequence[Pod], p: Placement) -> PlacementEval:
        """Run the default algorithm inside ``p`` and revert its reservations."""
        mark = self.snap.backup()
        before = self.state.scheduled_count(pg.key)
        out = self.default_algorithm(pg, pods, p.nodes)
        props = list(out.assigned)
        self.snap.restore(mark)
        self.c.evaluated += 1
        added: dict[str, int] = {}
        for pk, _ in props:
            for res, amt in zip(*self._req(pk), strict=True):
                added[res] = added.get(res, 0) + amt
        return PlacementEval(p, out.status, len(props), out.any_scheduled, out, props, added, before)

    def _req(self, pod_key: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
        pod = self.state.pods[pod_key]
        d: Demand = self.ps.info(pod).demand
        return d.names, d.amounts

    def _predict(
        self, pg: PodGroup, infos: Sequence[PodInfo], placements: Sequence[Placement], parent: BOOL, key: str
    ) -> list[PlacementEval]:
        """Vectorized outcome of the default algorithm in every placement (interchangeable pods)."""
        snap, ps = self.snap, self.ps
        m, s0, n = pg.minimum, self.state.scheduled_count(pg.key), len(infos)
        if n:
            pi = infos[0]
            st = ps.static(pi)
            fc = node_resources_fit.fit_count(snap, pi.rows, pi.demand.amounts)
            fc = np.where(st.ok & parent, fc, 0)
            caps = snap.domains(key).sums(fc)
        else:
            caps = np.zeros(len(snap.domains(key).values), dtype=np.int64)
        out: list[PlacementEval] = []
        for p in placements:
            placed = min(n, int(caps[p.domain])) if n else 0
            status, any_sched = gang_outcome(m, s0, n, placed)
            if not status.ok:
                placed = 0
            added: dict[str, int] = {}
            if n and placed:
                for res, amt in zip(infos[0].demand.names, infos[0].demand.amounts, strict=True):
                    added[res] = amt * placed
            out.append(PlacementEval(p, status, placed, any_sched, None, [], added, s0))
            self.c.predicted += 1
        return out

    def _placement_loop(
        self, pg: PodGroup, pods: Sequence[Pod], parent: BOOL | None, key: str, standalone: bool
    ) -> LeafOutcome:
        snap = self.snap
        snap.refresh()
        parent_mask = snap.all_nodes if parent is None else parent
        sched_nodes = list(snap.group_pods.get(pg.key, {}).values())
        placements, gst = topology_placement.generate(snap, key, parent_mask, sched_nodes)
        self.c.generated += len(placements)
        if not gst.ok:
            return LeafOutcome(pg.key, gst)
        if not placements:
            return LeafOutcome(
                pg.key, unschedulable(MSG_PLACEMENTS % (0, "no placement generated"), topology_placement.NAME)
            )
        infos = self._infos(pods)
        nominated: Placement | None = None
        if standalone:
            nn = sorted({p.nominated_node for p in pods if p.nominated_node})
            idx = [snap.index[x] for x in nn if x in snap.index]
            if idx:
                hits = [pl for pl in placements if bool(pl.nodes[idx].any())]
                if len(hits) == 1:
                    nominated = hits[0]
        successful: list[PlacementEval] = []
        nominated_eval: PlacementEval | None = None
        if nominated is not None:
            nominated_eval = self._evaluate_exact(pg, pods, nominated)
            self.c.line(pg.key, nominated.name, nominated_eval.status)
            if nominated_eval.status.is_error:
                return LeafOutcome(pg.key, nominated_eval.status)
            if nominated_eval.status.ok and nominated_eval.any_scheduled:
                successful = [nominated_eval]
        evals: list[PlacementEval] = []
        if not successful:
            others = [p for p in placements if p is not nominated]
            if VECTORIZED_PLACEMENTS and self._homogeneous(infos):
                evals = self._predict(pg, infos, others, parent_mask, key)
            else:
                for p in others:
                    ev = self._evaluate_exact(pg, pods, p)
                    if ev.status.is_error:
                        return LeafOutcome(pg.key, ev.status)
                    evals.append(ev)
            for ev in evals:
                self.c.line(pg.key, ev.placement.name, ev.status)
            successful = [ev for ev in evals if ev.status.ok]
        if not successful:
            report = nominated_eval if nominated_eval is not None else evals[0]
            if report.outcome is None:  # predicted: run it for the exact diagnosis
                report = self._evaluate_exact(pg, pods, report.placement)
            msg = MSG_NOMINATED_NO_POD if report.status.ok else report.status.message
            out = LeafOutcome(
                pg.key, unschedulable(MSG_PLACEMENTS % (len(placements), msg), gang_scheduling.NAME)
            )
            if report.outcome is not None:
                out.diag = report.outcome.diag
                out.pod_status = report.outcome.pod_status
                out.tried = report.proposals
            return out
        if len(successful) == 1:
            best = successful[0]
        elif all(ev.outcome is None for ev in successful):
            best = self._best_predicted(successful, key, parent_mask)
        else:
            best = self._best(successful)
        self.c.scored += len(successful) if len(successful) > 1 else 0
        if best.outcome is not None:
            # re-assume the evaluated proposals
            mark = snap.backup()
            for pk, node in best.proposals:
                snap.assume(pk, node, self.ps.info(self.state.pods[pk]).demand, pg.key)
            snap.release(mark)
            out = best.outcome
        else:
            out = self.default_algorithm(pg, pods, best.placement.nodes)
            self.c.evaluated += 1
        out.placement = best.placement.name
        return out

    # ---------------------------------------------------- §6.4 scoring
    def _best_predicted(self, evals: Sequence[PlacementEval], key: str, parent: BOOL) -> PlacementEval:
        """``_best`` for predicted single-domain placements, with per-domain sums (reduceat)."""
        snap = self.snap
        cfg = self.state.config
        dom = snap.domains(key)
        ids = np.array([ev.placement.domain for ev in evals], dtype=np.intp)
        placed = np.array([ev.placed for ev in evals], dtype=np.int64)
        alloc_s: dict[str, I64] = {}
        used_s: dict[str, I64] = {}
        for res, w in cfg.resource_weights.items():
            r = snap.res_index.get(res)
            if r is None or w <= 0:
                continue
            a = snap.alloc[r]
            alloc_s[res] = dom.sums(np.where(parent, a, 0))[ids]
            add = np.array([ev.added.get(res, 0) for ev in evals], dtype=np.int64)
            used_s[res] = dom.sums(np.where(parent, a - snap.free[r], 0))[ids] + add
        nrf = node_resources_fit.placement_scores(alloc_s, used_s, cfg.resource_weights)
        raw = placed + np.array([ev.scheduled_before for ev in evals], dtype=np.int64)
        m = int(raw.max())
        cnt: I64 = raw * 100 // m if m > 0 else np.zeros(len(evals), dtype=np.int64)
        pw = cfg.plugin_weights
        total: I64 = (
            int(pw.get(node_resources_fit.NAME, 1)) * nrf + int(pw.get(pod_group_pods_count.NAME, 1)) * cnt
        )
        order = sorted(range(len(evals)), key=lambda k: (-int(total[k]), evals[k].placement.name))
        return evals[order[0]]

    def _nrf_score(self, nodes: BOOL, added: Mapping[str, int]) -> int:
        snap = self.snap
        weights = self.state.config.resource_weights
        alloc: dict[str, int] = {}
        used: dict[str, int] = {}
        for res in weights:
            r = snap.res_index.get(res)
            if r is None:
                continue
            a = int(snap.alloc[r][nodes].sum())
            alloc[res] = a
            used[res] = a - int(snap.free[r][nodes].sum()) + int(added.get(res, 0))
        return node_resources_fit.placement_score(alloc, used, weights)

    def _best(self, evals: Sequence[PlacementEval]) -> PlacementEval:
        w = self.state.config.plugin_weights
        w_fit = int(w.get(node_resources_fit.NAME, 1))
        w_cnt = int(w.get(pod_group_pods_count.NAME, 1))
        raw = [ev.scheduled_before + ev.placed for ev in evals]
        cnt, err = pod_group_pods_count.normalize(raw)
        if err is not None:
            cnt = [0] * len(evals)
        best: PlacementEval | None = None
        best_key: tuple[int, str] | None = None
        for ev, c in zip(evals, cnt, strict=True):
            total = w_fit * self._nrf_score(ev.placement.nodes, ev.added) + w_cnt * c
            k = (-total, ev.placement.name)
            if best_key is None or k < best_key:
                best, best_key = ev, k
        assert best is not None
        return best

    # ------------------------------------------------------ §7.2 CPG
    def subtree_leaves(self, cpg_key: str) -> list[str]:
        out: list[str] = []
        seen: set[str] = set()

        def visit(k: str) -> None:
            if k in seen:
                return
            seen.add(k)
            for kind, ck in self.state.children(k):
                if kind == PG:
                    out.append(ck)
                else:
                    visit(ck)

        visit(cpg_key)
        return out

    def schedule_cpg(self, cpg: CompositePodGroup, parent: BOOL | None) -> Status:
        snap = self.snap
        snap.refresh()
        parent_mask = snap.all_nodes if parent is None else parent
        key = cpg.topology_key if self.tas else None
        leaves = self.subtree_leaves(cpg.key)
        sched_nodes = [nd for lk in leaves for nd in snap.group_pods.get(lk, {}).values()]
        placements, gst = topology_placement.generate(snap, key, parent_mask, sched_nodes)
        self.c.generated += len(placements)
        rk = f"{CPG}:{cpg.key}"
        if not gst.ok:
            self.results[rk] = gst
            return gst
        ok: list[tuple[PlacementEval, dict[str, Status], dict[str, LeafOutcome]]] = []
        first: tuple[Status, dict[str, Status], dict[str, LeafOutcome]] | None = None
        for p in placements:
            mark = snap.backup()
            saved_r, saved_o = self.results, self.outcomes
            self.results, self.outcomes = {}, {}
            st = self.cpg_default(cpg, p.nodes)
            sub_r, sub_o = self.results, self.outcomes
            self.results, self.outcomes = saved_r, saved_o
            props = self.successful_proposals(cpg.key, sub_r, sub_o)
            snap.restore(mark)
            self.c.evaluated += 1
            self.c.line(cpg.key, p.name, st)
            if st.is_error:
                self.results.update(sub_r)
                self.outcomes.update(sub_o)
                self.results[rk] = st
                return st
            if first is None:
                first = (st, sub_r, sub_o)
            if st.ok:
                added: dict[str, int] = {}
                for _, pk, _ in props:
                    for res, amt in zip(*self._req(pk), strict=True):
                        added[res] = added.get(res, 0) + amt
                before = sum(self.state.scheduled_count(lk) for lk in leaves)
                ev = PlacementEval(
                    p, st, len(props), bool(props), None, [(pk, nd) for _, pk, nd in props], added, before
                )
                ok.append((ev, sub_r, sub_o))
        if not ok:
            if first is None:
                st = unschedulable(MSG_PLACEMENTS % (0, "no placement generated"), topology_placement.NAME)
            else:
                self.results.update(first[1])
                self.outcomes.update(first[2])
                st = unschedulable(MSG_PLACEMENTS % (len(placements), first[0].message), gang_scheduling.NAME)
            self.results[rk] = st
            return st
        if len(ok) == 1:
            chosen = ok[0]
        else:
            self.c.scored += len(ok)
            best_ev = self._best([e for e, _, _ in ok])
            chosen = next(t for t in ok if t[0] is best_ev)
        ev, sub_r, sub_o = chosen
        self.placement_of[cpg.key] = ev.placement.name
        for lk, pk, nd in self.successful_proposals(cpg.key, sub_r, sub_o):
            snap.assume(pk, nd, self.ps.info(self.state.pods[pk]).demand, lk)
        for o in sub_o.values():
            if o.placement is None:
                o.placement = ev.placement.name
        self.results.update(sub_r)
        self.outcomes.update(sub_o)
        return ev.status

    def successful_proposals(
        self, cpg_key: str, results: Mapping[str, Status], outcomes: Mapping[str, LeafOutcome]
    ) -> list[tuple[str, str, int]]:
        """(leaf, pod, node) of successful leaves whose every ancestor up to ``cpg_key`` succeeded."""
        out: list[tuple[str, str, int]] = []
        seen: set[str] = set()

        def visit(k: str) -> None:
            if k in seen:
                return
            seen.add(k)
            st = results.get(f"{CPG}:{k}")
            if st is None or not st.ok:
                return
            for kind, ck in self.state.children(k):
                if kind == PG:
                    o = outcomes.get(ck)
                    if o is not None and o.status.ok:
                        out.extend((ck, pk, nd) for pk, nd in o.assigned)
                else:
                    visit(ck)

        visit(cpg_key)
        return out

    def cpg_default(self, cpg: CompositePodGroup, nodes: BOOL) -> Status:
        snap = self.snap
        children = self.state.children(cpg.key)
        m, s, r = cpg.minimum, 0, len(children)
        rk = f"{CPG}:{cpg.key}"
        st = gang_scheduling.placement_feasible(m, s, r)
        if st.code == Code.UNSCHEDULABLE:
            self.results[rk] = st
            return st
        mark = snap.backup()
        for kind, ck in children:
            if kind == PG:
                cst = self.schedule_pg(self.state.pod_groups[ck], nodes, standalone=False).status
            else:
                cst = self.schedule_cpg(self.state.composites[ck], nodes)
            if cst.is_error:
                snap.restore(mark)
                st = error(MSG_CHILD_ERROR % cst.message, cst.plugin)
                self.results[rk] = st
                return st
            r -= 1
            if cst.ok:
                s += 1
            st = gang_scheduling.placement_feasible(m, s, r)
            if st.code == Code.UNSCHEDULABLE:
                break
        if st.ok:
            snap.release(mark)
        else:
            snap.restore(mark)
            st = Status(Code.UNSCHEDULABLE, st.reasons, gang_scheduling.NAME)
        self.results[rk] = st
        return st


def gang_outcome(m: int, s0: int, n: int, placed: int) -> tuple[Status, bool]:
    """Closed form of the §5.2 loop when the first ``placed`` of ``n`` pods fit and the rest do not."""
    st = gang_scheduling.placement_feasible(m, s0, n)
    if st.code == Code.UNSCHEDULABLE:
        return st, False
    if placed < n:
        i_star = max(placed + 1, n + s0 + placed - m + 1)
        if i_star <= n:
            st = gang_scheduling.placement_feasible(m, s0 + placed, n - i_star)
            return Status(Code.UNSCHEDULABLE, st.reasons, gang_scheduling.NAME), False
    st = gang_scheduling.placement_feasible(m, s0 + placed, 0)
    if not st.ok:
        return Status(Code.UNSCHEDULABLE, st.reasons, gang_scheduling.NAME), False
    return SUCCESS, placed > 0


def pod_failure(diag: Diagnosis) -> Status:
    if diag.num_nodes == 0:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (diag.fit_error(),), "")
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if diag.unresolvable == diag.num_nodes else Code.UNSCHEDULABLE
    return Status(code, (diag.fit_error(),), diag.top_plugin())


# ============================================================================ the cycle
class Cycle:
    """Runs attempts against a ``State``; the facade applies the outcome."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.post_filter_hook: Callable[[PostFilterRequest], PostFilterResult | None] | None = None
        self.pre_filter_hook: Callable[[PreFilterRequest], Status | None] | None = None

    def pre_filter(self, request: PreFilterRequest) -> Status | None:
        """PreFilter extension point for whole attempts (default: nothing to check)."""
        if self.pre_filter_hook is None:
            return None
        return self.pre_filter_hook(request)

    def post_filter(self, request: PostFilterRequest) -> PostFilterResult | None:
        """PodGroupPostFilter / PostFilter extension point (default: no preemption)."""
        if self.post_filter_hook is None:
            return None
        return self.post_filter_hook(request)

    # ------------------------------------------------------------ plain
    def run_pod(self, pod: Pod, now: float) -> tuple[int, Status, Diagnosis | None, PostFilterResult | None]:
        state = self.state
        key = pod.key
        pre = (
            self.pre_filter(PreFilterRequest("pod", key, (pod,), now, state))
            if self.pre_filter_hook
            else None
        )
        if pre is not None and not pre.ok:
            pi = state.podsched.info(pod)
            diag = Diagnosis(
                state.snap.n, {pre.plugin: state.snap.n} if pre.plugin else {}, {}, pre_filter_msg=pre.message
            )
            st = Status(
                pre.code if pre.code != Code.WAIT else Code.UNSCHEDULABLE, (diag.fit_error(),), pre.plugin
            )
        else:
            node, pi = state.podsched.schedule(pod)
            if node >= 0:
                state.snap.assume(key, node, pi.demand, None)
                return node, SUCCESS, None, None
            diag = state.podsched.diagnose(pi, None)
            st = pod_failure(diag)
        post: PostFilterResult | None = None
        if st.code == Code.UNSCHEDULABLE:

            def reschedule() -> tuple[Status, dict[str, str]]:
                n2, _ = state.podsched.schedule(pod)
                if n2 < 0:
                    return pod_failure(state.podsched.diagnose(state.podsched.info(pod), None)), {}
                return SUCCESS, {pod.key: state.snap.names[n2]}

            post = self.post_filter(
                PostFilterRequest(
                    "pod",
                    pod.key,
                    (pod,),
                    pod.priority,
                    pod.preemption_policy,
                    st,
                    diag,
                    now,
                    state,
                    reschedule,
                )
            )
            if post is not None and post.status.message:
                diag.post_filter_msg = post.status.message
                st = Status(st.code, (diag.fit_error(),), st.plugin)
        return -1, st, diag, post

    # ------------------------------------------------------------ groups
    def validate(
        self,
        root_kind: str,
        root: str,
        leaves: Sequence[str],
        cpgs: Sequence[str],
        queued: Mapping[str, Sequence[Pod]],
    ) -> Status:
        state = self.state
        # structure (runtime validation of the workload forest)
        for lk in leaves:
            pg = state.pod_groups[lk]
            ch = state.chain(pg)
            if ch.problem == "missing":
                return error(MSG_NOT_FOUND % name_of(ch.root), VALIDATION)
            if ch.problem == "cycle":
                return error(MSG_CYCLE % " -> ".join(name_of(k) for k in ch.cycle), VALIDATION)
            if len(ch.path) > MAX_DEPTH:
                path = " -> ".join(name_of(k) for k in reversed(ch.path))
                return error(MSG_DEPTH % (len(ch.path), MAX_DEPTH, path), VALIDATION)
        if root_kind == CPG and root not in state.composites:
            return error(MSG_NOT_FOUND % name_of(root), VALIDATION)
        root_obj: PodGroup | CompositePodGroup = (
            state.pod_groups[root] if root_kind == PG else state.composites[root]
        )
        prio, pol = root_obj.priority, root_obj.preemption_policy or PREEMPT_LOWER
        policy_gate = state.gate("PodGroupPreemptionPolicy")
        groups: list[PodGroup | CompositePodGroup] = [
            state.composites[k] for k in cpgs if k in state.composites
        ]
        groups += [state.pod_groups[k] for k in leaves]
        for g in groups:
            if g.priority != prio:
                return error(MSG_GROUP_PRIORITY % (prio, q(root_obj.name), g.priority, q(g.name)), VALIDATION)
            if policy_gate and (g.preemption_policy or PREEMPT_LOWER) != pol:
                return error(
                    MSG_GROUP_POLICY % (pol, q(root_obj.name), g.preemption_policy, q(g.name)), VALIDATION
                )
        pods: list[Pod] = []
        for lk in leaves:
            pods.extend(queued.get(lk, ()))
        for lk in leaves:
            for pk in sorted(state.snap.group_pods.get(lk, {})):
                p = state.pods.get(pk)
                if p is not None:
                    pods.append(p)
        if not pods:
            return SUCCESS
        first = pods[0]
        for p in pods:
            if p.scheduler_name != first.scheduler_name:
                return error(
                    MSG_POD_SCHEDULER
                    % (q(first.scheduler_name), q(first.name), q(p.scheduler_name), q(p.name)),
                    VALIDATION,
                )
            if p.priority != prio:
                return error(MSG_POD_PRIORITY % (prio, q(root_obj.name), p.priority, q(p.name)), VALIDATION)
            ppol = p.preemption_policy or PREEMPT_LOWER
            if policy_gate:
                if ppol != pol:
                    return error(MSG_POD_POLICY % (pol, q(root_obj.name), ppol, q(p.name)), VALIDATION)
            elif ppol != (first.preemption_policy or PREEMPT_LOWER):
                return error(
                    MSG_POD_POLICY_NOGATE
                    % (first.preemption_policy or PREEMPT_LOWER, q(first.name), ppol, q(p.name)),
                    VALIDATION,
                )
        if first.scheduler_name != DEFAULT_SCHEDULER:
            return error(MSG_PROFILE % q(first.scheduler_name), VALIDATION)
        return SUCCESS

    def run_root(
        self, root_kind: str, root: str, queued: Mapping[str, Sequence[Pod]]
    ) -> tuple[Algorithm, Status, bool]:
        """Root algorithm; reservations of a Success stay in the snapshot (caller's mark)."""
        state = self.state
        alg = Algorithm(state, queued)
        if root_kind == PG:
            o = alg.schedule_pg(state.pod_groups[root], None, standalone=True)
            st, any_sched = o.status, o.any_scheduled
        else:
            st = alg.schedule_cpg(state.composites[root], None)
            any_sched = bool(alg.successful_proposals(root, alg.results, alg.outcomes)) if st.ok else False
        if st.ok and not any_sched:
            st = unschedulable(MSG_NO_PODS_SCHEDULABLE, gang_scheduling.NAME)
        return alg, st, any_sched

    def run_group(
        self, root_kind: str, root: str, queued: Mapping[str, Sequence[Pod]], now: float
    ) -> GroupAttempt:
        state = self.state
        snap = state.snap
        leaves: list[str]
        cpgs: list[str]
        if root_kind == PG:
            leaves, cpgs = [root], []
        else:
            leaves, cpgs = state.tree(root)
        mark = snap.backup()
        vst = self.validate(root_kind, root, leaves, cpgs, queued)
        if not vst.ok:
            snap.restore(mark)
            results = {f"{PG}:{k}": vst for k in leaves}
            results.update({f"{CPG}:{k}": vst for k in cpgs})
            return GroupAttempt(
                root_kind, root, vst, False, leaves, cpgs, results, {}, Counters(), validation_error=True
            )
        pre = None
        if self.pre_filter_hook is not None:
            kind = "podgroup" if root_kind == PG else "compositepodgroup"
            pods_all = tuple(p for lk in leaves for p in queued.get(lk, ()))
            pre = self.pre_filter(PreFilterRequest(kind, root, pods_all, now, state))
        if pre is not None and not pre.ok:
            alg = Algorithm(state, queued)
            st, any_sched = (
                (pre if pre.code != Code.WAIT else Status(Code.UNSCHEDULABLE, pre.reasons, pre.plugin)),
                False,
            )
        else:
            alg, st, any_sched = self.run_root(root_kind, root, queued)
        if st.ok:
            snap.release(mark)
        else:
            snap.restore(mark)
        results = complete_results(state, root_kind, root, st, alg.results)
        attempt = GroupAttempt(root_kind, root, st, any_sched, leaves, cpgs, results, alg.outcomes, alg.c)
        if st.ok:
            if root_kind == PG:
                ro = alg.outcomes.get(root)
                attempt.placement = ro.placement if ro is not None else None
            else:
                attempt.placement = alg.placement_of.get(root) or None
        attempt.diag = next((o.diag for o in alg.outcomes.values() if o.diag is not None), None)
        if st.code == Code.UNSCHEDULABLE:
            root_obj: PodGroup | CompositePodGroup = (
                state.pod_groups[root] if root_kind == PG else state.composites[root]
            )
            pods = tuple(p for lk in leaves for p in queued.get(lk, ()))

            def reschedule() -> tuple[Status, dict[str, str]]:
                m2 = snap.backup()
                try:
                    a2, s2, _ = self.run_root(root_kind, root, queued)
                    props: dict[str, str] = {}
                    if s2.ok:
                        for o in a2.outcomes.values():
                            if results_ok(a2, o.key):
                                props.update({pk: snap.names[nd] for pk, nd in o.assigned})
                    return s2, props
                finally:
                    snap.restore(m2)

            attempt.post = self.post_filter(
                PostFilterRequest(
                    "podgroup" if root_kind == PG else "compositepodgroup",
                    root,
                    pods,
                    root_obj.priority,
                    root_obj.preemption_policy,
                    st,
                    attempt.diag,
                    now,
                    state,
                    reschedule,
                )
            )
        return attempt


def results_ok(alg: Algorithm, leaf_key: str) -> bool:
    st = alg.results.get(f"{PG}:{leaf_key}")
    return st is not None and st.ok


def complete_results(
    state: State, root_kind: str, root: str, root_status: Status, raw: Mapping[str, Status]
) -> dict[str, Status]:
    """§5.1 step 7: parent failure overrides child success, parent Error overrides non-errors,
    never-evaluated children inherit the parent's status."""
    out: dict[str, Status] = {}
    if root_kind == PG:
        out[f"{PG}:{root}"] = root_status
        return out
    seen: set[str] = set()

    def child_status(parent: Status, own: Status | None) -> Status:
        if parent.is_error:
            return own if own is not None and own.is_error else parent
        if not parent.ok:
            return parent if own is None or own.ok else own
        return own if own is not None else parent

    def visit(k: str, st: Status) -> None:
        if k in seen:
            return
        seen.add(k)
        out[f"{CPG}:{k}"] = st
        for kind, ck in state.children(k):
            own = raw.get(f"{kind}:{ck}")
            cst = child_status(st, own)
            if kind == PG:
                out[f"{PG}:{ck}"] = cst
            else:
                visit(ck, cst)

    visit(root, root_status)
    return out


DIAGNOSIS_BUDGET = 1000  # bytes of compact JSON


def compact_diagnosis(attempt: GroupAttempt, num_nodes: int, queued: int) -> dict[str, Any]:
    """<= 1 KB summary of a failed attempt: per-plugin rejected-node counts and top reasons of the
    first pod that fitted nowhere, the PlacementFeasible message, and one line per evaluated
    placement (at most 8, then a count of the others)."""
    d: dict[str, Any] = {"message": attempt.status.message[:240], "nodes": num_nodes, "pods": queued}
    if attempt.diag is not None:
        diag = attempt.diag
        d["rejected"] = dict(sorted(diag.plugin_counts.items()))
        top = sorted(diag.reason_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
        d["reasons"] = [[r[:80], c] for r, c in top]
    feasible = next(
        (
            o.status.message
            for o in attempt.outcomes.values()
            if o.status.plugin == gang_scheduling.NAME and o.status.message
        ),
        "",
    )
    if feasible and feasible not in d["message"]:
        d["feasible"] = feasible[:160]
    c = attempt.counters
    if c.generated:
        lines = [ln[:90] for ln in c.lines[:8]]
        pl: dict[str, Any] = {
            "generated": c.generated,
            "scored": c.scored,
            "results": lines,
            "more": c.line_count - len(lines),
        }
        d["placements"] = pl
        while lines and len(json.dumps(d, separators=(",", ":"))) > DIAGNOSIS_BUDGET:
            lines.pop()
            pl["more"] += 1
    return d
