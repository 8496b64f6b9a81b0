"""The profile: a new plugin is one module plus one line in the profile, and it changes decisions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from scheduler.decisions import PodBound, PodGated, PodUnschedulable
from scheduler.framework import SUCCESS, Code, FilterResult, FilterSignature, Status, unresolvable
from scheduler.model import Pod
from scheduler.profile import default_profile
from scheduler.snapshot import Snapshot
from scheduler.state import State
from tests.scheduler.sched_helpers import Sim, node, pod


class AvoidMaintenance:
    """A Filter plugin: nodes labelled ``maintenance=true`` take no new pods."""

    name = "AvoidMaintenance"
    reason = "node(s) are under maintenance"

    def filter(self, sig: FilterSignature, snap: Snapshot) -> FilterResult:
        col = snap.label("maintenance")
        vid = col.value_of.get("true", -2)
        bad = col.ids == vid
        return FilterResult(self.name, ~bad, [(self.reason, bad)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


class HoldTeam:
    """A PreEnqueue plugin: pods labelled ``team=hold`` wait."""

    name = "HoldTeam"

    def pre_enqueue(self, state: State, entity: str, pods: Sequence[Pod]) -> Status:
        if any(p.labels.get("team") == "hold" for p in pods):
            return unresolvable("team is on hold", self.name)
        return SUCCESS

    def passes_plain(self, pod: Pod) -> bool:
        return pod.labels.get("team") != "hold"


def _cluster(sim: Sim) -> None:
    # n1 sorts first and is emptier: the default profile puts a 1-CPU pod there
    sim.apply(node("n1", cpu=8, labels={"maintenance": "true"}), node("n2", cpu=4), run=False)


def test_default_profile_binds_to_the_node_the_new_filter_will_reject() -> None:
    sim = Sim()
    _cluster(sim)
    sim.apply(pod("a"))
    assert sim.node_of("a") == "n1"


def test_one_profile_line_adds_a_filter_and_changes_the_decision() -> None:
    sim = Sim()
    sim.s.use_profile(replace(sim.s.profile, filter=(*sim.s.profile.filter, AvoidMaintenance())))
    _cluster(sim)
    res = sim.apply(pod("a"), pod("big", cpu=6))
    assert sim.node_of("a") == "n2"
    assert [d for r in res for d in r.decisions if isinstance(d, PodBound)] == [PodBound("default/a", "n2")]
    # the plugin's reason shows in the fit error, attributed like any default filter's
    msg = [d.message for d in sim.decisions() if isinstance(d, PodUnschedulable) and d.pod == "default/big"]
    assert msg == ["0/2 nodes are available: 1 Insufficient cpu, 1 node(s) are under maintenance."]
    assert sim.s.pending_reason("default/big") == ("AvoidMaintenance", msg[0])


def test_a_profile_set_after_pods_are_queued_applies_to_them() -> None:
    sim = Sim()
    _cluster(sim)
    sim.apply(pod("hold", labels={"team": "hold"}), run=False)
    sim.s.use_profile(replace(sim.s.profile, pre_enqueue=(*sim.s.profile.pre_enqueue, HoldTeam())))
    sim.run()
    assert not sim.bound("hold")
    gated = [d for d in sim.decisions() if isinstance(d, PodGated)]
    assert gated == [PodGated("default/hold", "HoldTeam", "team is on hold")]
    sim.apply(pod("free"))
    assert sim.node_of("free") == "n1"


def test_default_profile_lists_the_plugins_in_upstream_order() -> None:
    sim = Sim()
    p = default_profile(sim.s.elastic_quota, sim.s.preemption)
    assert [x.name for x in p.pre_enqueue] == ["SchedulingGates", "GangScheduling"]
    assert [x.name for x in p.pre_filter] == ["ElasticQuota"]
    assert [x.name for x in p.filter] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"]
    assert [x.name for x in p.score] == ["TaintToleration", "NodeAffinity"]
    assert [x.name for x in p.pod_filter] == ["NodePorts", "PodTopologySpread", "InterPodAffinity"]
    assert [(x.name, x.before_fit) for x in p.pod_filter][0] == ("NodePorts", True)
    assert [x.name for x in p.pod_score] == [
        "NodeResourcesBalancedAllocation",
        "InterPodAffinity",
        "PodTopologySpread",
    ]
    assert p.placement_generate is not None and p.placement_generate.name == "TopologyPlacement"
    assert [x.name for x in p.placement_score] == ["NodeResourcesFit", "PodGroupPodsCount"]
    assert [x.name for x in p.post_filter] == ["DefaultPreemption"]


def test_node_verdicts_match_the_vectorized_filters() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=1), node("n2", cpu=4, unschedulable=True), node("n3", cpu=4), run=False)
    sim.apply(pod("busy", cpu=1, node_name="n1"), pod("p", cpu=2), run=False)
    got = sim.s.node_verdicts(["default/p", "default/missing"])
    assert [v.as_dict() for v in got] == [
        {"pod": "default/p", "node": "n1", "fits": False, "plugin": "NodeResourcesFit",
         "reasons": ["Insufficient cpu"]},
        {"pod": "default/p", "node": "n2", "fits": False, "plugin": "NodeUnschedulable",
         "reasons": ["node(s) were unschedulable"]},
        {"pod": "default/p", "node": "n3", "fits": True, "plugin": "", "reasons": []},
    ]  # fmt: skip
    ps = sim.s.state.podsched
    results = ps.filter_results(ps.info(sim.s.pod("default/p")))  # type: ignore[arg-type]
    for i, v in enumerate(got):
        first = next((r for r in results if not r.ok[i]), None)
        assert v.fits == (first is None)
        assert v.plugin == (first.plugin if first is not None else "")
        assert list(v.reasons) == (first.node_reasons(i) if first is not None else [])
    assert np.count_nonzero([v.fits for v in got]) == 1
