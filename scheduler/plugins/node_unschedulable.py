"""NodeUnschedulable: rejects ``spec.unschedulable`` nodes unless the pod tolerates
``node.kubernetes.io/unschedulable:NoSchedule``."""

from __future__ import annotations

from scheduler.framework import Code, FilterResult, FilterSignature
from scheduler.messages import ERR_NODE_UNSCHEDULABLE as ERR_REASON_UNSCHEDULABLE
from scheduler.model import Taint, Toleration
from scheduler.plugins.taint_toleration import tolerates
from scheduler.snapshot import Snapshot

NAME = "NodeUnschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")


def tolerates_unschedulable(tolerations: tuple[Toleration, ...]) -> bool:
    return any(tolerates(t, _TAINT) for t in tolerations)


def filter_nodes(tolerations: tuple[Toleration, ...], snap: Snapshot) -> FilterResult:
    snap.refresh()
    if tolerates_unschedulable(tolerations) or not snap.unschedulable.any():
        return FilterResult(NAME, snap.all_nodes, [], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    bad = snap.unschedulable
    return FilterResult(NAME, ~bad, [(ERR_REASON_UNSCHEDULABLE, bad)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def filter_node(tolerations: tuple[Toleration, ...], unschedulable: bool) -> list[str]:
    if unschedulable and not tolerates_unschedulable(tolerations):
        return [ERR_REASON_UNSCHEDULABLE]
    return []


class NodeUnschedulable:
    """Filter plugin."""

    name = NAME

    def filter(self, sig: FilterSignature, snap: Snapshot) -> FilterResult:
        return filter_nodes(sig.tolerations, snap)
