"""The PostFilter plugin: picks the algorithm by ``SchedulerConfig.preemption_algorithm``."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.framework import PostFilterRequest, PostFilterResult
from scheduler.plugins.elastic_quota import ElasticQuota
from scheduler.preemption.classic import ClassicPreemption
from scheduler.preemption.common import ALGO_AUTO, ALGO_EQ, ALGO_NONE, NodeResult
from scheduler.preemption.elastic import ElasticQuotaPreemption
from scheduler.quota import Quotas
from scheduler.state import State

NAME = "DefaultPreemption"


@dataclass
class Preemption(ClassicPreemption, ElasticQuotaPreemption):
    """The PostFilter plugin (see the package docstring)."""

    state: State
    quotas: Quotas
    quota_filter: ElasticQuota
    terminating: set[str] = field(default_factory=set)  # pods being deleted because of preemption
    name: str = NAME
    # classic dry-run cache (see ``ClassicPreemption._classic``)
    _epoch: int = -1
    _log_pos: int = 0
    _versions: dict[int, int] = field(default_factory=dict)
    _node_cache: dict[int, tuple[object, NodeResult]] = field(default_factory=dict)

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
