"""Preemption against the pure Scheduler API: victim units, importance order, PDB accounting,
workload-aware preemption (simulate once, reprieve, victim-aware choice), classic pod-level
preemption, messages and PodPreempted fields (scheduler/preemption.py)."""

from __future__ import annotations

from dataclasses import replace

from scheduler.decisions import Decision, GroupUnschedulable, PodNominated, PodPreempted, PodUnschedulable
from scheduler.model import ALL, NEVER, PodDisruptionBudget, SchedulerConfig
from scheduler.preemption import (
    MSG_CONDITION,
    RULE_DEFAULT,
    RULE_WAP,
    Budgets,
    Choice,
    Unit,
    Units,
)
from tests.scheduler.sched_helpers import Sim, cpg, node, pg, pod

ON = SchedulerConfig(backoff_initial_seconds=0.0, backoff_max_seconds=0.0)


def preempted(sim: Sim) -> list[PodPreempted]:
    return [d for d in sim.decisions() if isinstance(d, PodPreempted)]


def victims(sim: Sim) -> set[str]:
    return {d.victim for d in preempted(sim)}


# --------------------------------------------------------------------------- units and order
def test_unit_is_highest_all_ancestor_with_root_priority() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 4), node("n2", 4))
    sim.apply(
        cpg("gp", prio=10, disruption_mode=ALL),
        cpg("parent", prio=10, parent="gp"),
        pg("pg1", prio=10, parent="parent"),
        pg("pg2", prio=10, parent="parent"),
        pg("solo", prio=7),
        pod("a", group="pg1", prio=10, node_name="n1"),
        pod("b", group="pg1", prio=10, node_name="n2"),
        pod("c", group="pg2", prio=10, node_name="n2"),
        pod("s", group="solo", prio=7, node_name="n1"),
        pod("plain", prio=3, node_name="n1"),
    )
    units = Units(sim.s.state)
    u = units.of("default/a")
    assert u is not None
    assert (u.key, u.mode, u.priority, u.rank) == ("CompositePodGroup:default/gp", ALL, 10, 3)
    assert u.pods == ("default/a", "default/b", "default/c")  # all nodes, all leaves
    assert units.of("default/c") is u
    s = units.of("default/s")
    assert s is not None and (s.key, s.mode, s.rank, s.pods) == ("Pod:default/s", "Single", 2, ("default/s",))
    p = units.of("default/plain")
    assert p is not None and (p.rank, p.priority) == (1, 3)
    assert [x.key for x in units.all_lower(10)] == ["Pod:default/s", "Pod:default/plain"]


def test_parent_all_only_covers_its_subtree() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 4))
    sim.apply(
        cpg("gp", prio=10),
        cpg("parent", prio=10, parent="gp", disruption_mode=ALL),
        pg("pg1", prio=10, parent="parent"),
        pg("pg2", prio=10, parent="gp"),
        pod("a", group="pg1", prio=10, node_name="n1"),
        pod("c", group="pg2", prio=10, node_name="n1"),
    )
    units = Units(sim.s.state)
    ua, uc = units.of("default/a"), units.of("default/c")
    assert ua is not None and ua.key == "CompositePodGroup:default/parent"
    assert uc is not None and uc.key == "Pod:default/c" and uc.rank == 2


def test_missing_parent_stops_the_walk() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 4))
    sim.apply(
        pg("pgv", 2, prio=10, parent="gone", disruption_mode=ALL),
        pod("v", group="pgv", prio=10, node_name="n1"),
    )
    u = Units(sim.s.state).of("default/v")
    assert u is not None and (u.key, u.priority) == ("PodGroup:default/pgv", 10)


def test_importance_order_and_uid_direction() -> None:
    def unit(key: str, prio: int, rank: int, size: int, start: float, uid: str) -> Unit:
        return Unit(key, "Single", prio, rank, tuple(f"p{i}" for i in range(size)), start, uid)

    units = [
        unit("low", 5, 3, 9, 0.0, "a"),
        unit("pod-b", 10, 1, 1, 0.0, "b"),
        unit("pod-a", 10, 1, 1, 0.0, "a"),
        unit("old-pod", 10, 1, 1, -5.0, "z"),
        unit("big-pg", 10, 2, 3, 9.0, "z"),
        unit("pg", 10, 2, 1, 0.0, "z"),
        unit("cpg", 10, 3, 1, 0.0, "z"),
    ]
    order = [u.key for u in sorted(units, key=Unit.importance)]
    # priority, then rank, then size, then older first, then UID ascending (larger UID evicted first)
    assert order == ["cpg", "big-pg", "pg", "old-pod", "pod-a", "pod-b", "low"]


