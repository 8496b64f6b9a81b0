"""Exact messages: PlacementFeasible (TC-20), PreEnqueue (TC-19), backoff, fit errors."""

from __future__ import annotations

import math

import pytest

from scheduler.framework import Code, fit_error_message
from scheduler.messages import go_quote
from scheduler.model import Taint
from scheduler.plugins import gang_scheduling, scheduling_gates
from scheduler.plugins.taint_toleration import reason as taint_reason
from scheduler.queue import backoff_seconds
from tests.scheduler.sched_helpers import Sim, cpg, node, pg, pod


@pytest.mark.parametrize(
    ("m", "s", "r", "code", "msg"),
    [
        (3, 0, 3, Code.WAIT, "minCount (3) is not yet satisfied: 0 scheduled, 3 remaining"),
        (3, 2, 0, Code.UNSCHEDULABLE, "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"),
        (3, 3, 1, Code.SUCCESS, ""),
        (3, 1, 1, Code.UNSCHEDULABLE, "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"),
        (1, 0, 1, Code.WAIT, "minCount (1) is not yet satisfied: 0 scheduled, 1 remaining"),
        (1, 0, 0, Code.UNSCHEDULABLE, "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining"),
        (1, 1, 0, Code.SUCCESS, ""),
        (1, 1, 5, Code.SUCCESS, ""),
    ],
)
def test_placement_feasible_table(m: int, s: int, r: int, code: Code, msg: str) -> None:
    st = gang_scheduling.placement_feasible(m, s, r)
    assert st.code == code
    assert st.message == msg


def test_pre_enqueue_messages() -> None:
    assert (
        gang_scheduling.group_not_found("pg1").message
        == 'waiting for pods\'s pod group "pg1" to appear in scheduling queue'
    )
    assert (
        gang_scheduling.min_count_not_met().message
        == "waiting for minCount pods from a gang to appear in scheduling queue"
    )
    assert gang_scheduling.tree_quorum_not_met("cpg-root").message == (
        'waiting for composite pod group "cpg-root" tree to meet quorum'
    )
    assert gang_scheduling.min_count_not_met().code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert (
        scheduling_gates.pre_enqueue(pod("p", gates=("a", "b"))).message
        == "waiting for scheduling gates: [a b]"
    )
    assert go_quote("x") == '"x"'


def _gates(sim: Sim) -> dict[str, str]:
    out = {}
    for d in sim.decisions():
        if type(d).__name__ == "PodGated":
            out[d.pod] = d.message  # type: ignore[attr-defined]
    return out


def test_tc19_pre_enqueue_table() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=100))
    # pod whose group is unknown
    sim.apply(pod("x1", group="ghost"))
    assert _gates(sim)["default/x1"] == 'waiting for pods\'s pod group "ghost" to appear in scheduling queue'
    assert sim.s.pending_reason("default/x1") == ("GangScheduling", _gates(sim)["default/x1"])
    # gang(3) with 2 pods -> gated; 3 pods -> scheduled
    sim.apply(pg("pg1", 3), pod("a1", group="pg1"), pod("a2", group="pg1"))
    assert _gates(sim)["default/a1"] == "waiting for minCount pods from a gang to appear in scheduling queue"
    assert not sim.bound("a1", "a2")
    sim.apply(pod("a3", group="pg1"))
    assert sim.bound("a1", "a2", "a3")
    # gang(4) with 3 pods -> gated
    sim.apply(pg("pg2", 4), pod("b1", group="pg2"), pod("b2", group="pg2"), pod("b3", group="pg2"))
    assert _gates(sim)["default/b3"] == "waiting for minCount pods from a gang to appear in scheduling queue"
    assert not sim.bound("b1")


def test_tc19_cpg_tree_quorum() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=100, labels={"rack": "r1"}))
    sim.apply(
        cpg("cpg-root", 2, key="rack", workload="w"),
        pg("sub1", 2, parent="cpg-root", workload="w"),
        pg("sub2", None, parent="cpg-root", workload="w"),
        pg("sub3", 2, parent="cpg-root", workload="w"),
    )
    quorum = 'waiting for composite pod group "cpg-root" tree to meet quorum'
    sim.apply(pod("s1a", group="sub1"))  # sub1 not ready (1 < 2)
    assert _gates(sim)["default/s1a"] == quorum
    sim.apply(pod("s3a", group="sub3"))
    sim.apply(pod("s1b", group="sub1"))  # sub1 ready: 1 ready child < 2
    assert not sim.bound("s1a", "s1b", "s3a")
    assert _gates(sim)["default/s1b"] == quorum
    sim.apply(pod("s2a", group="sub2"))  # sub2 ready -> 2 ready children
    assert sim.bound("s1a", "s1b", "s2a")
    assert not sim.bound("s3a")  # sub3 has 1 of 2 pods: unschedulable, others bind


