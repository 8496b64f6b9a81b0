"""Pure-Python, node-by-node implementation of the default filters and scores.

It is the benchmark baseline for the vectorized plugins and is cross-checked against them in
tests: same per-node verdicts, same reasons, same fit-error string, same selected node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.framework import fit_error_message
from scheduler.model import PODS, Node, Pod, SchedulerConfig
from scheduler.plugins import (
    node_affinity,
    node_name,
    node_resources_fit,
    node_unschedulable,
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
        return node_affinity.NAME, [node_affinity.ERR_REASON_POD]
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
        sum(p.weight for p in pod.preferred_terms if node_affinity.term_matches(nodes[i].node.labels, p.term))
        for i in feasible
    ]
    if pod.preferred_terms and min(aff_raw) != max(aff_raw):
        wa = int(w.get(node_affinity.NAME, 2))
        total = [t + s * wa for t, s in zip(total, _normalize(aff_raw, False), strict=True)]
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
    for p in pods:
        if p.node_name and p.node_name in refs:
            refs[p.node_name].add(make_demand(p.requests))
    out: list[NodeVerdict] = []
    for key in pod_keys:
        pod = by_key.get(key)
        if pod is None:
            continue
        demand = make_demand(pod.requests)
        for rn in refs.values():
            res = filter_node(pod, demand, rn)
            if res is None:
                out.append(NodeVerdict(key, rn.node.name, True))
            else:
                out.append(NodeVerdict(key, rn.node.name, False, res[0], tuple(res[1])))
    return out