def test_choice_cost_order() -> None:
    def u(key: str, prio: int, n: int = 1) -> Unit:
        return Unit(key, "Single", prio, 1, tuple(f"{key}{i}" for i in range(n)), 0.0, key)

    pdb = Choice([u("a", 1)], {"a"}, {"x": "n"})
    high = Choice([u("b", 9)], set(), {"x": "n"})
    sum_ = Choice([u("c", 5), u("d", 5)], set(), {"x": "n"})
    few = Choice([u("e", 5)], set(), {"x": "n"})
    many_placed = Choice([u("f", 50)], set(), {"x": "n", "y": "n"})
    ranked = sorted([pdb, high, sum_, few, many_placed], key=Choice.cost)
    assert ranked == [many_placed, few, sum_, high, pdb]


# --------------------------------------------------------------------------- PDBs
def test_pdb_budgets_min_available_max_unavailable_and_percent() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 8))
    foo = {"app": "foo"}
    sim.apply(
        *[pod(f"f{i}", prio=1, node_name="n1", labels=foo) for i in range(3)],
        pod("pending", cpu=64, labels=foo),
    )
    st = sim.s.state
    for name, kw, allowed in (
        ("min2", {"min_available": 2}, 1),
        ("max1", {"max_unavailable": 1}, 0),  # 4 expected, 3 healthy: already 1 unavailable
        ("min50", {"min_available": "50%"}, 1),  # ceil(0.5 * 4) = 2
        ("max75", {"max_unavailable": "75%"}, 2),
    ):
        st.pdbs = {f"default/{name}": PodDisruptionBudget("default", name, foo, **kw)}
        assert Budgets(st).pdbs[0][1] == allowed, name
    st.pdbs = {"default/min2": PodDisruptionBudget("default", "min2", foo, min_available=2)}
    units = Units(st).all_lower(100)
    b = Budgets(st)
    # in order: the first unit uses the only allowed disruption, the next ones violate
    assert b.violating(st, units) == {u.key for u in units[1:]}
    assert not b.violates_alone(st, units[0])


# --------------------------------------------------------------------------- workload-aware
def test_wap_success_decisions_and_nominations() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 2), node("n2", 2))
    sim.apply(pod("low-1", 2, prio=10, node_name="n1", uid="u-low"), pod("low-2", 1, prio=10, node_name="n2"))
    res = sim.apply(pg("pg1", 3, uid="pg-uid"), *[pod(f"h{i}", group="pg1") for i in range(1, 4)])
    assert res[0].result == "waiting-on-preemption"
    (d,) = preempted(sim)
    assert d == PodPreempted(
        victim="default/low-1",
        preemptor="default/pg1",
        preemptor_kind="podgroup",
        node="n1",
        rule=RULE_WAP,
        unit="Pod:default/low-1",
        disruption_mode="Single",
        victim_priority=10,
        preemptor_priority=100,
        pdb_violation=False,
        message="Preempted by podgroup pg-uid on node cluster",
        condition_message=MSG_CONDITION % ("default-scheduler", "podgroup"),
        quota=None,
    )
    noms = {x.pod: x.node for x in res[0].decisions if isinstance(x, PodNominated)}
    assert noms == {"default/h1": "n1", "default/h2": "n2", "default/h3": "n1"}
    gu = [x for x in res[0].decisions if isinstance(x, GroupUnschedulable)][0]
    assert gu.message.endswith("pod group preemption: found a placement for podgroup, preempting 1 victims")
    assert not any(sim.bound(f"h{i}") for i in range(1, 4))  # nothing binds in the preemption cycle
    sim.advance(0.5)
    assert [sim.node_of(f"h{i}") for i in range(1, 4)] == ["n1", "n2", "n1"]  # nominated nodes honoured
    assert sim.node_of("low-2") == "n2"


def test_wap_never_and_no_victims_messages() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 1), pod("low", prio=10, node_name="n1"))
    res = sim.apply(pg("never", 1, preemption_policy=NEVER), pod("h", group="never", preemption_policy=NEVER))
    gu = [x for x in res[0].decisions if isinstance(x, GroupUnschedulable)][0]
    assert gu.message.endswith("pod group preemption: not eligible due to preemptionPolicy=Never.")
    assert victims(sim) == set()
    sim2 = Sim(ON)
    sim2.apply(node("n1", 1), pod("peer", prio=100, node_name="n1"))
    res = sim2.apply(pg("g", 1), pod("h", group="g"))
    gu = [x for x in res[0].decisions if isinstance(x, GroupUnschedulable)][0]
    assert gu.message.endswith("pod group preemption: No preemption victims found for incoming preemptor")


