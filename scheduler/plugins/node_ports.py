"""NodePorts: a pod's host ports must be free on the node.

Filter message (kube-scheduler): ``node(s) didn't have free ports for the requested pod ports``
(Unschedulable). Two host ports conflict when protocol and port are equal and the host IPs are
equal or either is ``0.0.0.0`` (the default). Ports of the scheduled (assigned and assumed)
pods count, so a PodGroup's pods see each other's ports. Pods without host ports pass.
"""

from __future__ import annotations

import numpy as np

from scheduler.framework import Code, FilterResult
from scheduler.messages import ERR_NODE_PORTS as ERR_REASON
from scheduler.model import HostPort, Pod
from scheduler.plugins.pod_index import index_of, ports_conflict
from scheduler.snapshot import Snapshot

NAME = "NodePorts"
ANY_IP = "0.0.0.0"


def filter_node(pod: Pod, used: list[HostPort]) -> list[str]:
    for want in pod.host_ports:
        if any(ports_conflict(want, u) for u in used):
            return [ERR_REASON]
    return []


def filter_pod(pod: Pod, snap: Snapshot) -> FilterResult:
    ix = index_of(snap)
    bad = np.zeros(snap.n, dtype=np.bool_)
    idx = snap.index
    for want in pod.host_ports:
        per = ix.ports.get((want.protocol, want.port))
        if not per:
            continue
        hits = [
            i
            for node, ips in per.items()
            if (i := idx.get(node)) is not None
            and (want.host_ip == ANY_IP or want.host_ip in ips or ANY_IP in ips)
        ]
        bad[hits] = True
    return FilterResult(NAME, ~bad, [(ERR_REASON, bad)] if bad.any() else [], Code.UNSCHEDULABLE)


class NodePorts:
    name = NAME
    before_fit = True

    def active(self, pod: Pod, snap: Snapshot) -> bool:
        return bool(pod.host_ports)

    def filter_pod(self, pod: Pod, snap: Snapshot) -> FilterResult:
        return filter_pod(pod, snap)
