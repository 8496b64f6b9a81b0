"""Upstream's default profile, plugin by plugin (pkg/scheduler/apis/config/v1/default_plugins.go,
kube-scheduler 1.37: the MultiPoint list, GangScheduling with gate GenericWorkload,
TopologyPlacementGenerator and PodGroupPodsCount with gate TopologyAwareWorkloadScheduling).

Each row is a fact of upstream's file: the plugin, its MultiPoint weight, the extension points it
implements; then where podledger runs it and with which default weight. Plugins podledger does
not model are listed with the reason (docs/upstream.md says the same in prose): a row that
drifts, or a podledger profile entry no row explains, fails.
"""

from __future__ import annotations

from scheduler.framework import Profile
from scheduler.model import SchedulerConfig
from scheduler.plugins import balanced_allocation, node_resources_fit
from scheduler.scheduler import Scheduler

# (plugin, upstream weight (None: no Score), upstream extension points, podledger: where | why not)
UPSTREAM = [
    ("SchedulingGates", None, "PreEnqueue", "pre_enqueue"),
    ("PrioritySort", None, "QueueSort", "built in: scheduler/queue.py orders by priority, then first seen"),
    ("NodeUnschedulable", None, "Filter", "filter"),
    ("NodeName", None, "Filter", "filter"),
    ("TaintToleration", 3, "Filter, PreScore, Score", "filter, score"),
    ("NodeAffinity", 2, "PreFilter, Filter, PreScore, Score", "filter, score"),
    ("NodePorts", None, "PreFilter, Filter", "pod_filter"),
    ("NodeResourcesFit", 1, "PreFilter, Filter, PreScore, Score, PlacementScore",
     "built in: scheduler/fitcache.py (filter, score); placement_score"),
    ("VolumeRestrictions", None, "PreFilter, Filter", "not modelled: podledger has no volumes"),
    ("NodeVolumeLimits", None, "PreFilter, Filter", "not modelled: podledger has no volumes"),
    ("VolumeBinding", None, "PreFilter, Filter, Reserve, PreBind, Score", "not modelled: podledger has no volumes"),
    ("VolumeZone", None, "PreFilter, Filter", "not modelled: podledger has no volumes"),
    ("PodTopologySpread", 2, "PreFilter, Filter, PreScore, Score", "pod_filter, pod_score"),
    ("InterPodAffinity", 2, "PreFilter, Filter, PreScore, Score", "pod_filter, pod_score"),
    ("DefaultPreemption", None, "PreEnqueue, PostFilter, PodGroupPostFilter", "post_filter"),
    ("NodeResourcesBalancedAllocation", 1, "PreScore, Score", "built in: scheduler/fitcache.py (score)"),
    ("ImageLocality", 1, "Score", "not modelled: podledger has no container images (scores 0 everywhere)"),
    ("DefaultBinder", None, "Bind", "built in: a binding is the PodBound decision"),
    ("GangScheduling", None, "PreEnqueue, PlacementFeasible", "pre_enqueue; PlacementFeasible built in"),
    ("TopologyPlacementGenerator", None, "PlacementGenerate", "placement_generate (TopologyPlacement)"),
    ("PodGroupPodsCount", 1, "PlacementScore", "placement_score"),
]  # fmt: skip

# podledger's own plugins beside upstream's default profile, and why
PODLEDGER_ONLY = {
    "ElasticQuota": "pre_filter: elastic quotas (docs/semantics.md Q.3), no effect without quotas"
}


def _profile() -> Profile:
    return Scheduler().profile


def _names(plugins: tuple[object, ...]) -> list[str]:
    return [str(getattr(p, "name", "")) for p in plugins]


def _weight(name: str, plugin: object | None) -> int:
    w = SchedulerConfig().plugin_weights
    if name in w:
        return int(w[name])
    assert plugin is not None, name
    return int(getattr(plugin, "default_weight"))  # noqa: B009


def test_every_upstream_plugin_is_placed_or_explained() -> None:
    prof = _profile()
    points = {
        "pre_enqueue": _names(prof.pre_enqueue),
        "pre_filter": _names(prof.pre_filter),
        "filter": _names(prof.filter),
        "score": _names(prof.score),
        "pod_filter": _names(prof.pod_filter),
        "pod_score": _names(prof.pod_score),
        "placement_generate": _names((prof.placement_generate,) if prof.placement_generate else ()),
        "placement_score": _names(prof.placement_score),
        "post_filter": _names(prof.post_filter),
    }
    names = {n: n for n, _, _, _ in UPSTREAM} | {"TopologyPlacementGenerator": "TopologyPlacement"}
    explained: set[tuple[str, str]] = set()
    for plugin, _, _, where in UPSTREAM:
        ours = names[plugin]
        for token in (t.strip() for seg in where.split(";") for t in seg.split(",")):
            p = token.split(" ")[0]
            if p in points:
                assert ours in points[p], f"{plugin} is not at {p}"
                explained.add((p, ours))
    for point, got in points.items():
        for n in got:
            if n in PODLEDGER_ONLY:
                continue
            assert (point, n) in explained, f"{n} at {point} is not in upstream's default profile"


def test_filter_order_is_upstreams() -> None:
    prof = _profile()
    # node-static filters, then NodePorts (before NodeResourcesFit), NodeResourcesFit (built in),
    # then PodTopologySpread and InterPodAffinity, in upstream's MultiPoint order
    assert _names(prof.filter) == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"]
    assert [(p.name, p.before_fit) for p in prof.pod_filter] == [
        ("NodePorts", True),
        ("PodTopologySpread", False),
        ("InterPodAffinity", False),
    ]
    assert _names(prof.pre_enqueue) == ["SchedulingGates", "GangScheduling"]


def test_default_weights_are_upstreams() -> None:
    prof = _profile()
    by_name: dict[str, object] = {
        str(p.name): p for p in (*prof.score, *prof.pod_score, *prof.placement_score)
    }
    by_name[balanced_allocation.NAME] = balanced_allocation.BalancedAllocation()
    for plugin, weight, _, where in UPSTREAM:
        if weight is None or where.startswith("not modelled"):
            continue
        if plugin == node_resources_fit.NAME:
            assert int(SchedulerConfig().plugin_weights[plugin]) == weight
            continue
        assert _weight(plugin, by_name.get(plugin)) == weight, plugin