def test_wap_cannot_help_restores_snapshot() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 3), pod("mid", prio=500, node_name="n1"))
    sim.apply(pod("l1", prio=10, node_name="n1"), pod("l2", prio=10, node_name="n1"))
    before = sim.s.node_usage()
    res = sim.apply(pg("g", 3), *[pod(f"h{i}", group="g") for i in range(3)])
    assert victims(sim) == set()
    assert res[0].result == "unschedulable"
    assert sim.s.node_usage() == before
    assert sim.s.state.snap._depth == 0  # every backup was restored


def test_wap_reprieve_keeps_more_important_unit_that_fits_back() -> None:
    # TC-50 reprieve by priority: both candidates removed, the preemptors fixed, prio-10 fits back
    sim = Sim(ON)
    sim.apply(node("n1", 2, {"h": "n1"}), node("n2", 2, {"h": "n2"}))
    sim.apply(pod("ip1", prio=5, node_name="n1"), pod("ip2", prio=10, node_name="n1"))
    sim.apply(
        pg("g", 2),
        pod("a", group="g", node_selector={"h": "n1"}),
        pod("b", group="g", node_selector={"h": "n2"}),
    )
    assert victims(sim) == {"default/ip1"}


def test_victim_aware_choice_prefers_cheaper_victims() -> None:
    # TC-39: simulate-once would evict low-1 (prio 10); the least-important prefix evicts very-low (5)
    sim = Sim(ON)
    sim.apply(node("n1", 2), node("n2", 2))
    sim.apply(pod("low-1", prio=10, node_name="n1"), pod("very-low", prio=5, node_name="n2"))
    sim.apply(pg("g"), *[pod(f"h{i}", group="g") for i in range(3)])
    assert victims(sim) == {"default/very-low"}
    sim.advance(0.5)
    assert sim.bound("h0", "h1", "h2", "low-1")


def test_victim_aware_keeps_placing_as_many_pods() -> None:
    # TC-46: a shorter prefix would place fewer preemptor pods, so both p1 and p2 go at once
    sim = Sim(ON)
    sim.apply(*[node(f"n{i}", 1) for i in range(1, 5)])
    sim.apply(
        pod("p1", prio=10, node_name="n1"),
        pod("p2", prio=10, node_name="n2"),
        pod("p3", prio=200, node_name="n3"),
        pod("p4", prio=200, node_name="n4"),
    )
    sim.apply(pg("g", 1), *[pod(f"x{i}", group="g") for i in range(3)])
    assert victims(sim) == {"default/p1", "default/p2"}


def test_all_unit_evicted_whole_and_tas_stays_in_one_domain() -> None:
    sim = Sim(ON)
    z = "zone"
    sim.apply(*[node(f"n{i}", 1, {z: "a" if i <= 2 else "b"}) for i in range(1, 5)])
    sim.apply(
        pg("v", 1, prio=10, disruption_mode=ALL),
        pod("v1", group="v", prio=10, node_name="n1"),
        pod("v3", group="v", prio=10, node_name="n3"),  # the All unit spans both zones
        pod("l2", prio=10, node_name="n2"),
        pod("l4", prio=5, node_name="n4"),
    )
    sim.apply(pg("g", 2, key=z), pod("a", group="g"), pod("b", group="g"))
    got = victims(sim)
    # zone a (placement name first) is chosen; the All unit goes as a whole, l4 in zone b is kept
    assert got == {"default/v1", "default/v3", "default/l2"}
    units = {d.victim: (d.unit, d.disruption_mode) for d in preempted(sim)}
    assert units["default/v3"] == ("PodGroup:default/v", ALL)


def test_ongoing_preemption_keeps_nominations() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 1), node("n2", 1))
    sim.apply(pod("low", prio=10, node_name="n1"), pod("peer", prio=100, node_name="n2"))
    sim.apply(
        pg("g", 2),
        pod("a", group="g", nominated_node="n1"),
        pod("b", group="g", nominated_node="n2"),
        run=False,
    )
    sim.s.preemption.terminating.add("default/low")  # a victim still terminating on n1
    res = sim.run()
    gu = [x for x in res[0].decisions if isinstance(x, GroupUnschedulable)][0]
    assert gu.message.endswith("pod group preemption: ongoing preemption on nominated nodes")
    assert victims(sim) == set()
    assert res[0].result == "waiting-on-preemption"


