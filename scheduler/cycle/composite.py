"""CompositePodGroups (§7.2): per-CPG placements, children in forest order, recursive; the
completion of child statuses (§5.1 step 7)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.cycle.placement import LeafAlgorithm
from scheduler.cycle.results import LeafOutcome, PlacementEval
from scheduler.framework import Code, Status, error, unschedulable
from scheduler.messages import MSG_CHILD_ERROR, MSG_PLACEMENTS
from scheduler.model import CompositePodGroup
from scheduler.plugins import gang_scheduling
from scheduler.state import CPG, PG, State

BOOL = npt.NDArray[np.bool_]


class Algorithm(LeafAlgorithm):
    """One attempt's root algorithm on the shared snapshot: leaves and CompositePodGroups."""

    # ------------------------------------------------------ §7.2 CPG
    def schedule_cpg(self, cpg: CompositePodGroup, parent: BOOL | None) -> Status:
        """§7.2: evaluate the CPG in each of its placements (children in forest order, greedy,
        recursive, each evaluation reverted), score the successful ones, then re-assume the
        winner's proposals. Returns the CPG's status; child statuses and outcomes land in
        ``self.results`` / ``self.outcomes`` (the winner's, or the first placement's on failure)."""
        snap = self.snap
        snap.refresh()
        parent_mask = snap.all_nodes if parent is None else parent
        key = cpg.topology_key if self.tas else None
        leaves = self.state.subtree(cpg.key)[0]
        sched_nodes = [nd for lk in leaves for nd in snap.group_pods.get(lk, {}).values()]
        placements, gst = self.generate(key, parent_mask, sched_nodes)
        self.c.generated += len(placements)
        rk = f"{CPG}:{cpg.key}"
        if not gst.ok:
            self.results[rk] = gst
            return gst
        ok: list[tuple[PlacementEval, dict[str, Status], dict[str, LeafOutcome]]] = []
        first: tuple[Status, dict[str, Status], dict[str, LeafOutcome]] | None = None
        want = self.placements_to_find(placements)
        for p in self.evaluation_order(cpg.key, placements, want):
            if len(ok) >= want:
                break
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
                st = unschedulable(MSG_PLACEMENTS % (0, "no placement generated"), self.generator_name())
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
            best_ev = self.best([e for e, _, _ in ok])
            chosen = next(t for t in ok if t[0] is best_ev)
        ev, sub_r, sub_o = chosen
        self.placement_of[cpg.key] = ev.placement.name
        for lk, pk, nd in self.successful_proposals(cpg.key, sub_r, sub_o):
            snap.assume(pk, nd, self.demand(pk, sub_o[lk].devices), lk)
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
