"""Gang-aware per-node verdicts (issue 21, ``explain --nodes``): the gang's pending pods are
placed one after another, each against the usage of the bound pods plus the gang pods accepted
before it, so a node that has room for one pod of the gang but not for the next says so.

Each pod is checked against every node and goes to the first one (snapshot order) whose filters
accept it; a node that rejects it records the first rejecting plugin and its reasons. Per node the result is how many of the
gang's pods it accepted and which it rejected and why; a node is ``fits`` only when it
rejected none of them. The ``summary`` is upstream's fit error (``0/N nodes are available:
...``) for the first pod that no node accepted, or says that every pod fitted node by node
(then the group failed on something else: topology, quota, quorum). Node order in the result:
saturated nodes (accepted some pods, rejected others), then nodes that accepted every pod they
were offered, then excluded nodes (rejected every pod), each in snapshot order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.framework import fit_error_message
from scheduler.model import Node, Pod
from scheduler.reference import filter_node_all, inter_pod_filter, ref_nodes, spread_filter
from scheduler.snapshot import make_demand


@dataclass(slots=True)
class GangNodeVerdict:
    node: str
    accepted: list[str] = field(default_factory=list)
    rejected: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # pod -> (plugin, reasons)

    @property
    def fits(self) -> bool:
        return not self.rejected

    @property
    def category(self) -> str:
        if self.rejected and self.accepted:
            return "saturated"
        if self.rejected:
            return "excluded"
        return "fits"

    def as_dict(self) -> dict[str, object]:
        reasons: dict[str, int] = {}
        for plugin, rs in self.rejected.values():
            for r in rs:
                key = f"{plugin}: {r}"
                reasons[key] = reasons.get(key, 0) + 1
        return {
            "node": self.node,
            "fits": self.fits,
            "category": self.category,
            "accepted": len(self.accepted),
            "rejected": len(self.rejected),
            "acceptedPods": list(self.accepted),
            "reasons": [[k, n] for k, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
        }


def gang_node_verdicts(
    nodes: Sequence[Node], pods: Sequence[Pod], pod_keys: Sequence[str]
) -> tuple[str, list[GangNodeVerdict]]:
    """(summary, per-node verdicts) for the pods of ``pod_keys`` (in that order) found in ``pods``."""
    refs = ref_nodes(nodes)
    by_name = {r.node.name: r for r in refs}
    by_key = {p.key: p for p in pods}
    placed: list[tuple[Pod, str]] = []
    for p in pods:
        if p.node_name and p.node_name in by_name:
            by_name[p.node_name].add(make_demand(p.requests))
            placed.append((p, p.node_name))
    out = {r.node.name: GangNodeVerdict(r.node.name) for r in refs}
    summary = ""
    for key in pod_keys:
        pod = by_key.get(key)
        if pod is None or (pod.node_name and pod.node_name in by_name):
            continue
        demand = make_demand(pod.requests)
        spread = spread_filter(pod, refs, placed) if pod.spread_constraints else [None] * len(refs)
        inter = inter_pod_filter(pod, refs, placed)
        counts: dict[str, int] = {}
        chosen = None
        for j, rn in enumerate(refs):
            res = filter_node_all(pod, demand, rn, placed, spread[j], inter[j])
            if res is None:
                chosen = chosen or rn
                continue
            out[rn.node.name].rejected[key] = (res[0], tuple(res[1]))
            for r in res[1]:
                counts[r] = counts.get(r, 0) + 1
        if chosen is None:
            if not summary:
                summary = fit_error_message(len(refs), counts) + f" (pod {key})"
            continue
        chosen.add(demand)
        placed.append((pod, chosen.node.name))
        out[chosen.node.name].accepted.append(key)
    if not summary:
        summary = (
            f"every pending pod fits a node of {len(refs)} node by node; "
            "the group was held back by its topology, quota or quorum (see the reason codes)"
        )
    rank = {"saturated": 0, "fits": 1, "excluded": 2}
    ordered = sorted(out.values(), key=lambda v: rank[v.category])  # stable: snapshot order within
    return summary, ordered
