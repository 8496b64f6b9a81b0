"""Pure-Python, node-by-node implementation of the default filters and scores.

It is the benchmark baseline for the vectorized plugins and is cross-checked against them in
tests: same per-node verdicts, same reasons, same fit-error string, same selected node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler import messages as m
from scheduler.framework import fit_error_message
from scheduler.model import PODS, Node, Pod, PodAffinityTerm, SchedulerConfig, TopologySpreadConstraint
from scheduler.plugins import (
    balanced_allocation,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    pod_index,
    pod_topology_spread,
    taint_toleration,
)
from scheduler.snapshot import DEFAULT_MAX_PODS, Demand, make_demand


@dataclass(slots=True)
class RefNode:
    node: Node
    requested: dict[str, int] = field(default_factory=dict)
    pod_count: int = 0
    nz_cpu: int = 0
    nz_mem: int = 0

    @property
    def max_pods(self) -> int:
        return int(self.node.allocatable.get(PODS, DEFAULT_MAX_PODS))

    def add(self, d: Demand) -> None:
        for k, v in zip(d.names, d.amounts, strict=True):
            self.requested[k] = self.requested.get(k, 0) + v
        self.pod_count += 1
        self.nz_cpu += d.nz_cpu
        self.nz_mem += d.nz_mem


def filter_node(pod: Pod, d: Demand, rn: RefNode) -> tuple[str, list[str]] | None:
    """(plugin, reasons) of the first filter plugin that rejects the node, None if it fits."""
    nd = rn.node
    r = node_unschedulable.filter_node(pod.tolerations, nd.unschedulable)
    if r:
        return node_unschedulable.NAME, r
    r = node_name.filter_node(pod.spec_node_name, nd.name)
    if r:
        return node_name.NAME, r
    r = taint_toleration.filter_node(pod.tolerations, nd.taints)
    if r:
        return taint_toleration.NAME, r
    if not node_affinity.node_matches(nd.labels, pod.node_selector, pod.required_terms):
        return node_affinity.NAME, [m.ERR_NODE_AFFINITY]
    r = node_resources_fit.filter_node(d, nd.allocatable, rn.requested, rn.pod_count, rn.max_pods)
    if r:
        return node_resources_fit.NAME, r
    return None


def fit_error(pod: Pod, nodes: Sequence[RefNode]) -> str:
    d = make_demand(pod.requests)
    counts: dict[str, int] = {}
    for rn in nodes:
        res = filter_node(pod, d, rn)
        if res is not None:
            for reason in res[1]:
                counts[reason] = counts.get(reason, 0) + 1
    return fit_error_message(len(nodes), counts)


def _normalize(raw: list[int], reverse: bool) -> list[int]:
    m = max(raw) if raw else 0
    if m == 0:
        return [100] * len(raw) if reverse else raw
    out = [s * 100 // m for s in raw]
    return [100 - s for s in out] if reverse else out


def schedule(pod: Pod, nodes: Sequence[RefNode], config: SchedulerConfig) -> int:
    """Index of the selected node (lowest index among the best scores), -1 if none fits."""
    d = make_demand(pod.requests)
    feasible = [i for i, rn in enumerate(nodes) if filter_node(pod, d, rn) is None]
    if not feasible:
        return -1
    if pod.nominated_node is not None:
        for i in feasible:
            if nodes[i].node.name == pod.nominated_node:
                return i
    if len(feasible) == 1:
        return feasible[0]
    w: Mapping[str, int] = config.plugin_weights
    dn = d.as_dict()
    sw = sorted(config.resource_weights.items())
    fit = [
        node_resources_fit.score_node_reference(
            d,
            nodes[i].node.allocatable,
            nodes[i].requested,
            nodes[i].nz_cpu,
            nodes[i].nz_mem,
            config.scoring_strategy,
            config.resource_weights,
            dn,
            sw,
        )
        for i in feasible
    ]
    total = [s * int(w.get(node_resources_fit.NAME, 1)) for s in fit]
    taint_raw = [
        taint_toleration.count_intolerable_prefer(nodes[i].node.taints, pod.tolerations) for i in feasible
    ]
    if min(taint_raw) != max(taint_raw):
        wt = int(w.get(taint_toleration.NAME, 3))
        total = [t + s * wt for t, s in zip(total, _normalize(taint_raw, True), strict=True)]
    aff_raw = [
        sum(p.weight for p in pod.preferred_terms if p.term.matches(nodes[i].node.labels)) for i in feasible
    ]
    if pod.preferred_terms and min(aff_raw) != max(aff_raw):
        wa = int(w.get(node_affinity.NAME, 2))
        total = [t + s * wa for t, s in zip(total, _normalize(aff_raw, False), strict=True)]
    wb = int(w.get(balanced_allocation.NAME, balanced_allocation.BalancedAllocation.default_weight))
    if wb and not balanced_allocation.skip(pod):
        total = [t + s * wb for t, s in zip(total, balanced_scores(pod, nodes, feasible), strict=True)]
    best = max(range(len(feasible)), key=lambda k: (total[k], -k))
    return feasible[best]


def ref_nodes(nodes: Sequence[Node]) -> list[RefNode]:
    """RefNodes in snapshot order ((seq, name))."""
    return [RefNode(n) for n in sorted(nodes, key=lambda n: (n.seq, n.name))]


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """One node's verdict for one pod: ``plugin`` is the first filter plugin (default order)
    that rejects the node, with its reasons; ``fits`` when none does."""

    pod: str
    node: str
    fits: bool
    plugin: str = ""
    reasons: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "pod": self.pod,
            "node": self.node,
            "fits": self.fits,
            "plugin": self.plugin,
            "reasons": list(self.reasons),
        }


def node_verdicts(nodes: Sequence[Node], pods: Sequence[Pod], pod_keys: Sequence[str]) -> list[NodeVerdict]:
    """Per node (``nodes`` in snapshot order) the verdict for each pod of ``pod_keys`` found in
    ``pods``, against the bound pods' usage (nominations are not reserved)."""
    refs = {r.node.name: r for r in ref_nodes(nodes)}
    by_key = {p.key: p for p in pods}
    placed: list[tuple[Pod, str]] = []
    for p in pods:
        if p.node_name and p.node_name in refs:
            refs[p.node_name].add(make_demand(p.requests))
            placed.append((p, p.node_name))
    ordered = list(refs.values())
    out: list[NodeVerdict] = []
    for key in pod_keys:
        pod = by_key.get(key)
        if pod is None:
            continue
        demand = make_demand(pod.requests)
        spread = spread_filter(pod, ordered, placed) if pod.spread_constraints else [None] * len(ordered)
        inter = inter_pod_filter(pod, ordered, placed)
        for j, rn in enumerate(ordered):
            res = filter_node_all(pod, demand, rn, placed, spread[j], inter[j])
            if res is None:
                out.append(NodeVerdict(key, rn.node.name, True))
            else:
                out.append(NodeVerdict(key, rn.node.name, False, res[0], tuple(res[1])))
    return out


