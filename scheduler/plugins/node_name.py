"""NodeName: a pod that requests a node by ``spec.nodeName`` fits only that node.

Filter message (kube-scheduler): ``node(s) didn't match the requested node name``,
UnschedulableAndUnresolvable. Pods without ``spec.nodeName`` pass every node. (A manifest with
``spec.nodeName`` is taken as bound, as kubelet runs it without the scheduler; the filter
speaks for pods built with ``Pod.spec_node_name`` and in ``explain --nodes`` verdicts.)
"""

from __future__ import annotations

import numpy as np

from scheduler.framework import Code, FilterResult, FilterSignature
from scheduler.messages import ERR_NODE_NAME as ERR_REASON
from scheduler.snapshot import Snapshot

NAME = "NodeName"


def filter_node(node_name: str | None, name: str) -> list[str]:
    return [ERR_REASON] if node_name is not None and node_name != name else []


def filter_nodes(node_name: str | None, snap: Snapshot) -> FilterResult:
    snap.refresh()
    if node_name is None:
        return FilterResult(NAME, snap.all_nodes, [], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    ok = np.zeros(snap.n, dtype=np.bool_)
    i = snap.index.get(node_name)
    if i is not None:
        ok[i] = True
    return FilterResult(NAME, ok, [(ERR_REASON, ~ok)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


class NodeName:
    name = NAME

    def filter(self, sig: FilterSignature, snap: Snapshot) -> FilterResult:
        return filter_nodes(sig.node_name, snap)
