"""The pod-aware plugins inside the PodGroup cycle: gang members see each other, topology gangs
with anti-affinity, preemption and the node verdicts (the plugins alone: test_pod_plugins.py)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from scheduler.model import (
    HostPort,
    Pod,
    PodAffinityTerm,
)
from tests.scheduler.test_pod_plugins import ANTI, HOST, ZONE, sel, term


def _ring_pod(name: str, group: str | None = "ring", key: str = HOST) -> Pod:
    from tests.scheduler.sched_helpers import pod

    return pod(name, 1, group, labels={"app": "ring"}, anti_affinity_required=(term(key, app="ring"),))


def test_gang_members_see_each_other_as_assumed_pods() -> None:
    from tests.scheduler.sched_helpers import Sim, node, pg

    sim = Sim()
    sim.apply(*(node(f"n{i}", cpu=16, labels={HOST: f"n{i}"}) for i in range(3)), run=False)
    sim.apply(pg("ring", 3), *(_ring_pod(f"r{i}") for i in range(3)))
    assert sorted(sim.node_of(f"r{i}") for i in range(3)) == ["n0", "n1", "n2"]


def test_gang_needing_more_distinct_nodes_than_exist_stays_unbound_with_the_plugin_message() -> None:
    from scheduler.decisions import GroupUnschedulable
    from tests.scheduler.sched_helpers import Sim, node, pg

    sim = Sim()
    sim.apply(*(node(f"n{i}", cpu=16, labels={HOST: f"n{i}"}) for i in range(2)), run=False)
    sim.apply(pg("ring", 3), *(_ring_pod(f"r{i}") for i in range(3)))
    assert all(sim.node_of(f"r{i}") is None for i in range(3))
    diags = [d for r in sim.results for d in r.decisions if isinstance(d, GroupUnschedulable)]
    assert diags
    assert diags[-1].diagnosis["reasons"] == [["node(s) didn't match pod anti-affinity rules", 2]]
    assert diags[-1].diagnosis["rejected"] == {"InterPodAffinity": 2}


def test_topology_gang_with_anti_affinity_is_exact_per_placement() -> None:
    """Interchangeable pods with anti-affinity are not predicted from capacities: rack r0 has
    room for four pods on one node, r1 has two nodes; hostname anti-affinity needs r1."""
    from tests.scheduler.sched_helpers import Sim, node, pg

    sim = Sim()
    sim.apply(
        node("a", cpu=16, labels={HOST: "a", "rack": "r0"}),
        node("b", cpu=2, labels={HOST: "b", "rack": "r1"}),
        node("c", cpu=2, labels={HOST: "c", "rack": "r1"}),
        run=False,
    )
    sim.apply(pg("ring", 2, key="rack"), *(_ring_pod(f"r{i}") for i in range(2)))
    assert sorted(sim.node_of(f"r{i}") for i in range(2)) == ["b", "c"]


def test_percentage_of_nodes_to_score_limits_the_scored_nodes() -> None:
    """150 nodes, 50%: only the first 100 feasible nodes (node order) are scored; the emptiest
    node is the last one, so scoring all of them picks it, the limited search does not."""
    from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, node, pod

    for pct, want in ((100, "n149"), (50, "n000")):
        sim = Sim(replace(ZERO_BACKOFF, percentage_of_nodes_to_score=pct))
        sim.apply(*(node(f"n{i:03d}", cpu=8 if i == 149 else 4) for i in range(150)), run=False)
        sim.apply(pod("p"))
        assert sim.node_of("p") == want, pct


@pytest.mark.parametrize("anti_key", [HOST, ZONE])
def test_one_pod_per_domain_prediction_equals_exact_evaluation(
    anti_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gangs with self anti-affinity are predicted per placement (one pod per anti-affinity
    domain with room); the bindings equal those of the exact evaluation of every placement."""
    from scheduler.cycle import placement as cycle_mod
    from tests.scheduler.sched_helpers import Sim, node, pg, pod

    def run(vectorized: bool) -> dict[str, str | None]:
        cycle_mod.VECTORIZED_PLACEMENTS = vectorized
        try:
            rng = random.Random(7)
            sim = Sim()
            nodes = []
            for i in range(24):
                labels = {HOST: f"n{i:02d}", "rack": f"r{i // 6}", ZONE: f"z{i // 3}"}
                nodes.append(node(f"n{i:02d}", cpu=rng.choice([2, 4, 8]), labels=labels))
            sim.apply(*nodes, run=False)
            keys = []
            for g in range(12):
                size = rng.choice([1, 2, 3, 5, 7])
                t = PodAffinityTerm(anti_key, sel(gang=f"g{g}"))
                members = [
                    pod(f"g{g}-{j}", 2, f"g{g}", labels={"gang": f"g{g}"}, anti_affinity_required=(t,))
                    for j in range(size)
                ]
                keys += [p.name for p in members]
                sim.apply(pg(f"g{g}", size, key="rack"), *members)
            return {k: sim.node_of(k) for k in keys}
        finally:
            cycle_mod.VECTORIZED_PLACEMENTS = True

    calls: list[int] = []
    orig = cycle_mod.LeafAlgorithm._one_per_domain

    def counted(self: Any, *a: Any) -> Any:
        calls.append(1)
        return orig(self, *a)

    monkeypatch.setattr(cycle_mod.LeafAlgorithm, "_one_per_domain", counted)
    fast = run(True)
    assert calls, "the prediction was not used"
    exact = run(False)
    assert fast == exact
    assert any(v is None for v in fast.values()) and any(v is not None for v in fast.values())