def test_gate_reported_once_and_on_change() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=8))
    sim.apply(pg("g", 3), pod("p1", group="g"))
    sim.apply(pod("p2", group="g"))
    gated = [d for d in sim.decisions() if type(d).__name__ == "PodGated"]
    # p1 reported once (message unchanged when p2 joins), p2 once
    assert sorted(d.pod for d in gated) == ["default/p1", "default/p2"]  # type: ignore[attr-defined]
    sim.apply(pod("p3", group="g", gates=("wait",)))
    gated = [d for d in sim.decisions() if type(d).__name__ == "PodGated"]
    assert [d.message for d in gated[-3:]] == ["waiting for scheduling gates: [wait]"] * 3  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("n", "size", "expected"),
    [
        (1, 1, 1.0),
        (2, 1, 2.0),
        (3, 1, 4.0),
        (4, 1, 8.0),
        (5, 1, 10.0),
        (5, 4, 16.0),
        (9, 4, 20.0),
        (8, 9, 30.0),
    ],
)
def test_backoff_formula(n: int, size: int, expected: float) -> None:
    assert backoff_seconds(n, size, 1.0, 10.0) == pytest.approx(min(2 ** (n - 1), 10 * math.sqrt(size)))
    assert backoff_seconds(n, size, 1.0, 10.0) == pytest.approx(expected)


def test_backoff_after_thousands_of_attempts() -> None:
    """A pod retried every round of a long log (bench.audit: > 1,024 attempts) stays at the
    maximum instead of overflowing 2.0 ** N."""
    for n in (1023, 1024, 1025, 5000, 10**9):
        assert backoff_seconds(n, 4, 1.0, 10.0) == 20.0
        assert backoff_seconds(n, 1, 0.0, 10.0) == 0.0


def test_fit_error_string_sorted_like_kube_scheduler() -> None:
    msg = fit_error_message(
        5, {"Insufficient cpu": 3, "node(s) didn't match Pod's node affinity/selector": 2}
    )
    # Go sort.Strings over "<count> <reason>" strings
    assert (
        msg
        == "0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 3 Insufficient cpu."
    )
    assert fit_error_message(0, {}) == "no nodes available to schedule pods"
    assert taint_reason(Taint("dedicated", "gpu")) == "node(s) had untolerated taint {dedicated: gpu}"


def test_fit_error_from_cycle() -> None:
    sim = Sim()
    sim.apply(
        node("n1", cpu=1),
        node("n2", cpu=1),
        node("n3", cpu=1),
        node("n4", cpu=8, labels={"zone": "b"}),
        node("n5", cpu=8, labels={"zone": "b"}),
    )
    sim.apply(pod("p", cpu=2, node_selector={"zone": "a"}))
    d = [x for x in sim.decisions() if type(x).__name__ == "PodUnschedulable"][0]
    assert d.message == "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector."  # type: ignore[attr-defined]
    sim.apply(pod("q", cpu=2))
    d = [x for x in sim.decisions() if type(x).__name__ == "PodBound"][-1]
    assert d.node == "n4"  # type: ignore[attr-defined]  # equal scores: first node in (seq, name) order
    sim.apply(pod("r", cpu=7, mem_gi=100))
    d = [x for x in sim.decisions() if type(x).__name__ == "PodUnschedulable"][-1]
    # n1..n3 lack cpu and memory, n4 (6 CPU left) lacks both, n5 (8 CPU) only memory
    assert d.message == "0/5 nodes are available: 4 Insufficient cpu, 5 Insufficient memory."  # type: ignore[attr-defined]


def test_node_plugins_messages() -> None:
    sim = Sim()
    sim.apply(
        node("u", cpu=4, unschedulable=True),
        node("t", cpu=4, taints=(Taint("dedicated", "gpu", "NoSchedule"),)),
        node("f", cpu=1, pods=1),
    )
    sim.apply(pod("filler", cpu=0.1, node_name="f"))
    sim.apply(pod("p", cpu=2))
    d = [x for x in sim.decisions() if type(x).__name__ == "PodUnschedulable"][-1]
    assert d.message == (  # type: ignore[attr-defined]
        "0/3 nodes are available: 1 Insufficient cpu, 1 Too many pods, 1 node(s) had untolerated taint "
        "{dedicated: gpu}, 1 node(s) were unschedulable."
    )
