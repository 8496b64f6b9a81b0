"""The default profile: which plugin runs at which extension point, in which order.

A new plugin is one module under ``scheduler/plugins/`` plus one line here (or, for one
scheduler, ``Scheduler.use_profile(dataclasses.replace(scheduler.profile, filter=(..., new)))``).
Plugins bound to the scheduler's state (quotas, preemption) are built per Scheduler.
"""

from __future__ import annotations

from scheduler.framework import PostFilterPlugin, Profile
from scheduler.plugins.elastic_quota import ElasticQuota
from scheduler.plugins.gang_scheduling import GangScheduling
from scheduler.plugins.inter_pod_affinity import InterPodAffinity
from scheduler.plugins.node_affinity import NodeAffinity
from scheduler.plugins.node_name import NodeName
from scheduler.plugins.node_ports import NodePorts
from scheduler.plugins.node_unschedulable import NodeUnschedulable
from scheduler.plugins.placement_scoring import NodeResourcesFitPlacement, PodGroupPodsCount
from scheduler.plugins.pod_topology_spread import PodTopologySpread
from scheduler.plugins.scheduling_gates import SchedulingGates
from scheduler.plugins.taint_toleration import TaintToleration
from scheduler.plugins.topology_placement import TopologyPlacement


def default_profile(elastic_quota: ElasticQuota, preemption: PostFilterPlugin) -> Profile:
    """kube-scheduler's default profile (``default_plugins.go``; tests/scheduler/
    test_default_profile.py checks it plugin by plugin) in its order. NodeResourcesFit's filter
    and node score and NodeResourcesBalancedAllocation's score are built into the pod scheduler
    (its per-demand cache, ``scheduler.fitcache``) and run after ``filter`` (see
    ``framework.FilterPlugin``); pod-aware filters run around it (``before_fit``)."""
    taints, affinity = TaintToleration(), NodeAffinity()
    spread, inter_pod = PodTopologySpread(), InterPodAffinity()
    return Profile(
        pre_enqueue=(SchedulingGates(), GangScheduling()),
        pre_filter=(elastic_quota,),
        filter=(NodeUnschedulable(), NodeName(), taints, affinity),
        score=(taints, affinity),
        pod_filter=(NodePorts(), spread, inter_pod),
        pod_score=(inter_pod, spread),
        placement_generate=TopologyPlacement(),
        placement_score=(NodeResourcesFitPlacement(), PodGroupPodsCount()),
        post_filter=(preemption,),
    )
