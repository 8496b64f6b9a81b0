"""Topology-aware placement (scenarios C) and CompositePodGroups (scenarios D, G)."""

from __future__ import annotations

from scheduler.decisions import GroupConditionChanged, GroupScheduled, GroupUnschedulable, PodUnschedulable
from tests.scheduler.sched_helpers import DEFAULT_BACKOFF, Sim, Taint, Toleration, cpg, node, pg, pod


def rack_node(name: str, rack: str, zone: str = "zone-1", **kw: object) -> object:
    return node(name, cpu=2, labels={"rack": rack, "zone": zone}, **kw)  # type: ignore[arg-type]


def racks(sim: Sim, *pods: str) -> set[str]:
    out = set()
    for p in pods:
        n = sim.node_of(p)
        assert n is not None, p
        out.add(sim.s.state.snap.node(n).labels["rack"])  # type: ignore[union-attr]
    return out


def test_tc21_only_one_rack_can_host() -> None:
    sim = Sim()
    sim.apply(
        *[rack_node(f"node{i}", "rack-1") for i in (1, 2, 3)],
        rack_node("node4", "rack-2"),
        rack_node("node5", "rack-2"),
        rack_node("node6", "rack-3", "zone-2"),
    )
    sim.apply(pod("existing", cpu=2, node_name="node4", prio=0))
    res = sim.apply(
        pg("pg1", 3, key="rack"), pod("p1", group="pg1"), pod("p2", group="pg1"), pod("p3", group="pg1")
    )
    assert racks(sim, "p1", "p2", "p3") == {"rack-1"}
    gs = [d for d in res[-1].decisions if isinstance(d, GroupScheduled)][0]
    assert gs.placement == "rack=rack-1"
    assert res[-1].placement_counts["placements_generated"] == 3