def test_preemption_removes_the_anti_affine_pod_not_a_resource_victim() -> None:
    """Upstream SelectVictimsOnNode: with the lower-priority pods removed the preemptor passes
    InterPodAffinity; adding back the pod its anti-affinity matches fails, so only that pod is
    a victim (resources fit without any preemption)."""
    from scheduler.decisions import PodNominated, PodPreempted
    from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, node, pod

    sim = Sim(replace(ZERO_BACKOFF, preemption_algorithm="Default"))
    sim.apply(node("n1", cpu=8, labels={HOST: "n1"}), run=False)
    sim.apply(pod("low", 1, prio=1, labels={"app": "x"}), pod("other", 1, prio=1, labels={"app": "z"}))
    res = sim.apply(pod("high", 1, prio=1000, anti_affinity_required=(term(app="x"),)))
    decisions = [d for r in res for d in r.decisions]
    assert [d.victim for d in decisions if isinstance(d, PodPreempted)] == ["default/low"]
    assert [d.node for d in decisions if isinstance(d, PodNominated)] == ["n1"]
    assert sim.node_of("other") == "n1"


def test_preemption_cannot_help_a_pod_whose_affinity_is_unresolvable() -> None:
    from scheduler.decisions import PodNominated, PodPreempted
    from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, node, pod

    sim = Sim(replace(ZERO_BACKOFF, preemption_algorithm="Default"))
    sim.apply(node("n1", cpu=8, labels={HOST: "n1"}), run=False)
    sim.apply(pod("low", 1, prio=1))
    res = sim.apply(pod("high", 1, prio=1000, affinity_required=(term(app="db"),)))
    decisions = [d for r in res for d in r.decisions]
    assert not [d for d in decisions if isinstance(d, PodPreempted | PodNominated)]
    assert sim.node_of("low") == "n1"


def test_node_verdicts_list_the_pod_aware_plugins() -> None:
    """``explain --nodes``: per node the first rejecting plugin, the pod-aware ones included,
    equal to the vectorized filters."""
    from tests.scheduler.sched_helpers import Sim, node, pod

    sim = Sim()
    sim.apply(
        *(node(f"n{i}", cpu=4, labels={HOST: f"n{i}", ZONE: f"z{i // 2}"}) for i in range(4)), run=False
    )
    sim.apply(
        pod("web", 1, labels={"app": "web"}, node_name="n0"),
        pod("port", 1, node_name="n1", host_ports=(HostPort(80),)),
        pod(
            "p",
            1,
            labels={"app": "web"},
            host_ports=(HostPort(80),),
            anti_affinity_required=(term(app="web"),),
        ),
        run=False,
    )
    got = sim.s.node_verdicts(["default/p"])
    assert [(v.node, v.plugin, list(v.reasons)) for v in got] == [
        ("n0", "InterPodAffinity", [ANTI]),
        ("n1", "NodePorts", ["node(s) didn't have free ports for the requested pod ports"]),
        ("n2", "", []),
        ("n3", "", []),
    ]
    ps = sim.s.state.podsched
    results = ps.filter_results(ps.info(sim.s.pod("default/p")))  # type: ignore[arg-type]
    for i, v in enumerate(got):
        first = next((r for r in results if not r.ok[i]), None)
        assert v.plugin == (first.plugin if first is not None else "")


def test_balanced_allocation_decides_by_default_as_upstream() -> None:
    """Weight 1 by default (upstream's default profile, ``default_plugins.go``): NodeResourcesFit
    (LeastAllocated) scores a 81 and b 75, BalancedAllocation a 93 and b 100, so upstream's
    totals are a 174, b 175 and the pod goes to b; with the weight 0 it goes to a."""
    from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, node, pod

    for weights, want in (({}, "b"), ({"NodeResourcesBalancedAllocation": 0}, "a")):
        cfg = replace(ZERO_BACKOFF, plugin_weights={**ZERO_BACKOFF.plugin_weights, **weights})
        sim = Sim(cfg)
        # a: 4 CPU / 16 GiB, b: 4 CPU / 8 GiB; the pod asks 1 CPU and 2 GiB
        sim.apply(node("a", cpu=4, mem_gi=16), node("b", cpu=4, mem_gi=8), run=False)
        sim.apply(pod("p", 1, mem_gi=2))
        assert sim.node_of("p") == want, weights


def test_balanced_allocation_weight_scales_its_score() -> None:
    """a: 8 CPU / 64 GiB, b: 4 CPU / 8 GiB; the pod asks 2 CPU and 4 GiB: NodeResourcesFit
    prefers a (84 to 50), BalancedAllocation b (100 to 90); weight 1 keeps a, weight 5 gives b."""
    from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, node, pod

    for weights, want in (({}, "a"), ({"NodeResourcesBalancedAllocation": 5}, "b")):
        cfg = replace(ZERO_BACKOFF, plugin_weights={**ZERO_BACKOFF.plugin_weights, **weights})
        sim = Sim(cfg)
        sim.apply(node("a", cpu=8, mem_gi=64), node("b", cpu=4, mem_gi=8), run=False)
        sim.apply(pod("p", 2, mem_gi=4))
        assert sim.node_of("p") == want, weights
