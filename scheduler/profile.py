"""The default profile: which plugin runs at which extension point, in which order.

A new plugin is one module under ``scheduler/plugins/`` plus one line here (or, for one
scheduler, ``Scheduler.use_profile(dataclasses.replace(scheduler.profile, filter=(..., new)))``).
Plugins bound to the scheduler's state (quotas, preemption) are built per Scheduler.
"""

from __future__ import annotations

from scheduler.framework import PostFilterPlugin, Profile
from scheduler.plugins.elastic_quota import ElasticQuota
from scheduler.plugins.gang_scheduling import GangScheduling
from scheduler.plugins.node_affinity import NodeAffinity
from scheduler.plugins.node_unschedulable import NodeUnschedulable
from scheduler.plugins.placement_scoring import NodeResourcesFitPlacement, PodGroupPodsCount
from scheduler.plugins.scheduling_gates import SchedulingGates
from scheduler.plugins.taint_toleration import TaintToleration
from scheduler.plugins.topology_placement import TopologyPlacement


def default_profile(elastic_quota: ElasticQuota, preemption: PostFilterPlugin) -> Profile:
    """kube-scheduler's default order; NodeResourcesFit's filter and node score are built into
    the pod scheduler and run after ``filter`` (see ``framework.FilterPlugin``)."""
    taints, affinity = TaintToleration(), NodeAffinity()
    return Profile(
        pre_enqueue=(SchedulingGates(), GangScheduling()),
        pre_filter=(elastic_quota,),
        filter=(NodeUnschedulable(), taints, affinity),
        score=(taints, affinity),
        placement_generate=TopologyPlacement(),
        placement_score=(NodeResourcesFitPlacement(), PodGroupPodsCount()),
        post_filter=(preemption,),
    )
