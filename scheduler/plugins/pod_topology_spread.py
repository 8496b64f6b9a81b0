"""PodTopologySpread: ``topologySpreadConstraints`` (filter for DoNotSchedule, score for
ScheduleAnyway). System default constraints are off (podledger has no Service/ReplicaSet
selectors to derive them from).

Filter (kube-scheduler), per node and constraint in order, the first that fails:
``node(s) didn't match pod topology spread constraints (missing required label)``
(UnschedulableAndUnresolvable) when the node lacks the topology key;
``node(s) didn't match pod topology spread constraints`` (Unschedulable) when
``matching pods in the node's domain + (1 if the pod matches its own selector) - global minimum
> maxSkew``. Counted: scheduled (assigned + assumed) pods of the pod's namespace matching the
selector, on nodes that carry every constraint's key and pass the inclusion policies
(``nodeAffinityPolicy`` Honor: the pod's nodeSelector/required node affinity;
``nodeTaintsPolicy`` Honor: the node's NoSchedule/NoExecute taints tolerated). The global
minimum is over those nodes' domains, 0 when there are fewer than ``minDomains`` of them.

Score: nodes missing a key are ignored (score 0); per constraint ``count * log(size + 2) +
maxSkew - 1`` with ``size`` the number of domains among the feasible nodes (for
``kubernetes.io/hostname``: the feasible nodes) and ``count`` the matching pods of the node's
domain (hostname: of the node itself); the sum is rounded; normalized
``100 * (max + min - s) // max`` (100 everywhere when max is 0). Default weight 2.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework import Code, FilterResult
from scheduler.messages import ERR_SPREAD_CONSTRAINTS as ERR_CONSTRAINTS
from scheduler.messages import ERR_SPREAD_LABEL as ERR_MISSING_LABEL
from scheduler.model import Pod, SchedulerConfig, TopologySpreadConstraint
from scheduler.plugins import node_affinity, taint_toleration
from scheduler.plugins.pod_index import index_of, selector_matches
from scheduler.snapshot import Snapshot

NAME = "PodTopologySpread"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HOSTNAME = "kubernetes.io/hostname"
MAX_NODE_SCORE = 100

BOOL = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]


def constraints(pod: Pod, when: str) -> tuple[TopologySpreadConstraint, ...]:
    return tuple(c for c in pod.spread_constraints if c.when_unsatisfiable == when)


def has_keys(snap: Snapshot, cons: tuple[TopologySpreadConstraint, ...]) -> BOOL:
    out: BOOL = np.ones(snap.n, dtype=np.bool_)
    for c in cons:
        out &= snap.label(c.topology_key).ids >= 0
    return out


def inclusion(pod: Pod, snap: Snapshot, c: TopologySpreadConstraint) -> BOOL:
    out: BOOL = np.ones(snap.n, dtype=np.bool_)
    if c.node_affinity_policy != "Ignore":
        out &= node_affinity.selector_mask(snap, pod.node_selector, pod.required_terms)
    if c.node_taints_policy == "Honor":
        out &= taint_toleration.filter_nodes(pod.tolerations, snap).ok
    return out


def pod_counts(pod: Pod, snap: Snapshot, c: TopologySpreadConstraint) -> I64:
    """Per node: scheduled pods of the pod's namespace matching the constraint's selector."""
    return index_of(snap).counts(snap, c.selector, pod.namespace)


def filter_pod(pod: Pod, snap: Snapshot) -> FilterResult:
    n = snap.n
    cons = constraints(pod, DO_NOT_SCHEDULE)
    keys_ok = has_keys(snap, cons)
    missing: BOOL = np.zeros(n, dtype=np.bool_)
    skewed: BOOL = np.zeros(n, dtype=np.bool_)
    for c in cons:
        dom = snap.domains(c.topology_key)
        elig = keys_ok & inclusion(pod, snap, c)
        cnt = np.where(elig, pod_counts(pod, snap, c), 0)
        sums = dom.sums(cnt)
        present = np.zeros(len(dom.values), dtype=np.bool_)
        present[dom.ids[elig & (dom.ids >= 0)]] = True
        ndom = int(np.count_nonzero(present))
        min_match = int(sums[present].min()) if ndom else 0
        if c.min_domains is not None and ndom < c.min_domains:
            min_match = 0
        self_match = 1 if selector_matches(c.selector, pod.labels) else 0
        has = dom.ids >= 0
        match = np.where(has, sums[np.maximum(dom.ids, 0)] if len(sums) else 0, 0)
        undecided = ~(missing | skewed)
        missing |= undecided & ~has
        skewed |= undecided & has & (match + self_match - min_match > c.max_skew)
    reasons = [(r, m) for r, m in ((ERR_MISSING_LABEL, missing), (ERR_CONSTRAINTS, skewed)) if m.any()]
    return FilterResult(NAME, ~(missing | skewed), reasons, Code.UNSCHEDULABLE, unresolvable=missing)


def score_raw(pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp]) -> tuple[I64, BOOL]:
    """(rounded raw scores of ``idx``, ignored mask of ``idx``)."""
    cons = constraints(pod, SCHEDULE_ANYWAY)
    keys_ok = has_keys(snap, cons)
    ignored = ~keys_ok[idx]
    kept = idx[~ignored]
    total = np.zeros(len(idx), dtype=np.float64)
    for c in cons:
        dom = snap.domains(c.topology_key)
        counts = pod_counts(pod, snap, c)
        if c.topology_key == HOSTNAME:
            size = len(kept)
            cnt = counts[idx]
        else:
            vals = np.unique(dom.ids[kept])
            size = len(vals)
            elig = keys_ok & inclusion(pod, snap, c)
            sums = dom.sums(np.where(elig, counts, 0))
            in_feasible = np.zeros(len(dom.values), dtype=np.bool_)
            in_feasible[vals] = True
            ids = dom.ids[idx]
            cnt = np.where((ids >= 0) & in_feasible[np.maximum(ids, 0)], sums[np.maximum(ids, 0)], 0)
        w = float(np.log(float(size + 2)))
        has = dom.ids[idx] >= 0
        total += np.where(has, cnt.astype(np.float64) * w + float(c.max_skew - 1), 0.0)
    raw: I64 = np.floor(total + 0.5).astype(np.int64)
    return np.where(ignored, 0, raw), ignored


def normalize(raw: I64, ignored: BOOL) -> I64:
    live = raw[~ignored]
    if len(live) == 0:
        return np.zeros(len(raw), dtype=np.int64)
    lo, hi = int(live.min()), max(int(live.max()), 0)
    if hi == 0:
        out: I64 = np.where(ignored, 0, MAX_NODE_SCORE)
        return out
    out = np.where(ignored, 0, MAX_NODE_SCORE * (hi + lo - raw) // hi)
    return out


class PodTopologySpread:
    name = NAME
    before_fit = False
    default_weight = 2

    def active(self, pod: Pod, snap: Snapshot) -> bool:
        cs = pod.spread_constraints
        return bool(cs) and any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in cs)

    def filter_pod(self, pod: Pod, snap: Snapshot) -> FilterResult:
        return filter_pod(pod, snap)

    def score_active(self, pod: Pod, snap: Snapshot, config: SchedulerConfig) -> bool:
        cs = pod.spread_constraints
        return bool(cs) and any(c.when_unsatisfiable == SCHEDULE_ANYWAY for c in cs)

    def score_pod(
        self, pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp], config: SchedulerConfig
    ) -> I64 | None:
        raw, ignored = score_raw(pod, snap, idx)
        return normalize(raw, ignored)
