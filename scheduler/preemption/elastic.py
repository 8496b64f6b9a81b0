"""Elastic quota preemption (docs/semantics.md Q.4 rules 1-7)."""

from __future__ import annotations

from typing import Any

from scheduler import quota as quota_mod
from scheduler.framework import Code, PostFilterRequest, PostFilterResult, Status
from scheduler.messages import (
    MSG_NEVER,
    MSG_NO_VICTIMS,
    POD_PREFIX,
)
from scheduler.model import NEVER, Pod
from scheduler.preemption.common import (
    EQ_PREFIX,
    MSG_FOUND_EQ,
    MSG_NOT_IN_QUOTA,
    RULE_EQ_BORROWED,
    RULE_EQ_OWN,
)
from scheduler.preemption.pdb import Budgets
from scheduler.preemption.units import Unit, Units
from scheduler.preemption.workload import WorkloadPreemption


class ElasticQuotaPreemption(WorkloadPreemption):
    # ------------------------------------------------------------ elastic quota
    def _elastic(self, req: PostFilterRequest) -> PostFilterResult:
        st = self.state
        qs = self.quotas
        prefix = EQ_PREFIX if req.kind != "pod" else POD_PREFIX
        if self._policy(req) == NEVER:
            never = MSG_NEVER.rstrip(".") if req.kind == "pod" else MSG_NEVER
            return PostFilterResult(Status(Code.UNSCHEDULABLE, (prefix + never,), quota_mod.NAME))
        q = self._quota_ctx(req)
        if q is None:  # rule 6
            who = f"{req.kind} {req.key}"
            return PostFilterResult(
                Status(Code.UNSCHEDULABLE, (EQ_PREFIX + MSG_NOT_IN_QUOTA % who,), quota_mod.NAME)
            )
        borrowed = q.usage.within_min(q.leaf, q.request)  # rule 4 vs rule 5
        rule = RULE_EQ_BORROWED if borrowed else RULE_EQ_OWN
        units = Units(st)
        budgets = Budgets(st) if st.pdbs else None
        # rule 2: nodes passing the static filters for at least one pending pod
        snap, ps = st.snap, st.podsched
        mask = None
        for p in req.pods:
            ok = ps.static(ps.info(p)).ok
            mask = ok.copy() if mask is None else (mask | ok)
        over: dict[str, bool] = {}
        candidates: list[Unit] = []
        seen: set[str] = set()
        # the quotas whose pods can be victims (rule 4: others' borrowing quotas; rule 5: the
        # preemptor's own): a unit qualifies only if all its pods are under one of them, so a
        # pod elsewhere is skipped before its unit is built (a pod's unit is the same whichever
        # of its pods is visited first, and the candidates are sorted by a total key after)
        if borrowed:
            able = {v for v in set(qs.leaf_of_ns.values()) if v != q.leaf and q.usage.over_min(v)}
        else:
            able = {q.leaf}
        leaf_of_ns = qs.leaf_of_ns
        for k, p in st.pods.items() if able else ():
            if p.node_name is None or leaf_of_ns.get(p.namespace) not in able:
                continue
            u = units.of(k)
            if u is None or u.key in seen:
                continue
            seen.add(u.key)
            leaves = {qs.leaf_for(st.pods[x].namespace) for x in u.pods}
            if len(leaves) != 1:
                continue
            (vleaf,) = leaves
            if vleaf is None:
                continue
            if borrowed:
                if vleaf == q.leaf:
                    continue
                if vleaf not in over:
                    over[vleaf] = q.usage.over_min(vleaf)
                if not over[vleaf]:
                    continue
            elif vleaf != q.leaf or u.priority >= req.priority:
                continue
            if budgets is not None and budgets.violates_alone(st, u):  # rule 3
                continue
            idx = [snap.index.get(st.pods[x].node_name or "") for x in u.pods]
            if mask is None or not any(i is not None and bool(mask[i]) for i in idx):
                continue
            candidates.append(u)
        candidates.sort(key=Unit.importance)
        if not candidates:
            return PostFilterResult(
                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (prefix + MSG_NO_VICTIMS,), quota_mod.NAME)
            )
        qstate = q.usage.state_of(q.leaf, q.request)
        status, choice = self._choose(req, candidates, q, budgets)
        if choice is None:
            return PostFilterResult(Status(status.code, (prefix + status.message,), quota_mod.NAME))
        usage = q.usage

        def victim_quota(p: Pod) -> dict[str, Any] | None:
            leaf = qs.leaf_for(p.namespace)
            return usage.state_of(leaf) if leaf is not None else None

        msg = "" if req.kind == "pod" else EQ_PREFIX + MSG_FOUND_EQ % choice.pod_count
        return self._result(req, choice, rule, msg, qstate, victim_quota)
