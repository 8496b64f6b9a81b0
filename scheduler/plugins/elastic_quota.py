"""ElasticQuota PreFilter: an attempt (a plain pod, or all pending pods of a group summed) must
fit its namespace's elastic quota (rules in ``scheduler.quota``'s docstring, docs/semantics.md Q.3).

A non-success status fails the attempt with the quota's message: a plain pod reads
``0/N nodes are available: <message>.``, a group's root status is the message (so the
PostFilter, i.e. preemption, still runs when it is Unschedulable). Quota-aware preemption
re-checks the same rule on its simulated snapshot (``check``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler import quota as quota_mod
from scheduler.framework import PreFilterRequest, Status
from scheduler.model import Pod
from scheduler.quota import Quotas, requests_of
from scheduler.state import State

NAME = quota_mod.NAME


def occupying(state: State) -> list[str]:
    """Keys of the pods occupying the snapshot (bound or assumed): what quota usage counts."""
    out: list[str] = []
    for keys in state.snap.node_pods.values():
        out.extend(keys)
    return out


@dataclass
class ElasticQuota:
    """The PreFilter plugin; ``None`` (nothing to check) when no quota covers the namespace."""

    state: State
    quotas: Quotas
    name: str = NAME

    def check(self, pods: Sequence[Pod]) -> Status | None:
        if not self.quotas.active or not pods:
            return None
        ns = pods[0].namespace
        if self.quotas.leaf_for(ns) is None:
            return None
        usage = self.quotas.usage_of(self.state.snap.ns_used, self.state.snap.ns_count)
        return quota_mod.pre_filter_status(usage.check(ns, requests_of(pods)))

    def pre_filter(self, req: PreFilterRequest) -> Status | None:
        return self.check(req.pods)

    def passes_plain(self, pod: Pod) -> bool:
        """No quota covers the pod's namespace: ``check`` has nothing to say about it alone."""
        return self.quotas.leaf_for(pod.namespace) is None
