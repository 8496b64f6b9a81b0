"""Leaf PodGroups: the default algorithm (§5.2) and the placement evaluation loop (§6.3)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from scheduler import gpushare
from scheduler.cycle.diagnosis import pod_failure
from scheduler.cycle.results import (
    Counters,
    LeafOutcome,
    PlacementEval,
)
from scheduler.framework import SUCCESS, Code, Diagnosis, Profile, Status, unschedulable
from scheduler.messages import MSG_NOMINATED_NO_POD, MSG_PLACEMENTS
from scheduler.model import Pod, PodGroup
from scheduler.plugins import gang_scheduling, node_resources_fit, placement_scoring, topology_placement
from scheduler.plugins.placement_scoring import Candidates
from scheduler.plugins.pod_index import term_matches
from scheduler.plugins.topology_placement import Placement
from scheduler.podsched import PodInfo
from scheduler.snapshot import Demand, distinct_sorted
from scheduler.state import PG, State

BOOL = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]

# Vectorized per-domain prediction of placement outcomes for interchangeable pods (exact; the
# benchmark turns it off to measure the pod-by-pod evaluation of every placement as a baseline).
VECTORIZED_PLACEMENTS = True
MIN_PLACEMENTS_PERCENTAGE = 5  # the adaptive limit's floor (KEP-5732)


class LeafAlgorithm:
    """One attempt's leaf algorithms on the shared snapshot (``composite.Algorithm`` adds CPGs)."""

    def __init__(self, state: State, queued: Mapping[str, Sequence[Pod]], profile: Profile) -> None:
        self.state = state
        self.profile = profile
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

    def _homogeneous(self, infos: Sequence[PodInfo]) -> bool:
        """Interchangeable pods (same filter signature and demand) that no pod-aware plugin
        concerns: their outcome per placement is predicted from per-node capacities."""
        if not infos:
            return True
        if any(pi.pod.gpu is not None for pi in infos):  # devices are placed pod by pod
            return False
        k = infos[0].fit_key
        if not all(pi.fit_key == k for pi in infos[1:]):
            return False
        ps = self.ps
        return not ((ps.pod_filters or ps.pod_scores) and any(ps.pod_aware(pi) for pi in infos))

    def _self_anti_key(self, infos: Sequence[PodInfo]) -> str | None:
        """The topology key K when the pods are interchangeable except for one required
        anti-affinity term (key K) that matches the pods themselves, and no other pod-aware rule
        concerns them: then the §5.2 loop places one pod per K-domain that has room (each
        placed pod blocks its K-domain for the next, by its own term and by symmetry), which
        ``_predict`` counts exactly. None otherwise."""
        if not infos:
            return None
        first = infos[0].pod
        terms = first.anti_affinity_required
        if (
            len(terms) != 1
            or first.affinity_required
            or first.host_ports
            or first.spread_constraints
            or not term_matches(terms[0], first.namespace, first)
        ):
            return None
        k = infos[0].fit_key
        sig = _inter_pod_sig(first)
        if not all(pi.fit_key == k and _inter_pod_sig(pi.pod) == sig for pi in infos[1:]):
            return None
        return terms[0].topology_key

    # ------------------------------------------------------- §5.2 default
    def default_algorithm(self, pg: PodGroup, pods: Sequence[Pod], subset: BOOL | None) -> LeafOutcome:
        """§5.2: place ``pods`` one by one on the nodes of ``subset`` with PlacementFeasible
        before and after each. Returns the leaf's outcome; on Success its ``assigned`` pods stay
        assumed in the snapshot, on failure the snapshot is reverted and ``tried`` keeps what
        would have been placed (for diagnosis)."""
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
            ikey = ps.interchange_key(pi) if ps.pod_filters else pi.fit_key
            if pod.gpu is not None:  # device requests are not part of the fit key
                ikey = (ikey, pod.gpu)
            if ikey not in failed:
                node = ps.schedule(pod, subset)[0]  # device-aware for GPU-share pods / GPU policies
            devs = ps.gpu_choice.pop(pod.key, None)
            if node >= 0:
                snap.assume(pod.key, node, gpushare.demand_with(pod, devs) if devs else pi.demand, pg.key)
                out.assigned.append((pod.key, node))
                if devs:
                    out.devices[pod.key] = devs
                s += 1
                failed.clear()
            else:
                diag = failed.get(ikey)
                if diag is None:
                    diag = ps.diagnose(pi, subset)
                    failed[ikey] = diag
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

    def demand(self, pod_key: str, devices: Mapping[str, tuple[int, ...]]) -> Demand:
        """The snapshot demand of a proposed pod (with its GPU devices when it holds any)."""
        pod = self.state.pods[pod_key]
        devs = devices.get(pod_key)
        return gpushare.demand_with(pod, devs) if devs else self.ps.info(pod).demand

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
        anti_key = self._self_anti_key(infos) if n else None
        if n and anti_key is not None:
            pi = infos[0]
            ok = ps.static(pi).ok & parent
            for r in ps.pod_results(pi):
                ok = ok & r.ok
            fc = np.where(ok, node_resources_fit.fit_count(snap, pi.rows, pi.demand.amounts), 0)
            caps = self._one_per_domain(key, anti_key, fc)
        elif n:
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

    def _one_per_domain(self, key: str, anti_key: str, fc: I64) -> I64:
        """Per placement domain (``key``): the number of ``anti_key`` domains with room (one
        pod each) plus the room on nodes without the ``anti_key`` label (not limited)."""
        snap = self.snap
        outer = snap.domains(key)
        inner = snap.label(anti_key).ids
        nd = len(outer.values)
        free_nodes = (fc > 0) & (outer.ids >= 0)
        unlabeled = np.where(free_nodes & (inner < 0), fc, 0)
        caps: I64 = outer.sums(unlabeled) if nd else np.zeros(0, dtype=np.int64)
        sel = free_nodes & (inner >= 0)
        if sel.any():
            pairs = distinct_sorted(outer.ids[sel].astype(np.int64) * (len(inner) + 1) + inner[sel])
            caps = caps + np.bincount(pairs // (len(inner) + 1), minlength=nd).astype(np.int64)
        return caps

    def _placement_loop(
        self, pg: PodGroup, pods: Sequence[Pod], parent: BOOL | None, key: str, standalone: bool
    ) -> LeafOutcome:
        """§6.3 placement evaluation of a leaf with a topology constraint.

        Generates the placements (PlacementGenerate), evaluates the nominated one first (a
        standalone group whose pods' nominated nodes hit exactly one placement), otherwise every
        placement: predicted at once when the pods are interchangeable (``_predict``), else run
        pod by pod (``_evaluate_exact``). Among the successful placements the PlacementScore
        plugins pick one, which is then run for real (its pods stay assumed). Returns the leaf's
        outcome with ``placement`` set; when no placement succeeds, Unschedulable ``0/N
        placements are available, first placement status: ...`` with the first (or nominated)
        placement's exact diagnosis, so that the message explains a concrete failure."""
        snap = self.snap
        snap.refresh()
        parent_mask = snap.all_nodes if parent is None else parent
        sched_nodes = list(snap.group_pods.get(pg.key, {}).values())
        placements, gst = self.generate(key, parent_mask, sched_nodes)
        self.c.generated += len(placements)
        if not gst.ok:
            return LeafOutcome(pg.key, gst)
        if not placements:
            return LeafOutcome(
                pg.key, unschedulable(MSG_PLACEMENTS % (0, "no placement generated"), self.generator_name())
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
            want = self.placements_to_find(placements)
            others = self.evaluation_order(pg.key, [p for p in placements if p is not nominated], want)
            found = 0
            if VECTORIZED_PLACEMENTS and (self._homogeneous(infos) or self._self_anti_key(infos) is not None):
                for ev in self._predict(pg, infos, others, parent_mask, key):  # all at once, cheaply
                    evals.append(ev)
                    found += ev.status.ok
                    if found >= want:
                        break
            else:
                for p in others:
                    ev = self._evaluate_exact(pg, pods, p)
                    if ev.status.is_error:
                        return LeafOutcome(pg.key, ev.status)
                    evals.append(ev)
                    found += ev.status.ok
                    if found >= want:
                        break
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
                out.tried = [*report.outcome.assigned, *report.outcome.tried]  # placed, then reverted
            return out
        if len(successful) == 1:
            best = successful[0]
        elif all(ev.outcome is None for ev in successful):
            best = self.best(successful, key, parent_mask)
        else:
            best = self.best(successful)
        self.c.scored += len(successful) if len(successful) > 1 else 0
        if best.outcome is not None:
            # re-assume the evaluated proposals
            mark = snap.backup()
            for pk, node in best.proposals:
                snap.assume(pk, node, self.demand(pk, best.outcome.devices), pg.key)
            snap.release(mark)
            out = best.outcome
        else:
            out = self.default_algorithm(pg, pods, best.placement.nodes)
            self.c.evaluated += 1
        out.placement = best.placement.name
        return out

    # ------------------------------------------- how many placements are evaluated (KEP-5732)
    def placements_to_find(self, placements: Sequence[Placement]) -> int:
        """How many feasible placements are evaluated before one is chosen: upstream's
        PercentageOfPlacementsToScore (KEP-5732, kubernetes PR #139859). Without a PlacementScore
        plugin the first feasible placement wins. Otherwise ``p`` percent of the placements, at
        least 1: ``p`` is ``config.percentage_of_placements_to_score`` when set (100: every
        placement), else the adaptive default ``max(5, 100 - nodes * 9 / 500)`` where ``nodes``
        sums the nodes of every generated placement (100% for small clusters, 10% at 5,000)."""
        n = len(placements)
        if n <= 1:
            return n
        if not self.profile.placement_score:
            return 1
        pct = self.state.config.percentage_of_placements_to_score
        if pct >= 100:
            return n
        if pct <= 0:
            nodes = sum(p.size for p in placements)
            pct = max(MIN_PLACEMENTS_PERCENTAGE, 100 - nodes * 9 // 500)
        return max(1, n * pct // 100)

    @staticmethod
    def evaluation_order(group: str, placements: list[Placement], want: int) -> list[Placement]:
        """The order placements are evaluated in. Upstream shuffles them so that the subset a
        limit leaves is not the generator's first few; podledger's stand-in for the shuffle is
        deterministic: placements sorted by a hash of (group, placement name), a different order
        per group. When every placement is evaluated anyway, the generator's order stays (the
        winner does not depend on it, and the first placement a failure reports is the first
        name)."""
        if want >= len(placements):
            return placements
        return sorted(
            placements, key=lambda p: hashlib.blake2b(f"{group}\0{p.name}".encode(), digest_size=8).digest()
        )

    # ---------------------------------------------------- §6.2 / §6.4 through the profile
    def generate(
        self, key: str | None, parent: BOOL, scheduled_nodes: list[str]
    ) -> tuple[list[Placement], Status]:
        """PlacementGenerate: the profile's generator (none: the parent is the only placement)."""
        gen = self.profile.placement_generate
        if gen is None:
            return [Placement("", parent)], SUCCESS
        return gen.generate(self.snap, key, parent, scheduled_nodes)

    def generator_name(self) -> str:
        gen = self.profile.placement_generate
        return gen.name if gen is not None else topology_placement.NAME

    def best(
        self, evals: Sequence[PlacementEval], key: str | None = None, parent: BOOL | None = None
    ) -> PlacementEval:
        """PlacementScore: the winning candidate (``placement_scoring``); ``key``/``parent`` when
        every candidate is a predicted single domain (per-domain sums)."""
        c = Candidates(evals, self.snap, self.state.config, key, parent)
        return placement_scoring.best(c, self.profile.placement_score)


def _inter_pod_sig(pod: Pod) -> tuple[object, ...]:
    return (
        pod.namespace,
        tuple(sorted(pod.labels.items())),
        pod.host_ports,
        pod.affinity_required,
        pod.affinity_preferred,
        pod.anti_affinity_required,
        pod.anti_affinity_preferred,
        pod.spread_constraints,
    )


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
