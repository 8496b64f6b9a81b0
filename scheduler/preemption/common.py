"""What every preemption algorithm shares: rule names and messages, a choice and its cost, the
quota context, and the helpers of ``PreemptionBase`` (eligibility, nominated reservations, the
``PodPreempted`` decisions of a choice)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.decisions import Decision, PodPreempted
from scheduler.framework import Code, PostFilterRequest, PostFilterResult, Status
from scheduler.messages import MSG_CONDITION, MSG_PREEMPTED_GROUP, MSG_PREEMPTED_POD
from scheduler.model import PREEMPT_LOWER, Pod
from scheduler.plugins.elastic_quota import ElasticQuota
from scheduler.preemption.units import Unit
from scheduler.quota import Quotas, Usage, requests_of
from scheduler.snapshot import Demand
from scheduler.state import State

RULE_WAP = "WorkloadAwarePreemption"
RULE_DEFAULT = "DefaultPreemption"
RULE_EQ_BORROWED = "ElasticQuota:borrowed"
RULE_EQ_OWN = "ElasticQuota:own-quota"

EQ_PREFIX = "elastic quota preemption: "  # podledger's own (elastic quotas)
MSG_FOUND_EQ = "found a placement, preempting %d victims"
MSG_NOT_IN_QUOTA = "not eligible: %s is not in any elastic quota"

RANK_CPG, RANK_PG, RANK_POD = 3, 2, 1
MIN_CANDIDATES_ABSOLUTE = 100
MIN_CANDIDATES_PERCENT = 10

ALGO_NONE, ALGO_DEFAULT, ALGO_EQ, ALGO_AUTO = "None", "Default", "ElasticQuota", "Auto"


# (victims or None, cacheable, PDB-violating unit keys, (violations, max prio, prio sum, pods))
NodeResult = tuple[tuple[Unit, ...] | None, bool, frozenset[str], tuple[int, int, int, int]]
NO_COST = (0, 0, 0, 0)


# ============================================================================ choices
@dataclass(slots=True)
class Choice:
    victims: list[Unit]
    violating: set[str]
    nominations: dict[str, str]
    order: int = 0  # tie-break: discovery order

    def cost(self) -> tuple[int, int, int, int, int, int]:
        pods = [(u.priority, k) for u in self.victims for k in u.pods]
        return (
            -len(self.nominations),
            sum(1 for u in self.victims if u.key in self.violating),
            max((p for p, _ in pods), default=-(2**63)),
            sum(p for p, _ in pods),
            len(pods),
            self.order,
        )

    @property
    def pod_count(self) -> int:
        return sum(len(u.pods) for u in self.victims)


@dataclass(slots=True)
class QuotaCtx:
    """Quota bookkeeping while simulating (only when the preemptor is in a quota)."""

    usage: Usage
    namespace: str
    request: dict[str, int]
    leaf: str

    def ok(self) -> bool:
        return self.usage.check(self.namespace, self.request) is None


class PreemptionBase:
    """State and helpers shared by the algorithms (the plugin class mixes them together)."""

    state: State
    quotas: Quotas
    quota_filter: ElasticQuota
    terminating: set[str]

    # ------------------------------------------------------------ helpers
    def _policy(self, req: PostFilterRequest) -> str:
        if req.kind != "pod" and not self.state.gate("PodGroupPreemptionPolicy"):
            return req.pods[0].preemption_policy or PREEMPT_LOWER
        return req.preemption_policy or PREEMPT_LOWER

    def _ongoing(self, req: PostFilterRequest) -> dict[str, str] | None:
        if not self.terminating:
            return None
        noms = {p.key: p.nominated_node for p in req.pods if p.nominated_node is not None}
        for node in sorted(set(noms.values())):
            for k in sorted(self.state.snap.node_pods.get(node, ())):
                p = self.state.pods.get(k)
                if k in self.terminating and p is not None and p.priority < req.priority:
                    return {pk: n for pk, n in noms.items()}
        return None

    def _quota_ctx(self, req: PostFilterRequest) -> QuotaCtx | None:
        qs = self.quotas
        ns = req.pods[0].namespace
        leaf = qs.leaf_for(ns)
        if leaf is None:
            return None
        usage = qs.usage_of(self.state.snap.ns_used, self.state.snap.ns_count)
        return QuotaCtx(usage, ns, requests_of(req.pods), leaf)

    def _reserved(self, req: PostFilterRequest) -> dict[str, list[Demand]]:
        """Node -> demands of other pods nominated there with priority >= the preemptor's (not
        assumed: an assumed pod no longer counts as nominated), as the Filter sees them."""
        own = {p.key for p in req.pods}
        nominated: Mapping[str, Mapping[str, tuple[int, Demand]]] = getattr(
            self.state.podsched, "nominated", {}
        )
        out: dict[str, list[Demand]] = {}
        has = self.state.snap.has_pod
        for node, per in nominated.items():
            ds = [d for k, (prio, d) in per.items() if k not in own and prio >= req.priority and not has(k)]
            if ds:
                out[node] = ds
        return out

    def _group_of(self, p: Pod) -> str | None:
        return self.state.group_key_of(p) if self.state.is_member(p) else None

    # ------------------------------------------------------------ results
    def _preemptor_uid(self, req: PostFilterRequest) -> str:
        st = self.state
        if req.kind == "pod":
            return req.pods[0].uid or req.key
        obj = st.pod_groups.get(req.key) if req.kind == "podgroup" else st.composites.get(req.key)
        return (obj.uid if obj is not None else "") or req.key

    def _result(
        self,
        req: PostFilterRequest,
        choice: Choice,
        rule: str,
        message: str,
        quota: dict[str, Any] | None,
        victim_quota: Callable[[Pod], dict[str, Any] | None] | None = None,
    ) -> PostFilterResult:
        st = self.state
        uid = self._preemptor_uid(req)
        sched = req.pods[0].scheduler_name
        what = "pod" if req.kind == "pod" else "podgroup"
        cond = MSG_CONDITION % (sched, what)
        decisions: list[Decision] = []
        victims: list[str] = []
        target = choice.nominations.get(req.key, "") if req.kind == "pod" else ""
        rows: list[tuple[str, Unit]] = sorted((k, u) for u in choice.victims for k in u.pods)
        for k, u in rows:
            p = st.pods[k]
            node = p.node_name or ""
            if req.kind == "pod":
                event = MSG_PREEMPTED_POD % (uid, target)
            else:
                event = MSG_PREEMPTED_GROUP % (req.kind, uid)
            qd: dict[str, Any] | None = None
            if quota is not None:
                qd = dict(quota)
                if victim_quota is not None:
                    vq = victim_quota(p)
                    if vq is not None:
                        qd["victim"] = vq
            decisions.append(
                PodPreempted(
                    victim=k,
                    preemptor=req.key,
                    preemptor_kind=req.kind,
                    node=node,
                    rule=rule,
                    unit=u.key,
                    disruption_mode=u.mode,
                    victim_priority=u.priority,
                    preemptor_priority=req.priority,
                    pdb_violation=u.key in choice.violating,
                    message=event,
                    condition_message=cond,
                    quota=qd,
                )
            )
            victims.append(k)
        status = Status(Code.SUCCESS, (message,) if message else ())
        return PostFilterResult(
            status, dict(sorted(choice.nominations.items())), tuple(victims), tuple(decisions)
        )