def test_tc23_capacity_freed_gang_lands() -> None:
    sim = Sim()
    sim.apply(*[rack_node(f"node{i}", "rack-1") for i in (1, 2, 3)])
    sim.apply(pod("b1", cpu=2, node_name="node1", prio=0), pod("b3", cpu=2, node_name="node3", prio=0))
    res = sim.apply(
        pg("pg1", 3, key="rack"), pod("p1", group="pg1"), pod("p2", group="pg1"), pod("p3", group="pg1")
    )
    assert not sim.bound("p1")
    msg = (
        "0/1 placements are available, first placement status: "
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    )
    gu = [d for d in res[-1].decisions if isinstance(d, GroupUnschedulable)][0]
    assert gu.message == msg
    assert sim.cond("pg1") == ("False", "Unschedulable", msg)
    assert gu.diagnosis["placements"]["generated"] == 1
    assert gu.diagnosis["placements"]["results"] == [
        "pg1@rack=rack-1: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    ]
    sim.delete("Pod", "default/b1")
    assert sim.bound("p1", "p2", "p3")
    assert sim.cond("pg1") == ("True", "Scheduled", "")


def test_tc25_placement_score_with_existing_load() -> None:
    sim = Sim()
    sim.apply(
        rack_node("node1", "rack-1"),
        rack_node("node2", "rack-1"),
        *[rack_node(f"node{i}", "rack-2") for i in (3, 4, 5)],
        *[rack_node(f"node{i}", "rack-3") for i in (6, 7, 8)],
        rack_node("node9", "rack-4"),
    )
    sim.apply(pod("e3", cpu=2, node_name="node3", prio=0), pod("e8", cpu=1, node_name="node8", prio=0))
    res = sim.apply(
        pg("pg1", 3, key="rack"), pod("p1", group="pg1"), pod("p2", group="pg1"), pod("p3", group="pg1")
    )
    assert racks(sim, "p1", "p2", "p3") == {"rack-2"}
    assert res[-1].placement_counts == {"placements_generated": 4, "placements_scored": 3}


def test_tc26_consecutive_gangs_on_separate_racks() -> None:
    sim = Sim()
    sim.apply(
        *[rack_node(f"node{i}", "rack-1") for i in (1, 2, 3)],
        rack_node("node4", "rack-2"),
        rack_node("node5", "rack-2"),
    )
    sim.apply(pg("pg1", 3, key="rack"), *[pod(f"l{i}", cpu=2, group="pg1") for i in (1, 2, 3)])
    assert racks(sim, "l1", "l2", "l3") == {"rack-1"}
    sim.apply(pg("pg2", 2, key="rack"), pod("s1", group="pg2"), pod("s2", group="pg2"))
    assert racks(sim, "s1", "s2") == {"rack-2"}


def test_nodes_without_topology_label_are_excluded() -> None:
    sim = Sim()
    sim.apply(node("bare", cpu=64), rack_node("r1", "rack-1"))
    sim.apply(pg("g", 2, key="rack"), pod("a", group="g"), pod("b", group="g"))
    assert sim.node_of("a") == "r1" and sim.node_of("b") == "r1"


def test_nominated_placement_first_for_standalone_group() -> None:
    sim = Sim()
    sim.apply(
        rack_node("a1", "rack-a"),
        rack_node("a2", "rack-a"),
        rack_node("b1", "rack-b"),
        rack_node("b2", "rack-b"),
    )
    sim.apply(pod("busy", cpu=1, node_name="a1", prio=0))  # rack-a would win on bin packing
    sim.apply(pg("g", 2, key="rack"), pod("p1", group="g", nominated_node="b2"), pod("p2", group="g"))
    assert racks(sim, "p1", "p2") == {"rack-b"}
    assert sim.node_of("p1") == "b2"


def test_heterogeneous_group_evaluates_each_placement() -> None:
    sim = Sim()
    sim.apply(
        rack_node("a1", "rack-a"), rack_node("b1", "rack-b"), node("b2", cpu=4, labels={"rack": "rack-b"})
    )
    sim.apply(pg("g", 2, key="rack"), pod("big", cpu=3, group="g"), pod("small", cpu=1, group="g"))
    assert sim.node_of("big") == "b2" and racks(sim, "big", "small") == {"rack-b"}


# --------------------------------------------------------------------------- CompositePodGroups
def cpg_tree(root_key: str | None, leaf_key: str | None = None) -> list[object]:
    return [
        cpg("cpg-root", 2, key=root_key, workload="w"),
        pg("pg1", 2, key=leaf_key, parent="cpg-root", workload="w"),
        pg("pg2", 2, key=leaf_key, parent="cpg-root", workload="w"),
    ]


def test_tc29_parent_constraint_unconstrained_children() -> None:
    sim = Sim()
    sim.apply(
        rack_node("node1", "rack-1"),
        rack_node("node2", "rack-1"),
        rack_node("node3", "rack-2"),
        rack_node("node4", "rack-2"),
    )
    sim.apply(pod("plain", cpu=2, node_name="node4", prio=0))
    res = sim.apply(
        *cpg_tree("rack"),
        pod("p1", group="pg1"),
        pod("p2", group="pg1"),
        pod("p3", group="pg2"),
        pod("p4", group="pg2"),
    )
    assert racks(sim, "p1", "p2", "p3", "p4") == {"rack-1"}
    assert res[-1].entity == "cpg/default/cpg-root"
    conds = [d for d in res[-1].decisions if isinstance(d, GroupConditionChanged)]
    assert [(d.kind, d.group, d.status) for d in conds] == [
        ("PodGroup", "default/pg1", "True"),
        ("PodGroup", "default/pg2", "True"),
        ("CompositePodGroup", "default/cpg-root", "True"),
    ]
    assert sim.cond("cpg-root", "CompositePodGroupInitiallyScheduled") == ("True", "Scheduled", "")


def test_tc30_existing_member_pins_domain() -> None:
    sim = Sim()
    sim.apply(
        rack_node("node1", "rack-1"),
        rack_node("node2", "rack-1"),
        rack_node("node3", "rack-2"),
        rack_node("node4", "rack-2"),
    )
    sim.apply(*cpg_tree("rack"))
    sim.apply(pod("p0", group="pg1", node_name="node4"))
    sim.apply(pod("p1", group="pg1"), pod("p2", group="pg2"), pod("p3", group="pg2"))
    assert racks(sim, "p1", "p2", "p3") == {"rack-2"}


def test_tc32_two_level_constraints() -> None:
    sim = Sim()
    sim.apply(
        rack_node("node1", "rack-1", "zone-1"),
        rack_node("node2", "rack-2", "zone-1"),
        rack_node("node3", "rack-1", "zone-2"),
        rack_node("node4", "rack-1", "zone-2"),
    )
    sim.apply(pod("e", cpu=1, node_name="node3", prio=0))
    sim.apply(
        cpg("cpg-root", 2, key="zone", workload="w"),
        pg("pg1", 2, key="rack", parent="cpg-root", workload="w"),
        pg("pg2", 2, key="rack", parent="cpg-root", workload="w"),
    )
    sim.apply(pod("p1", group="pg1"), pod("p2", group="pg1"), pod("p3", group="pg2"), pod("p4", group="pg2"))
    nodes = {sim.node_of(p) for p in ("p1", "p2", "p3", "p4")}
    assert nodes <= {"node1", "node2"}
    assert len(racks(sim, "p1", "p2")) == 1 and len(racks(sim, "p3", "p4")) == 1


def test_tc33_one_child_constrained_other_inherits_parent_domain() -> None:
    sim = Sim()
    tol = (Toleration(key="special", operator="Exists"),)
    sim.apply(
        node(
            "node1",
            cpu=2,
            labels={"zone": "zone-1", "rack": "rack-1"},
            taints=(Taint("special", "", "NoSchedule"),),
        ),
        node("node2", cpu=2, labels={"zone": "zone-1", "rack": "rack-2"}),
        node("node3", cpu=2, labels={"zone": "zone-1", "rack": "rack-3"}),
        node("node4", cpu=2, labels={"zone": "zone-2", "rack": "rack-1", "kubernetes.io/hostname": "node4"}),
        node("node5", cpu=2, labels={"zone": "zone-2", "rack": "rack-2"}),
    )
    sim.apply(
        pod("e5", node_name="node5", prio=0),
        pod("e2", node_name="node2", prio=0),
        pod("e3", node_name="node3", prio=0),
    )
    from scheduler.model import NodeSelectorTerm, PreferredTerm, Requirement

    pref = (PreferredTerm(100, NodeSelectorTerm((Requirement("kubernetes.io/hostname", "In", ("node4",)),))),)
    sim.apply(
        cpg("cpg-root", 2, key="zone", workload="w"),
        pg("pg1", 2, key="rack", parent="cpg-root", workload="w"),
        pg("pg2", 2, parent="cpg-root", workload="w"),
    )
    sim.apply(
        pod("p1", group="pg1", tolerations=tol),
        pod("p2", group="pg1", tolerations=tol),
        pod("p3", group="pg2", preferred_terms=pref),
        pod("p4", group="pg2", preferred_terms=pref),
    )
    assert sim.node_of("p1") == "node1" and sim.node_of("p2") == "node1"
    assert {sim.node_of("p3"), sim.node_of("p4")} == {"node2", "node3"}


def test_tc34_existing_member_narrows_children() -> None:
    sim = Sim()
    sim.apply(
        rack_node("node1", "rack-1", "zone-1"),
        rack_node("node2", "rack-2", "zone-1"),
        rack_node("node3", "rack-2", "zone-1"),
        rack_node("node4", "rack-1", "zone-2"),
        rack_node("node5", "rack-1", "zone-2"),
    )
    sim.apply(
        cpg("cpg-root", 2, key="zone", workload="w"),
        pg("pg1", 2, key="rack", parent="cpg-root", workload="w"),
        pg("pg2", 2, key="rack", parent="cpg-root", workload="w"),
    )
    sim.apply(pod("p0", group="pg1", node_name="node1"))
    sim.apply(pod("p1", group="pg1"), pod("p2", group="pg2"), pod("p3", group="pg2"))
    assert sim.node_of("p1") == "node1"
    assert {sim.node_of("p2"), sim.node_of("p3")} <= {"node2", "node3"}


def test_tc35_conflicting_domains_scheduler_error() -> None:
    sim = Sim()
    sim.apply(
        rack_node("node1", "rack-1", "zone-1"),
        rack_node("node2", "rack-1", "zone-1"),
        rack_node("node3", "rack-1", "zone-2"),
        rack_node("node4", "rack-1", "zone-2"),
    )
    sim.apply(
        cpg("cpg-root", 2, key="zone", workload="w"),
        pg("pg1", 2, key="rack", parent="cpg-root", workload="w"),
        pg("pg2", 2, key="rack", parent="cpg-root", workload="w"),
    )
    sim.apply(pod("e1", group="pg1", node_name="node1"), pod("e2", group="pg2", node_name="node3"))
    res = sim.apply(pod("p1", group="pg1"), pod("p2", group="pg2"))
    assert not sim.bound("p1") and not sim.bound("p2")
    assert res[-1].result == "error"
    msg = "more than 1 domain found for pod group"
    assert sim.cond("pg1") == ("False", "SchedulerError", msg)
    assert sim.cond("pg2") == ("False", "SchedulerError", msg)
    assert sim.cond("cpg-root", "CompositePodGroupInitiallyScheduled") == ("False", "SchedulerError", msg)
    pu = [d for d in res[-1].decisions if isinstance(d, PodUnschedulable)]
    assert {(d.pod, d.reason, d.message) for d in pu} == {
        ("default/p1", "SchedulerError", msg),
        ("default/p2", "SchedulerError", msg),
    }


def test_cpg_gang_fails_atomically_and_basic_binds_partially() -> None:
    sim = Sim()
    sim.apply(rack_node("n1", "rack-1"))
    sim.apply(
        *cpg_tree(None),
        pod("a1", group="pg1"),
        pod("a2", group="pg1"),
        pod("b1", group="pg2"),
        pod("b2", group="pg2"),
    )
    assert not any(
        sim.bound(p) for p in ("a1", "a2", "b1", "b2")
    )  # only one child fits, gang(2) of children fails
    gu = [d for d in sim.decisions() if isinstance(d, GroupUnschedulable)][-1]
    assert gu.message.startswith(
        "0/1 placements are available, first placement status: minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    )
    # pg1 succeeded in the evaluation but is invalidated by its failed parent
    assert sim.cond("pg1")[0] == "False"  # type: ignore[index]
    sim2 = Sim()
    sim2.apply(rack_node("n1", "rack-1"))
    sim2.apply(
        cpg("cpg-root", None, workload="w"),
        pg("pg1", 2, parent="cpg-root", workload="w"),
        pg("pg2", 2, parent="cpg-root", workload="w"),
        pod("a1", group="pg1"),
        pod("a2", group="pg1"),
        pod("b1", group="pg2"),
        pod("b2", group="pg2"),
    )
    assert sim2.bound("a1", "a2") and not sim2.bound("b1")
    assert sim2.cond("pg1") == ("True", "Scheduled", "") and sim2.cond("pg2")[0] == "False"  # type: ignore[index]


# --------------------------------------------------------------------------- TC-68 runtime validation
def test_tc68_missing_parent() -> None:
    sim = Sim()
    sim.apply(rack_node("n1", "rack-1"))
    res = sim.apply(pg("pg1", None, parent="cpg-root", workload="w"), pod("p1", group="pg1"))
    assert res[-1].result == "error"
    assert sim.cond("pg1") == ("False", "SchedulerError", "cpg-root not found in workload forest")
    pu = [d for d in res[-1].decisions if isinstance(d, PodUnschedulable)][0]
    assert "cpg-root not found in workload forest" in pu.message
    sim.apply(cpg("cpg-root", None, workload="w"))
    assert sim.bound("p1")


def test_tc68_cycle() -> None:
    sim = Sim()
    sim.apply(rack_node("n1", "rack-1"))
    sim.apply(
        cpg("a", None, parent="b", workload="w"),
        cpg("b", None, parent="a", workload="w"),
        pg("pg1", None, parent="a", workload="w"),
        pod("p1", group="pg1"),
    )
    assert not sim.bound("p1")
    msg = sim.cond("pg1")[2]  # type: ignore[index]
    assert msg == "cycle detected in composite pod group hierarchy: a -> b -> a"
    assert "cycle detected in" in sim.s.pending_reason("default/p1")[1]  # type: ignore[index]


def test_tc68_depth() -> None:
    sim = Sim()
    sim.apply(rack_node("n1", "rack-1"))
    sim.apply(
        cpg("c1", None, workload="w"),
        cpg("c2", None, parent="c1", workload="w"),
        cpg("c3", None, parent="c2", workload="w"),
        cpg("c4", None, parent="c3", workload="w"),
        pg("pg1", None, parent="c4", workload="w"),
        pod("p1", group="pg1"),
    )
    assert sim.cond("pg1") == (
        "False",
        "SchedulerError",
        "hierarchy depth of 5 exceeds maximum allowed depth of 4 (path: c1 -> c2 -> c3 -> c4 -> pg1)",
    )
    assert not sim.bound("p1")


def test_cpg_child_error_wrapped_and_root_placement_reported() -> None:
    sim = Sim()
    sim.apply(rack_node("n1", "rack-1"), rack_node("n2", "rack-2"), rack_node("n3", "rack-3"))
    sim.apply(cpg("root", None, workload="w"), pg("pg1", 1, key="rack", parent="root", workload="w"))
    sim.apply(pod("e1", group="pg1", node_name="n1"), pod("e2", group="pg1", node_name="n2"))
    res = sim.apply(pod("p1", group="pg1"))
    assert res[-1].result == "error"
    assert sim.cond("pg1") == ("False", "SchedulerError", "more than 1 domain found for pod group")
    assert sim.cond("root", "CompositePodGroupInitiallyScheduled") == (
        "False",
        "SchedulerError",
        "composite pod group evaluation failed due to child error: more than 1 domain found for pod group",
    )
    sim2 = Sim()
    sim2.apply(rack_node("n1", "rack-1"), rack_node("n2", "rack-2"))
    res = sim2.apply(
        cpg("root", None, key="rack", workload="w"),
        pg("pg1", 2, parent="root", workload="w"),
        pod("a", group="pg1"),
        pod("b", group="pg1"),
    )
    gs = [d for d in res[-1].decisions if isinstance(d, GroupScheduled)][0]
    assert (
        gs.group == "default/root" and gs.placement == "rack=rack-1" and gs.pods == ("default/a", "default/b")
    )


def test_feature_gates_off() -> None:
    from scheduler.model import SchedulerConfig

    gates = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": False, "CompositePodGroup": True}
    sim = Sim(
        SchedulerConfig(
            backoff_initial_seconds=0, backoff_max_seconds=0, preemption_algorithm="None", feature_gates=gates
        )
    )
    sim.apply(rack_node("n1", "rack-1"), rack_node("n2", "rack-2"))
    # TAS off: the topology key is ignored (pods spread over both racks); CPG needs TAS -> parent ignored
    res = sim.apply(
        cpg("root", 5, workload="w"),
        pg("g", 2, key="rack", parent="root", workload="w"),
        pod("a", cpu=2, group="g"),
        pod("b", cpu=2, group="g"),
    )
    assert res[-1].entity == "pg/default/g"
    assert {sim.node_of("a"), sim.node_of("b")} == {"n1", "n2"}
    assert sim.cond("root", "CompositePodGroupInitiallyScheduled") is None
    sim2 = Sim(SchedulerConfig(preemption_algorithm="None", feature_gates={"GenericWorkload": False}))
    sim2.apply(node("n1", cpu=4))
    res = sim2.apply(pod("a", group="missing"))
    assert res[-1].entity == "default/a" and sim2.bound("a")  # plain pod without GenericWorkload
    # turning the gate on later re-keys pending pods
    sim3 = Sim(SchedulerConfig(preemption_algorithm="None", feature_gates={"GenericWorkload": False}))
    sim3.apply(node("n1", cpu=0.5))
    sim3.apply(pod("x", group="g"))
    assert sim3.results[-1].entity == "default/x"
    sim3.s.set_config(DEFAULT_BACKOFF)
    out = sim3.run()
    assert out[-1].result == "gated" and out[-1].entity == "pg/default/g"


def test_nominated_placement_feasible_but_nothing_scheduled() -> None:
    sim = Sim()
    sim.apply(rack_node("a1", "rack-a"), rack_node("b1", "rack-b"))
    sim.apply(pg("g", 1, key="rack"), pod("run", cpu=2, group="g", node_name="a1"))
    res = sim.apply(pod("new", cpu=1, group="g", nominated_node="a1"))
    gu = [d for d in res[-1].decisions if isinstance(d, GroupUnschedulable)][0]
    assert gu.message == (
        "0/1 placements are available, first placement status: "
        "nominated placement is feasible but no pending pod was scheduled"
    )
    assert sim.cond("g") == ("False", "Unschedulable", gu.message)