def filter_node_all(
    pod: Pod,
    d: Demand,
    rn: RefNode,
    placed: Placed,
    spread: tuple[str, bool] | None,
    inter: tuple[str, bool] | None,
) -> tuple[str, list[str]] | None:
    """``filter_node`` with the pod-aware filters in upstream's order: NodePorts before
    NodeResourcesFit, PodTopologySpread and InterPodAffinity after it (``spread``/``inter``:
    this node's verdicts from ``spread_filter``/``inter_pod_filter``)."""
    res = filter_node(pod, d, rn)
    if res is not None and res[0] != node_resources_fit.NAME:
        return res
    if pod.host_ports:
        r = node_ports_reasons(pod, rn.node.name, placed)
        if r:
            return node_ports.NAME, r
    if res is not None:
        return res
    if spread is not None:
        return pod_topology_spread.NAME, [spread[0]]
    if inter is not None:
        return inter_pod_affinity.NAME, [inter[0]]
    return None


# ------------------------------------------------------------------ pod-aware plugins
# Node-by-node, map-based versions of NodePorts, PodTopologySpread, InterPodAffinity and
# NodeResourcesBalancedAllocation over an explicit list of scheduled pods ``(pod, node name)``:
# the baseline the vectorized plugins are cross-checked against.

Placed = Sequence[tuple[Pod, str]]


def _nodes_by_name(nodes: Sequence[RefNode]) -> dict[str, Node]:
    return {rn.node.name: rn.node for rn in nodes}


def node_ports_reasons(pod: Pod, node: str, placed: Placed) -> list[str]:
    used = [hp for p, nm in placed if nm == node for hp in p.host_ports]
    return node_ports.filter_node(pod, used)


