"""Workload-aware preemption (§10.2): the simulation engine (remove, re-run the root algorithm,
fix, reprieve), the two choices, and the PodGroup / CompositePodGroup PostFilter."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from scheduler.framework import SUCCESS, Code, PostFilterRequest, PostFilterResult, Status
from scheduler.messages import (
    MSG_FOUND,
    MSG_NEVER,
    MSG_NO_VICTIMS,
    MSG_ONGOING,
    PG_PREFIX,
)
from scheduler.model import NEVER
from scheduler.preemption.common import (
    RULE_DEFAULT,
    RULE_WAP,
    Choice,
    PreemptionBase,
    QuotaCtx,
)
from scheduler.preemption.pdb import Budgets
from scheduler.preemption.units import Unit, Units
from scheduler.snapshot import R_PODS, Demand, make_demand


class WorkloadPreemption(PreemptionBase):
    # ------------------------------------------------------------ simulation engine
    def _remove(self, units: Iterable[Unit], q: QuotaCtx | None) -> None:
        snap, st = self.state.snap, self.state
        for u in units:
            for k in u.pods:
                snap.remove_pod(k)
                if q is not None:
                    q.usage.add(st.pods[k], -1)

    def _add_back(self, u: Unit, q: QuotaCtx | None) -> None:
        snap, st = self.state.snap, self.state
        for k in u.pods:
            p = st.pods[k]
            assert p.node_name is not None
            snap.add_pod(k, p.node_name, make_demand(p.requests), self._group_of(p))
            if q is not None:
                q.usage.add(p, 1)

    def _probe(self, req: PostFilterRequest, units: Sequence[Unit], placed: int) -> bool:
        """Does removing ``units`` let the root algorithm succeed and place at least ``placed``
        pods? (snapshot restored)"""
        snap = self.state.snap
        mark = snap.backup()
        try:
            self._remove(units, None)
            st, props = self._reschedule(req)
            return st.ok and len(props) >= placed
        finally:
            snap.restore(mark)

    def _simulate(
        self,
        req: PostFilterRequest,
        removed: Sequence[Unit],
        q: QuotaCtx | None,
        budgets: Budgets | None,
        order: int,
    ) -> tuple[Status, Choice | None]:
        """Remove ``removed``, re-run the root algorithm, fix its assignments and reprieve."""
        st_ = self.state
        snap = st_.snap
        mark = snap.backup()
        base_usage = dict((k, dict(v)) for k, v in q.usage.used.items()) if q is not None else None
        try:
            self._remove(removed, q)
            status, props = self._reschedule(req)
            if not status.ok:
                return status, None
            pods = {p.key: p for p in req.pods}
            by_node: dict[str, list[Demand]] = {}
            for pk in sorted(props):
                p = pods.get(pk) or st_.pods[pk]
                d = make_demand(p.requests)
                snap.add_pod(pk, props[pk], d, self._group_of(p))
                by_node.setdefault(props[pk], []).append(d)
            reserved = self._reserved(req)
            rows: dict[str, set[int]] = {}
            for node, ds in by_node.items():
                rs = {R_PODS}
                for d in ds:
                    rs.update(snap.resource_rows(d))
                rows[node] = rs
            ordered = sorted(removed, key=Unit.importance)
            violating = budgets.violating(st_, ordered) if budgets is not None else set()
            reprieve = [u for u in ordered if u.key in violating] + [
                u for u in ordered if u.key not in violating
            ]
            victims: list[Unit] = []
            for u in reprieve:
                self._add_back(u, q)
                if self._fits(u, rows, reserved) and (q is None or q.ok()):
                    continue
                self._remove((u,), q)
                victims.append(u)
            if not victims:
                # the root algorithm only failed because of something the removal did not touch
                return Status(Code.UNSCHEDULABLE, (MSG_NO_VICTIMS,)), None
            return SUCCESS, Choice(victims, violating & {u.key for u in victims}, dict(props), order)
        finally:
            snap.restore(mark)
            if q is not None and base_usage is not None:
                q.usage.used = base_usage

    def _fits(self, u: Unit, rows: Mapping[str, set[int]], reserved: Mapping[str, list[Demand]]) -> bool:
        snap, st = self.state.snap, self.state
        nodes = {st.pods[k].node_name for k in u.pods}
        for node in nodes:
            if node is None or node not in rows:
                continue
            i = snap.index.get(node)
            if i is None:
                continue
            extra: dict[int, int] = {}
            for d in reserved.get(node, ()):
                for r, a in zip(snap.resource_rows(d), d.amounts, strict=True):
                    extra[r] = extra.get(r, 0) + a
                extra[R_PODS] = extra.get(R_PODS, 0) + 1
            for r in rows[node]:
                if int(snap.free[r, i]) - extra.get(r, 0) < 0:
                    return False
        return True

    def _choose(
        self,
        req: PostFilterRequest,
        candidates: list[Unit],
        q: QuotaCtx | None,
        budgets: Budgets | None,
    ) -> tuple[Status, Choice | None]:
        """Choices (a) and (b) of the module docstring; the cheaper one wins."""
        status, first = self._simulate(req, candidates, q, budgets, 0)
        if first is None:
            return status, None
        choices = [first]
        least_first = sorted(candidates, key=Unit.importance, reverse=True)
        lo, hi = 1, len(least_first)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._probe(req, least_first[:mid], len(first.nominations)):
                hi = mid
            else:
                lo = mid + 1
        if hi < len(least_first):
            _, second = self._simulate(req, least_first[:hi], q, budgets, 1)
            if second is not None:
                choices.append(second)
        return SUCCESS, min(choices, key=Choice.cost)

    # ------------------------------------------------------------ workload-aware (groups)
    def _group_default(self, req: PostFilterRequest) -> PostFilterResult:
        if self._policy(req) == NEVER:
            return PostFilterResult(Status(Code.UNSCHEDULABLE, (PG_PREFIX + MSG_NEVER,), RULE_DEFAULT))
        ongoing = self._ongoing(req)
        if ongoing is not None:
            return PostFilterResult(Status(Code.SUCCESS, (PG_PREFIX + MSG_ONGOING,)), ongoing)
        units = Units(self.state)
        candidates = units.all_lower(req.priority)
        if not candidates:
            return PostFilterResult(
                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (PG_PREFIX + MSG_NO_VICTIMS,), RULE_DEFAULT)
            )
        q = self._quota_ctx(req)
        budgets = Budgets(self.state) if self.state.pdbs else None
        status, choice = self._choose(req, candidates, q, budgets)
        if choice is None:
            return PostFilterResult(Status(status.code, (PG_PREFIX + status.message,), RULE_DEFAULT))
        qstate = q.usage.state_of(q.leaf, q.request) if q is not None else None
        return self._result(req, choice, RULE_WAP, PG_PREFIX + MSG_FOUND % choice.pod_count, qstate)

    def _reschedule(self, req: PostFilterRequest) -> tuple[Status, dict[str, str]]:
        """``req.reschedule`` preceded by the quota PreFilter on the (modified) snapshot (rule 7)."""
        pre = self.quota_filter.check(req.pods)
        if pre is not None and not pre.ok:
            return pre, {}
        return req.reschedule()