def test_cpg_preemptor_event_text() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 1), pod("low", prio=10, node_name="n1"))
    sim.apply(cpg("root", uid="cpg-uid"), pg("leaf", 1, parent="root"), pod("h", group="leaf"))
    (d,) = preempted(sim)
    assert (d.preemptor, d.preemptor_kind) == ("default/root", "compositepodgroup")
    assert d.message == "Preempted by compositepodgroup cpg-uid on node cluster"


# --------------------------------------------------------------------------- plain pods
def test_pod_preemption_minimal_victims_on_cheapest_node() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 2), node("n2", 2))
    sim.apply(pod("a1", prio=50, node_name="n1"), pod("a2", prio=50, node_name="n1"))
    sim.apply(pod("b1", prio=20, node_name="n2"), pod("b2", prio=5, node_name="n2"))
    res = sim.apply(pod("hi", prio=100, uid="hi-uid"))
    (d,) = preempted(sim)  # one victim is enough; n2's highest victim priority is lower
    assert (d.victim, d.rule, d.unit, d.preemptor_kind) == (
        "default/b2",
        RULE_DEFAULT,
        "Pod:default/b2",
        "pod",
    )
    assert d.message == "Preempted by pod hi-uid on node n2"
    assert d.condition_message == "default-scheduler: preempting to accommodate a higher priority pod"
    assert res[0].result == "waiting-on-preemption"
    assert sim.s.pod("default/hi").nominated_node == "n2"  # type: ignore[union-attr]
    sim.advance(0.5)
    assert sim.node_of("hi") == "n2"


def test_pod_preemption_prefers_no_pdb_violation() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 1), node("n2", 1))
    sim.apply(
        pod("guarded", prio=1, node_name="n1", labels={"app": "x"}), pod("free", prio=50, node_name="n2")
    )
    sim.s.upsert_pdb(PodDisruptionBudget("default", "pdb", {"app": "x"}, min_available=1))
    sim.apply(pod("hi", prio=100))
    (d,) = preempted(sim)
    assert d.victim == "default/free" and not d.pdb_violation


def test_pod_preemptor_evicts_whole_all_unit_across_nodes() -> None:
    # TC-62 first variant as a pure test
    sim = Sim(ON)
    sim.apply(node("n1", 2, {"h": "n1"}), node("n2", 2, {"h": "n2"}))
    sim.apply(
        cpg("gp", prio=10, disruption_mode=ALL),
        cpg("par", prio=10, parent="gp"),
        pg("pg1", prio=10, parent="par"),
        pg("pg2", prio=10, parent="par"),
        pod("low-1", group="pg1", prio=10, node_name="n1"),
        pod("low-2", group="pg1", prio=10, node_name="n2"),
        pod("low-3", group="pg2", prio=10, node_name="n2"),
    )
    sim.apply(pod("hi", 2, prio=100, node_selector={"h": "n1"}))
    assert victims(sim) == {"default/low-1", "default/low-2", "default/low-3"}
    assert {d.node for d in preempted(sim)} == {"n1", "n2"}


def test_pod_preemption_failure_message_and_never() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 2), pod("low", prio=10, node_name="n1"))
    sim.apply(pod("big", 3, prio=100))
    msg = [d for d in sim.decisions() if isinstance(d, PodUnschedulable) and d.pod == "default/big"][
        0
    ].message
    assert msg == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    sim.apply(pod("never", 2, prio=100, preemption_policy=NEVER))
    msg = [d for d in sim.decisions() if isinstance(d, PodUnschedulable) and d.pod == "default/never"][
        0
    ].message
    assert (
        msg
        == "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    assert victims(sim) == set()


def test_preemption_algorithm_none_disables_preemption() -> None:
    sim = Sim(replace(ON, preemption_algorithm="None"))
    sim.apply(node("n1", 1), pod("low", prio=10, node_name="n1"))
    sim.apply(pod("hi", prio=100))
    assert victims(sim) == set() and not sim.bound("hi")


def test_preemption_is_deterministic() -> None:
    def run() -> list[Decision]:
        sim = Sim(ON)
        sim.apply(*[node(f"n{i}", 2) for i in range(4)])
        sim.apply(*[pod(f"l{i}", prio=i % 3, node_name=f"n{i % 4}") for i in range(8)])
        sim.apply(pg("g", 3), *[pod(f"h{i}", 2, group="g") for i in range(3)])
        sim.apply(pod("solo", 1, prio=50))
        sim.advance(1.0)
        return sim.decisions()

    first = run()
    assert any(isinstance(d, PodPreempted) for d in first)
    assert first == run()