def _spread_eligible(pod: Pod, nd: Node, c: TopologySpreadConstraint) -> bool:
    if c.node_affinity_policy != "Ignore" and not node_affinity.node_matches(
        nd.labels, pod.node_selector, pod.required_terms
    ):
        return False
    return not (c.node_taints_policy == "Honor" and taint_toleration.filter_node(pod.tolerations, nd.taints))


def _count_on(pod: Pod, c: TopologySpreadConstraint, node: str, placed: Placed) -> int:
    return sum(
        1
        for p, nm in placed
        if nm == node and p.namespace == pod.namespace and pod_index.selector_matches(c.selector, p.labels)
    )


def spread_filter(pod: Pod, nodes: Sequence[RefNode], placed: Placed) -> list[tuple[str, bool] | None]:
    """Per node: (reason, unresolvable) of PodTopologySpread's Filter, None when it passes."""
    cons = [c for c in pod.spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
    pair_count: dict[tuple[str, str], int] = {}
    for rn in nodes:
        nd = rn.node
        if not all(c.topology_key in nd.labels for c in cons):
            continue
        for c in cons:
            if not _spread_eligible(pod, nd, c):
                continue
            tp = (c.topology_key, nd.labels[c.topology_key])
            pair_count[tp] = pair_count.get(tp, 0) + _count_on(pod, c, nd.name, placed)
    out: list[tuple[str, bool] | None] = []
    for rn in nodes:
        verdict: tuple[str, bool] | None = None
        for c in cons:
            v = rn.node.labels.get(c.topology_key)
            if v is None:
                verdict = (m.ERR_SPREAD_LABEL, True)
                break
            doms = [n for (k, _), n in pair_count.items() if k == c.topology_key]
            min_match = min(doms) if doms else 0
            if c.min_domains is not None and len(doms) < c.min_domains:
                min_match = 0
            self_match = 1 if pod_index.selector_matches(c.selector, pod.labels) else 0
            if pair_count.get((c.topology_key, v), 0) + self_match - min_match > c.max_skew:
                verdict = (m.ERR_SPREAD_CONSTRAINTS, False)
                break
        out.append(verdict)
    return out


def inter_pod_filter(pod: Pod, nodes: Sequence[RefNode], placed: Placed) -> list[tuple[str, bool] | None]:
    """Per node: (reason, unresolvable) of InterPodAffinity's Filter, None when it passes."""
    by_name = _nodes_by_name(nodes)
    aff: dict[tuple[str, str], int] = {}
    anti: dict[tuple[str, str], int] = {}
    existing: dict[tuple[str, str], int] = {}
    for p, nm in placed:
        nd = by_name.get(nm)
        if nd is None:
            continue
        terms = pod.affinity_required
        if terms and all(pod_index.term_matches(t, pod.namespace, p) for t in terms):
            for t in terms:
                if t.topology_key in nd.labels:
                    tp = (t.topology_key, nd.labels[t.topology_key])
                    aff[tp] = aff.get(tp, 0) + 1
        for t in pod.anti_affinity_required:
            if pod_index.term_matches(t, pod.namespace, p) and t.topology_key in nd.labels:
                tp = (t.topology_key, nd.labels[t.topology_key])
                anti[tp] = anti.get(tp, 0) + 1
        for t in p.anti_affinity_required:
            if pod_index.term_matches(t, p.namespace, pod) and t.topology_key in nd.labels:
                tp = (t.topology_key, nd.labels[t.topology_key])
                existing[tp] = existing.get(tp, 0) + 1
    out: list[tuple[str, bool] | None] = []
    for rn in nodes:
        labels = rn.node.labels
        ok = True
        exist = True
        for t in pod.affinity_required:
            v = labels.get(t.topology_key)
            if v is None:
                ok = False
                break
            if aff.get((t.topology_key, v), 0) <= 0:
                exist = False
        if ok and not exist:
            ok = not aff and all(pod_index.term_matches(t, pod.namespace, pod) for t in pod.affinity_required)
        if not ok:
            out.append((m.ERR_POD_AFFINITY, True))
            continue
        if any(
            t.topology_key in labels and anti.get((t.topology_key, labels[t.topology_key]), 0) > 0
            for t in pod.anti_affinity_required
        ):
            out.append((m.ERR_POD_ANTI_AFFINITY, False))
            continue
        if any(existing.get((k, v), 0) > 0 for k, v in labels.items()):
            out.append((m.ERR_EXISTING_ANTI_AFFINITY, False))
            continue
        out.append(None)
    return out


def inter_pod_scores(
    pod: Pod, nodes: Sequence[RefNode], placed: Placed, feasible: Sequence[int]
) -> list[int]:
    """Normalized InterPodAffinity scores of the ``feasible`` node indices."""
    by_name = _nodes_by_name(nodes)
    pairs: dict[tuple[str, str], int] = {}

    def add(t: PodAffinityTerm, nm: str, w: int) -> None:
        nd = by_name.get(nm)
        if nd is not None and t.topology_key in nd.labels:
            tp = (t.topology_key, nd.labels[t.topology_key])
            pairs[tp] = pairs.get(tp, 0) + w

    for p, nm in placed:
        for wt in pod.affinity_preferred:
            if pod_index.term_matches(wt.term, pod.namespace, p):
                add(wt.term, nm, wt.weight)
        for wt in pod.anti_affinity_preferred:
            if pod_index.term_matches(wt.term, pod.namespace, p):
                add(wt.term, nm, -wt.weight)
        for t in p.affinity_required:
            if pod_index.term_matches(t, p.namespace, pod):
                add(t, nm, inter_pod_affinity.HARD_POD_AFFINITY_WEIGHT)
        for wt in p.affinity_preferred:
            if pod_index.term_matches(wt.term, p.namespace, pod):
                add(wt.term, nm, wt.weight)
        for wt in p.anti_affinity_preferred:
            if pod_index.term_matches(wt.term, p.namespace, pod):
                add(wt.term, nm, -wt.weight)
    raw = [sum(w for (k, v), w in pairs.items() if nodes[i].node.labels.get(k) == v) for i in feasible]
    if not raw:
        return []
    lo, hi = min(raw), max(raw)
    if hi - lo <= 0:
        return [0] * len(raw)
    return [int(100.0 * ((s - lo) / float(hi - lo))) for s in raw]


def spread_scores(pod: Pod, nodes: Sequence[RefNode], placed: Placed, feasible: Sequence[int]) -> list[int]:
    """Normalized PodTopologySpread scores of the ``feasible`` node indices."""
    cons = [c for c in pod.spread_constraints if c.when_unsatisfiable == "ScheduleAnyway"]
    ignored = {i for i in feasible if not all(c.topology_key in nodes[i].node.labels for c in cons)}
    kept = [i for i in feasible if i not in ignored]
    weights = []
    counts: list[dict[str, int]] = []
    for c in cons:
        vals = {nodes[i].node.labels[c.topology_key] for i in kept}
        size = len(kept) if c.topology_key == pod_topology_spread.HOSTNAME else len(vals)
        weights.append(math.log(float(size + 2)))
        per: dict[str, int] = dict.fromkeys(vals, 0)
        for rn in nodes:
            nd = rn.node
            if not all(x.topology_key in nd.labels for x in cons) or not _spread_eligible(pod, nd, c):
                continue
            v = nd.labels[c.topology_key]
            if v in per:
                per[v] += _count_on(pod, c, nd.name, placed)
        counts.append(per)
    raw = []
    for i in feasible:
        if i in ignored:
            raw.append(0)
            continue
        score = 0.0
        for k, c in enumerate(cons):
            val = nodes[i].node.labels.get(c.topology_key)
            if val is None:
                continue
            if c.topology_key == pod_topology_spread.HOSTNAME:
                cnt = _count_on(pod, c, nodes[i].node.name, placed)
            else:
                cnt = counts[k][val]
            score += float(cnt) * weights[k] + float(c.max_skew - 1)
        raw.append(math.floor(score + 0.5))
    live = [s for i, s in zip(feasible, raw, strict=True) if i not in ignored]
    lo = min(live) if live else 0
    hi = max(live) if live else 0
    out = []
    for i, s in zip(feasible, raw, strict=True):
        if i in ignored:
            out.append(0)
        elif hi == 0:
            out.append(100)
        else:
            out.append(100 * (hi + lo - s) // hi)
    return out


def balanced_scores(pod: Pod, nodes: Sequence[RefNode], feasible: Sequence[int]) -> list[int]:
    return [
        balanced_allocation.score_node(pod, nodes[i].node.allocatable, nodes[i].requested) for i in feasible
    ]
