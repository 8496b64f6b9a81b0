"""Preemption: workload-aware PodGroupPostFilter, classic pod-level DefaultPreemption and
elastic-quota preemption (spec workload-scheduling.md §8–§10, §11.4; spec/quota.md).

The plugin is the cycle's PostFilter hook (``Cycle.post_filter_hook``): it runs when an attempt
ends ``Unschedulable`` and returns a ``PostFilterResult``. A Success result means "waiting on
preemption": the facade removes the victims, records the nominations and requeues the pods;
nothing binds in the same cycle, the next cycle tries the nominated nodes first.

Algorithm selection (``SchedulerConfig.preemption_algorithm``)
  * ``None``: no preemption at all;
  * ``Default``: workload-aware preemption for PodGroup/CompositePodGroup preemptors, classic
    DefaultPreemption for plain pods;
  * ``ElasticQuota``: the quota rules 1–7 of spec/quota.md for every preemptor (rule 6: a
    preemptor in no quota cannot preempt);
  * ``Auto`` (default): ``ElasticQuota`` when the preemptor's namespace belongs to an elastic
    quota, otherwise ``Default``.

Victim units (§8)
  A scheduled pod belongs to the unit of its *highest* ancestor (PodGroup, then parent
  CompositePodGroups up to the root) whose disruption mode is All; the unit holds every scheduled
  pod of that ancestor's subtree, on any node, and is evicted or kept as a whole. Without an All
  ancestor the pod is its own unit. Unit priority = the priority of the hierarchy's root group
  (a missing parent ends the walk: the highest existing group); plain pods: the pod priority.
  Only units with priority strictly below the preemptor's are candidates.

Importance of units (most important first; ``Unit.importance``)
  1. higher priority;  2. rank: CompositePodGroup unit (3) > PodGroup unit or member of a
  PodGroup (2) > plain pod (1);  3. more pods;  4. earlier start time (the earliest start of its
  pods; older is more important);  5. UID ascending: of two otherwise equal units the one whose
  UID (object uid, or its key when empty) sorts *first* is the more important, so the one that
  sorts last is evicted first (upstream's direction is unverified, spec §14).

PDB accounting
  A PodDisruptionBudget allows ``healthy - desired`` disruptions (``minAvailable``) or
  ``maxUnavailable - (expected - healthy)`` (``maxUnavailable``); healthy = matching bound pods,
  expected = all matching pods; percentages round up over ``expected``. Units are processed in a
  given order against shared budgets; a unit whose eviction (all its matching pods at once)
  drives some budget below zero is *violating*.

Workload-aware preemption (groups, §10.2)
  Eligibility: ``preemptionPolicy: Never`` (the group's, or the first pod's with the
  PodGroupPreemptionPolicy gate off) -> ``not eligible due to preemptionPolicy=Never.``; a member
  whose nominated node still hosts a lower-priority pod that is terminating because of preemption
  -> Success ``ongoing preemption on nominated nodes`` keeping the nominations (victims here are
  deleted at once, so only a caller that fills ``Preemption.terminating`` sees this); no
  candidate unit -> UnschedulableAndUnresolvable ``No preemption victims found for incoming
  preemptor``. Then two *choices* are simulated on the snapshot (always restored afterwards):
  (a) the spec algorithm: remove every candidate unit, re-run the root algorithm once
      (``PostFilterRequest.reschedule``), fix its proposed assignments, reprieve;
  (b) victim-aware: the shortest prefix of the candidates ordered least important first whose
      removal lets the root algorithm succeed placing as many pods as (a) does (binary search,
      feasibility being monotone in the removed set), then the same fix-and-reprieve on it.
  Reprieve: PDB-violating units first, then the others, each most important first; a unit is
  put back and kept only if every proposed assignment still passes Filter (node resources,
  including nominated pods of priority >= the preemptor's, and the quota PreFilter); otherwise it
  is removed again and becomes a victim. If (a)'s simulation fails nothing is evicted and the
  simulation's status is returned. A topology-constrained group is placed by the simulation in
  one domain, and the reprieve puts back every unit outside it, so victims stay in that domain.
  Messages carry the prefix ``pod group preemption: ``; success reads ``found a placement for
  podgroup, preempting %d victims`` (%d counts victim pods).

Classic DefaultPreemption (plain pods)
  Candidate nodes are those passing the node-static filters (the others are "not helpful").
  Per node: remove every lower-priority unit that has a pod there (an All unit is removed with
  its pods on other nodes too), check the pod fits, reprieve (violating first, then others, most
  important first) keeping a unit when the pod still fits. Nodes are visited in snapshot order
  until ``max(100, 10% of nodes)`` candidates are found (upstream's dry-run bound). When the
  pod failed the quota PreFilter rather than node filters, the group simulation is used instead.
  Messages: ``preemption: 0/N nodes are available: ...`` on failure.

Choosing among feasible choices (all algorithms)
  0. (groups) more preemptor pods placed; then
  1. fewer PDB-violating victim units; 2. lower highest victim priority; 3. smaller sum of the
  victims' priorities (per pod); 4. fewer victim pods; then the first choice found ((a) before
  (b); for plain pods the lowest node index).

Elastic quota preemption (spec/quota.md rules 1–7)
  The pending pods of the attempt form one preemption list (rule 1; the group's priority is the
  preemptor priority). Request = their summed requests; ``used`` is the quota usage in the
  snapshot. If the leaf quota has ``used + request <= min`` (taking back its guarantee), eligible
  victims are units of *other* quotas that use more than their ``min``, any priority (rule 4,
  rule ``ElasticQuota:borrowed``); otherwise units of the preemptor's own quota with strictly
  lower priority (rule 5, rule ``ElasticQuota:own-quota``). Units whose eviction alone would
  violate a PDB are not eligible (rule 3), nor units without a pod on a candidate node (a node
  passing the static filters for at least one pending pod, rule 2). The simulation and reprieve
  are those of workload-aware preemption with the quota PreFilter included (rule 7). Messages
  carry the prefix ``elastic quota preemption: ``.

Each victim becomes a ``PodPreempted`` decision naming the preemptor, the rule, the unit, its
disruption mode, the PDB outcome, both priorities, the upstream event text and the
``DisruptionTarget`` condition message; when the preemptor is in a quota, ``quota`` records that
quota's name, used, min, max and the request at that moment (and the victim's quota).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler import quota as quota_mod
from scheduler.cycle import PostFilterRequest, PostFilterResult, PreFilterRequest
from scheduler.decisions import Decision, PodPreempted
from scheduler.framework import SUCCESS, Code, Status, fit_error_message
from scheduler.model import ALL, NEVER, PREEMPT_LOWER, SINGLE, Pod, PodDisruptionBudget, Requirement
from scheduler.quota import Quotas, Usage, requests_of
from scheduler.snapshot import R_PODS, Demand, make_demand
from scheduler.state import State

RULE_WAP = "WorkloadAwarePreemption"
RULE_DEFAULT = "DefaultPreemption"
RULE_EQ_BORROWED = "ElasticQuota:borrowed"
RULE_EQ_OWN = "ElasticQuota:own-quota"

PG_PREFIX = "pod group preemption: "
POD_PREFIX = "preemption: "
EQ_PREFIX = "elastic quota preemption: "

MSG_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_ONGOING = "ongoing preemption on nominated nodes"
MSG_NO_VICTIMS = "No preemption victims found for incoming preemptor"
MSG_FOUND = "found a placement for podgroup, preempting %d victims"
MSG_FOUND_EQ = "found a placement, preempting %d victims"
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_VICTIMS_POD = "No preemption victims found for incoming pod"
MSG_NOT_IN_QUOTA = "not eligible: %s is not in any elastic quota"
MSG_CONDITION = "%s: preempting to accommodate a higher priority %s"

RANK_CPG, RANK_PG, RANK_POD = 3, 2, 1
MIN_CANDIDATES_ABSOLUTE = 100
MIN_CANDIDATES_PERCENT = 10

ALGO_NONE, ALGO_DEFAULT, ALGO_EQ, ALGO_AUTO = "None", "Default", "ElasticQuota", "Auto"


# ============================================================================ units
@dataclass(frozen=True, slots=True)
class Unit:
    key: str  # "Pod:ns/name" | "PodGroup:ns/name" | "CompositePodGroup:ns/name"
    mode: str  # Single | All
    priority: int
    rank: int
    pods: tuple[str, ...]  # scheduled pods, sorted
    start: float
    uid: str

    def importance(self) -> tuple[int, int, int, float, str, str]:
        """Sort key, most important first (see module docstring)."""
        return (-self.priority, -self.rank, -len(self.pods), self.start, self.uid, self.key)


def _start(p: Pod) -> float:
    return p.start_time if p.start_time is not None else p.created_at


class Units:
    """Victim units of scheduled pods, built lazily and cached for one preemption."""

    def __init__(self, state: State) -> None:
        self.state = state
        self._members = state.workloads_on  # State.is_member without the gate lookup per pod
        self._by_pod: dict[str, Unit | None] = {}
        self._anc: dict[str, tuple[int, str, str] | None] = {}  # pg key -> (prio, all kind, all key)
        self._groups: dict[str, Unit] = {}

    def _bound(self, key: str) -> Pod | None:
        p = self.state.pods.get(key)
        if p is None or p.node_name is None or not self.state.snap.has_pod(key):
            return None
        return p

    def _ancestry(self, gk: str) -> tuple[int, str, str] | None:
        """(priority of the highest existing group, kind and key of the highest All ancestor
        or ("", "")); None when the PodGroup itself is unknown."""
        if gk in self._anc:
            return self._anc[gk]
        st = self.state
        pg = st.pod_groups.get(gk)
        res: tuple[int, str, str] | None = None
        if pg is not None:
            prio = pg.priority
            kind, akey = ("PodGroup", pg.key) if pg.disruption_mode == ALL else ("", "")
            for k in st.chain(pg).path[1:]:
                c = st.composites.get(k)
                if c is None:
                    continue
                prio = c.priority
                if c.disruption_mode == ALL:
                    kind, akey = "CompositePodGroup", c.key
            res = (prio, kind, akey)
        self._anc[gk] = res
        return res

    def _subtree_pods(self, kind: str, key: str) -> list[str]:
        st = self.state
        leaves: list[str] = []
        if kind == "PodGroup":
            leaves = [key]
        else:
            seen: set[str] = set()
            stack = [key]
            while stack:
                c = stack.pop()
                if c in seen:
                    continue
                seen.add(c)
                for ck, child in st.children(c):
                    if ck == "pg":
                        leaves.append(child)
                    else:
                        stack.append(child)
        out: list[str] = []
        for lk in leaves:
            for pk in st.snap.group_pods.get(lk, {}):
                if self._bound(pk) is not None:
                    out.append(pk)
        return sorted(out)

    def of(self, key: str) -> Unit | None:
        if key in self._by_pod:
            return self._by_pod[key]
        p = self._bound(key)
        u: Unit | None = None
        if p is not None:
            st = self.state
            anc = self._ancestry(f"{p.namespace}/{p.pod_group}") if self._members and p.pod_group else None
            if anc is None:
                rank = RANK_POD
                u = Unit(f"Pod:{key}", SINGLE, p.priority, rank, (key,), _start(p), p.uid or key)
            elif not anc[1]:
                u = Unit(f"Pod:{key}", SINGLE, anc[0], RANK_PG, (key,), _start(p), p.uid or key)
            else:
                ukey = f"{anc[1]}:{anc[2]}"
                u = self._groups.get(ukey)
                if u is None:
                    pods = self._subtree_pods(anc[1], anc[2])
                    if key not in pods:
                        pods = sorted([*pods, key])
                    obj = st.pod_groups.get(anc[2]) if anc[1] == "PodGroup" else st.composites.get(anc[2])
                    uid = (obj.uid if obj is not None else "") or anc[2]
                    rank = RANK_CPG if anc[1] == "CompositePodGroup" else RANK_PG
                    start = min(_start(st.pods[k]) for k in pods)
                    u = Unit(ukey, ALL, anc[0], rank, tuple(pods), start, uid)
                    self._groups[ukey] = u
                    for k in pods:
                        self._by_pod[k] = u
        self._by_pod[key] = u
        return u

    def all_lower(self, priority: int) -> list[Unit]:
        """Every unit with priority < ``priority``, most important first."""
        seen: dict[str, Unit] = {}
        st = self.state
        for k, p in st.pods.items():
            if p.node_name is None:
                continue
            u = self.of(k)
            if u is not None and u.priority < priority and u.key not in seen:
                seen[u.key] = u
        return sorted(seen.values(), key=Unit.importance)


# ============================================================================ PDBs
def _req_match(r: Requirement, labels: Mapping[str, str]) -> bool:
    v = labels.get(r.key)
    if r.operator == "In":
        return v is not None and v in r.values
    if r.operator == "NotIn":
        return v is None or v not in r.values
    if r.operator == "Exists":
        return v is not None
    if r.operator == "DoesNotExist":
        return v is None
    return False


def pdb_matches(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    if pod.namespace != pdb.namespace:
        return False
    if any(pod.labels.get(k) != v for k, v in pdb.match_labels.items()):
        return False
    return all(_req_match(r, pod.labels) for r in pdb.match_expressions)


def _scaled(v: int | str, expected: int) -> int:
    if isinstance(v, str) and v.endswith("%"):
        return math.ceil(int(v[:-1]) * expected / 100)
    return int(v)


class Budgets:
    """Allowed disruptions of every PDB, from the current state."""

    def __init__(self, state: State) -> None:
        self.pdbs: list[tuple[PodDisruptionBudget, int]] = []
        for key in sorted(state.pdbs):
            pdb = state.pdbs[key]
            healthy = expected = 0
            for p in state.pods.values():
                if pdb_matches(pdb, p):
                    expected += 1
                    if p.node_name is not None:
                        healthy += 1
            if pdb.min_available is not None:
                allowed = healthy - _scaled(pdb.min_available, expected)
            elif pdb.max_unavailable is not None:
                allowed = _scaled(pdb.max_unavailable, expected) - (expected - healthy)
            else:
                allowed = healthy
            self.pdbs.append((pdb, max(0, allowed)))

    def _hits(self, state: State, unit: Unit) -> list[int]:
        out = [0] * len(self.pdbs)
        for k in unit.pods:
            p = state.pods.get(k)
            if p is None:
                continue
            for i, (pdb, _) in enumerate(self.pdbs):
                if pdb_matches(pdb, p):
                    out[i] += 1
        return out

    def violating(self, state: State, units: Sequence[Unit]) -> set[str]:
        """Units (processed in the given order against shared budgets) that violate a PDB."""
        if not self.pdbs:
            return set()
        left = [a for _, a in self.pdbs]
        out: set[str] = set()
        for u in units:
            hits = self._hits(state, u)
            bad = False
            for i, h in enumerate(hits):
                if h:
                    left[i] -= h
                    if left[i] < 0:
                        bad = True
            if bad:
                out.add(u.key)
        return out

    def violates_alone(self, state: State, unit: Unit) -> bool:
        return any(h > a for h, (_, a) in zip(self._hits(state, unit), self.pdbs, strict=True))


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


@dataclass(slots=True)
class Preemption:
    """The PostFilter plugin (see module docstring)."""

    state: State
    quotas: Quotas
    terminating: set[str] = field(default_factory=set)  # pods being deleted because of preemption
    # classic dry-run cache (see ``_classic``)
    _epoch: int = -1
    _log_pos: int = 0
    _versions: dict[int, int] = field(default_factory=dict)
    _node_cache: dict[int, tuple[object, NodeResult]] = field(default_factory=dict)

    # ------------------------------------------------------------ entry points
    def pre_filter(self, req: PreFilterRequest) -> Status | None:
        """The elastic quota PreFilter (``quota`` module docstring); None when no quota applies."""
        if not self.quotas.active or not req.pods:
            return None
        ns = req.pods[0].namespace
        if self.quotas.leaf_for(ns) is None:
            return None
        usage = self.quotas.usage(self.state.pods, self._occupying())
        return quota_mod.pre_filter_status(usage.check(ns, requests_of(req.pods)))

    def _reschedule(self, req: PostFilterRequest) -> tuple[Status, dict[str, str]]:
        """``req.reschedule`` preceded by the quota PreFilter on the (modified) snapshot."""
        pre = self.pre_filter(PreFilterRequest(req.kind, req.key, req.pods, req.now, req.state))
        if pre is not None and not pre.ok:
            return pre, {}
        return req.reschedule()

    def post_filter(self, req: PostFilterRequest) -> PostFilterResult | None:
        algo = self.state.config.preemption_algorithm or ALGO_AUTO
        if algo == ALGO_NONE or not req.pods:
            return None
        ns = req.pods[0].namespace
        in_quota = self.quotas.leaf_for(ns) is not None
        if algo == ALGO_EQ or (algo == ALGO_AUTO and in_quota):
            return self._elastic(req)
        if req.kind == "pod":
            return self._pod_default(req)
        return self._group_default(req)

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
        usage = qs.usage(self.state.pods, self._occupying())
        return QuotaCtx(usage, ns, requests_of(req.pods), leaf)

    def _occupying(self) -> list[str]:
        out: list[str] = []
        for keys in self.state.snap.node_pods.values():
            out.extend(keys)
        return out

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
                event = f"Preempted by pod {uid} on node {target}"
            else:
                event = f"Preempted by {req.kind} {uid} on node cluster"
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
        rows = [*snap.resource_rows(pi.demand), R_PODS]
        need = [*pi.demand.amounts, 1]
        nrows = len(rows)
        reserved = self._reserved(req)
        units = Units(st)
        want = min(n, max(MIN_CANDIDATES_ABSOLUTE, n * MIN_CANDIDATES_PERCENT // 100))
        found: list[tuple[tuple[int, ...], int, NodeResult]] = []
        not_helpful = no_victims = 0
        res_names = [snap.res_names[r] for r in rows[:-1]]
        versions = self._node_versions()
        cache = self._node_cache if budgets is None else None
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

        for i in range(n):
            if not static_ok[i]:
                not_helpful += 1
                continue
            name = snap.names[i]
            res_here = reserved.get(name, ())
            key = (question, versions.get(i, 0), tuple((d.names, d.amounts) for d in res_here))
            hit = cache.get(i) if cache is not None else None
            if hit is not None and hit[0] == key:
                victims_c = hit[1]
            else:
                victims_c = self._eval_node(req, i, name, res_here, units, rows, need, on_node, budgets)
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
        for k, p in st.pods.items():
            if p.node_name is None:
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
