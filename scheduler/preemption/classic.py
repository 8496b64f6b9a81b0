"""Classic DefaultPreemption for plain pods: the per-node dry run with its cache."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from scheduler import quota as quota_mod
from scheduler.framework import Code, PostFilterRequest, PostFilterResult, Status, fit_error_message
from scheduler.messages import (
    MSG_NEVER,
    MSG_NO_VICTIMS_POD,
    MSG_NOT_HELPFUL,
    POD_PREFIX,
)
from scheduler.model import NEVER, Pod
from scheduler.preemption.common import (
    MIN_CANDIDATES_ABSOLUTE,
    MIN_CANDIDATES_PERCENT,
    NO_COST,
    RULE_DEFAULT,
    Choice,
    NodeResult,
)
from scheduler.preemption.pdb import Budgets
from scheduler.preemption.units import RANK_POD, Unit, Units
from scheduler.preemption.workload import WorkloadPreemption
from scheduler.snapshot import BOOL, R_PODS, Demand

NO_RESERVED: tuple[tuple[Demand, ...], tuple[Any, ...]] = ((), ())


class ClassicPreemption(WorkloadPreemption):
    _epoch: int
    _log_pos: int
    _versions: dict[int, int]
    _node_cache: dict[int, tuple[object, NodeResult]]

    # ------------------------------------------------------------ classic (plain pods)
    def _pod_default(self, req: PostFilterRequest) -> PostFilterResult:
        pod = req.pods[0]
        if self._policy(req) == NEVER:
            # the fit error appends its own period
            return PostFilterResult(
                Status(Code.UNSCHEDULABLE, (POD_PREFIX + MSG_NEVER.rstrip("."),), RULE_DEFAULT)
            )
        q = self._quota_ctx(req)
        budgets = Budgets(self.state) if self.state.pdbs else None
        if req.status.plugin == quota_mod.NAME:
            # the quota PreFilter failed: node-local victims cannot help, simulate on the cluster
            candidates = Units(self.state).all_lower(req.priority)
            if not candidates:
                return PostFilterResult(
                    Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (POD_PREFIX + MSG_NO_VICTIMS_POD,), RULE_DEFAULT
                    )
                )
            status, choice = self._choose(req, candidates, q, budgets)
            if choice is None:
                return PostFilterResult(Status(status.code, (POD_PREFIX + status.message,), RULE_DEFAULT))
        else:
            found = self._classic(req, pod, budgets)
            if isinstance(found, Status):
                return PostFilterResult(found)
            choice = found
        qstate = q.usage.state_of(q.leaf, q.request) if q is not None else None
        return self._result(req, choice, RULE_DEFAULT, "", qstate)

    def _node_versions(self) -> dict[int, int]:
        """Per-node change counters from the snapshot's change log (reset with its epoch)."""
        snap = self.state.snap
        if snap.epoch != self._epoch or len(snap.log) < self._log_pos:
            self._epoch, self._log_pos = snap.epoch, 0
            self._versions = {}
            self._node_cache = {}
        log = snap.log
        ver = self._versions
        for x in log[self._log_pos :]:
            i = x if x >= 0 else ~x
            ver[i] = ver.get(i, 0) + 1
        self._log_pos = len(log)
        return ver

    def _classic(self, req: PostFilterRequest, pod: Pod, budgets: Budgets | None) -> Choice | Status:
        """Per-node dry run (module docstring). A node whose lower-priority pods are all plain
        pods (their units depend on nothing outside the node) keeps its result cached until the
        node changes (snapshot change log) or the question does (preemptor priority and demand,
        nominated pods on the node); with PDBs present nothing is cached."""
        st = self.state
        snap, ps = st.snap, st.podsched
        n = snap.n
        pi = ps.info(pod)
        static_ok = ps.static(pi).ok
        # pod-aware filters (InterPodAffinity, PodTopologySpread, NodePorts) depend on the pods
        # of the node (and of its domain): such a preemptor is dry-run with the victims removed
        # from the snapshot, without the per-node cache; nodes they reject as unresolvable
        # cannot be helped
        pod_aware = bool(ps.pod_filters) and any(f.active(pod, snap) for f in ps.pod_filters)
        if pod_aware:
            for r in ps.pod_results(pi):
                if r.unresolvable is not None:
                    static_ok = static_ok & ~r.unresolvable
                elif r.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    static_ok = static_ok & r.ok
        rows = [*snap.resource_rows(pi.demand), R_PODS]
        need = [*pi.demand.amounts, 1]
        nrows = len(rows)
        # The nominated pods that count on a node (as ``_reserved``), built for the nodes the
        # loop visits only: the whole map costs O(every nominated pod) per preemption, which
        # made a burst of preemptions quadratic.
        own = {p.key for p in req.pods}
        nominated = getattr(ps, "nominated", {})
        has = snap.has_pod
        prio = req.priority

        def reserved_on(per: Mapping[str, tuple[int, Demand]]) -> tuple[list[Demand], tuple[Any, ...]]:
            ds = [d for k, (pr, d) in per.items() if k not in own and pr >= prio and not has(k)]
            return ds, tuple((d.names, d.amounts) for d in ds)

        units = Units(st)
        want = min(n, max(MIN_CANDIDATES_ABSOLUTE, n * MIN_CANDIDATES_PERCENT // 100))
        found: list[tuple[tuple[int, ...], int, NodeResult]] = []
        res_names = [snap.res_names[r] for r in rows[:-1]]
        versions = self._node_versions()
        cache = self._node_cache if budgets is None and not pod_aware else None
        question = (snap.generation, st.workloads_on, req.priority, tuple(rows), tuple(need))

        def on_node(u: Unit, node: str) -> list[int]:
            tot = [0] * nrows
            for k in u.pods:
                p = st.pods[k]
                if p.node_name != node:
                    continue
                req_ = p.requests
                for j, r in enumerate(res_names):
                    tot[j] += int(req_.get(r, 0))
                tot[-1] += 1
            return tot

        # Vectorised skip: a node where even removing every pod (an upper bound of removing the
        # lower-priority ones) cannot fit the preemptor beside the nominated pods that count
        # there, or that holds no pod, has no victims; one NumPy expression finds them, and
        # the loop visits the others only.
        helps = self._can_help(pi.demand.names, rows, need, own, prio)
        visit = np.flatnonzero(static_ok & helps)
        not_helpful = n - int(np.count_nonzero(static_ok))
        no_victims = int(np.count_nonzero(static_ok & ~helps))
        for i in visit.tolist():
            name = snap.names[i]
            per = nominated.get(name) if nominated else None
            res_here, res_key = reserved_on(per) if per else NO_RESERVED
            key = (question, versions.get(i, 0), res_key)
            hit = cache.get(i) if cache is not None else None
            if hit is not None and hit[0] == key:
                victims_c = hit[1]
            else:
                victims_c = self._eval_node(req, i, name, res_here, units, rows, need, on_node, budgets)
                if pod_aware and victims_c[0] is not None:
                    victims_c = self._pod_aware_victims(pod, i, name, victims_c, units)
                if cache is not None and victims_c[1]:
                    cache[i] = (key, victims_c)
                elif cache is not None:
                    cache.pop(i, None)
            if victims_c[0] is None:
                no_victims += 1
                continue
            found.append(((-1, *victims_c[3], i), i, victims_c))
            if len(found) >= want:
                break
        if not found:
            counts: dict[str, int] = {}
            if no_victims:
                counts[MSG_NO_VICTIMS_POD] = no_victims
            if not_helpful:
                counts[MSG_NOT_HELPFUL] = not_helpful
            msg = fit_error_message(n, counts).rstrip(".")
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if not no_victims else Code.UNSCHEDULABLE
            return Status(code, (POD_PREFIX + msg,), RULE_DEFAULT)
        _, best, (victims, _, violating, _) = min(found, key=lambda t: t[0])
        assert victims is not None
        return Choice(list(victims), set(violating), {pod.key: snap.names[best]}, best)

    def _can_help(
        self, names: Sequence[str], rows: Sequence[int], need: Sequence[int], own: set[str], prio: int
    ) -> BOOL:
        """Per node: can removing every pod of the node make room for ``need`` (over ``rows``:
        the preemptor's resources, then pods) beside the nominated pods that count there
        (priority >= ``prio``, not ``own``, not assumed), and does the node hold any pod. False
        implies the dry run finds no victims there (its victims are a subset of the node's pods)."""
        snap, ps = self.state.snap, self.state.podsched
        alloc, free = snap.alloc, snap.free
        cap = alloc[list(rows)]
        helps: BOOL = alloc[R_PODS] > free[R_PODS]
        cols = getattr(ps, "_nom_cols", None)
        if getattr(ps, "nominated", None) and cols is not None:
            sel = cols.counted(snap.index, prio, own, snap.pods_among(snap.watched))
            if sel.any():
                count, tots = cols.totals(snap.index, snap.n, sel, names)
                cap = cap - np.vstack([*tots, count])
        helps &= (cap >= np.asarray(need, dtype=np.int64)[:, None]).all(axis=0)
        return helps

    def _pod_aware_victims(self, pod: Pod, i: int, name: str, found: NodeResult, units: Units) -> NodeResult:
        """Upstream's SelectVictimsOnNode for the pod-aware filters: with every lower-priority
        pod of the node removed the preemptor must pass them (else the node cannot help); then
        the resource victims are added back one by one in reprieve order and kept as victims
        only when the preemptor would fail without their removal."""
        st, snap = self.state, self.state.snap
        ps = st.podsched
        pi = ps.info(pod)
        victims = found[0]
        assert victims is not None
        here: dict[str, Unit] = {}
        for k in snap.node_pods.get(name, ()):
            u0 = units.of(k)
            if u0 is not None and u0.priority < pod.priority:
                here[u0.key] = u0
        lower = sorted(here.values(), key=Unit.importance)
        removed = {k for u in lower for k in u.pods if snap.pod_node(k) == name}
        keep = {u.key for u in victims}
        mark = snap.backup()
        try:
            saved = {
                k: (snap.pod_node(k), ps.info(st.pods[k]).demand, self._group_of(st.pods[k])) for k in removed
            }
            for k in sorted(removed):
                snap.remove_pod(k)
            if not all(bool(r.ok[i]) for r in ps.pod_results(pi)):
                return (None, False, frozenset(), NO_COST)
            chosen: list[Unit] = []
            for u in lower:
                back = [k for k in u.pods if k in saved]
                for k in back:
                    node_name, d, g = saved[k]
                    assert node_name is not None
                    snap.add_pod(k, node_name, d, g)
                still = all(bool(r.ok[i]) for r in ps.pod_results(pi))
                if u.key in keep or not still:
                    for k in back:
                        snap.remove_pod(k)
                    chosen.append(u)
        finally:
            snap.restore(mark)
        if not chosen:
            return (None, False, frozenset(), NO_COST)
        prios = [u.priority for u in chosen for _ in u.pods]
        bad = frozenset(found[2] & {u.key for u in chosen})
        return (tuple(chosen), False, bad, (len(bad), max(prios, default=-(2**63)), sum(prios), len(prios)))

    def _eval_node(
        self,
        req: PostFilterRequest,
        i: int,
        name: str,
        res_here: Sequence[Demand],
        units: Units,
        rows: Sequence[int],
        need: Sequence[int],
        on_node: Callable[[Unit, str], list[int]],
        budgets: Budgets | None,
    ) -> NodeResult:
        """(victims or None when the node cannot help, cacheable, violating unit keys, cost:
        (PDB-violating units, highest victim priority, priority sum, victim pods))."""
        st, snap = self.state, self.state.snap
        nrows = len(rows)
        avail = [int(snap.free[r, i]) for r in rows]
        for d in res_here:
            dd = d.as_dict()
            for j, r in enumerate(rows[:-1]):
                avail[j] -= dd.get(snap.res_names[r], 0)
            avail[-1] -= 1
        lower: dict[str, Unit] = {}
        plain = True
        for k in snap.node_pods.get(name, ()):
            u = units.of(k)
            if u is not None and u.priority < req.priority:
                lower[u.key] = u
                # a pod without spec.schedulingGroup: its unit depends on nothing but itself
                plain = plain and u.rank == RANK_POD and st.pods[k].pod_group is None
        if not lower:
            return (None, plain, frozenset(), NO_COST)
        contrib = {uk: on_node(u, name) for uk, u in lower.items()}
        cur = list(avail)
        for c in contrib.values():
            for j in range(nrows):
                cur[j] += c[j]
        if any(cur[j] < need[j] for j in range(nrows)):
            return (None, plain, frozenset(), NO_COST)
        ordered = sorted(lower.values(), key=Unit.importance)
        violating = budgets.violating(st, ordered) if budgets is not None else set()
        reprieve = [u for u in ordered if u.key in violating] + [u for u in ordered if u.key not in violating]
        victims: list[Unit] = []
        for u in reprieve:
            c = contrib[u.key]
            if all(cur[j] - c[j] >= need[j] for j in range(nrows)):
                for j in range(nrows):
                    cur[j] -= c[j]
            else:
                victims.append(u)
        bad = frozenset(violating & {u.key for u in victims})
        prios = [u.priority for u in victims for _ in u.pods]
        cost = (len(bad), max(prios, default=-(2**63)), sum(prios), len(prios))
        return (tuple(victims), plain, bad, cost)
