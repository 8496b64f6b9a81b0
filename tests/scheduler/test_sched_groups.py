"""Scenario-like tests of gang / basic PodGroups and the queue (spec scenarios A and B)."""

from __future__ import annotations

from scheduler.decisions import (
    EntityRequeued,
    GroupConditionChanged,
    GroupScheduled,
    GroupUnschedulable,
    PodBound,
    PodUnschedulable,
)
from tests.scheduler.sched_helpers import DEFAULT_BACKOFF, Sim, node, pg, pod

ZONE = {"topology.kubernetes.io/zone": "zone1"}


def test_tc01_gang_schedules() -> None:
    sim = Sim()
    sim.apply(node("node1", cpu=4, labels=ZONE))
    res = sim.apply(pg("pg1", 3), pod("p1", group="pg1"), pod("p2", group="pg1"), pod("p3", group="pg1"))
    assert sim.bound("p1", "p2", "p3")
    assert sim.cond("pg1") == ("True", "Scheduled", "")
    kinds = [type(d).__name__ for d in res[-1].decisions]
    assert kinds == ["PodBound", "PodBound", "PodBound", "GroupScheduled", "GroupConditionChanged"]
    assert res[-1].result == "scheduled"


def test_tc02_gang_waits_for_quorum() -> None:
    sim = Sim()
    sim.apply(node("node1", cpu=4))
    res = sim.apply(pg("pg1", 3), pod("p1", group="pg1"), pod("p2", group="pg1"))
    assert [r.result for r in res] == ["gated"]
    assert not sim.bound("p1") and not sim.bound("p2")
    assert sim.s.pending_reason("default/p1") == (
        "GangScheduling",
        "waiting for minCount pods from a gang to appear in scheduling queue",
    )
    assert sim.cond("pg1") is None  # never attempted
    sim.apply(pod("p3", group="pg1"))
    assert sim.bound("p1", "p2", "p3")
    assert sim.s.pending_reason("default/p1") is None


def test_tc04_min_count_scheduled_extra_member_waits() -> None:
    sim = Sim()
    sim.apply(node("node1", cpu=4), pod("small-blocker", cpu=1, node_name="node1", group=None, prio=0))
    sim.apply(*[pod(f"p{i}", group="pg1") for i in range(1, 5)])
    assert not any(sim.bound(f"p{i}") for i in range(1, 5))
    res = sim.apply(pg("pg1", 3))
    assert sum(sim.bound(f"p{i}") for i in range(1, 5)) == 3
    assert not sim.bound("p4")  # queue order: p1..p3 first
    first = res[0]
    assert first.result == "scheduled"
    assert isinstance(first.decisions[-1], EntityRequeued) and first.decisions[-1].queue == "active"
    # leftover retried at once: S=3 >= 3 but no new pod -> "no pods were schedulable"
    retry = res[1]
    assert retry.result == "unschedulable"
    gu = [d for d in retry.decisions if isinstance(d, GroupUnschedulable)][0]
    assert gu.message == "no pods were schedulable"
    assert sim.cond("pg1") == ("True", "Scheduled", "")  # never regresses
    assert not any(isinstance(d, GroupConditionChanged) for d in retry.decisions)
    sim.delete("Pod", "default/small-blocker")
    assert sim.bound("p4")


def test_tc06a_basic_group_no_all_or_nothing() -> None:
    sim = Sim()
    sim.apply(node("node1", cpu=4))
    sim.apply(pg("pg1"), pod("p1", group="pg1"))
    assert sim.bound("p1")
    sim.apply(pod("p2", group="pg1"), pod("p3", group="pg1"))
    assert sim.bound("p2", "p3")


def test_tc06b_basic_group_partial_then_all() -> None:
    sim = Sim()
    sim.apply(node("node1", cpu=4), pod("blocker", cpu=2, node_name="node1", prio=0))
    sim.apply(pod("p1", group="pg1"), pod("p2", group="pg1"), pod("p3", group="pg1"))
    gated = [d for d in sim.decisions() if type(d).__name__ == "PodGated"]
    assert {d.message for d in gated} == {'waiting for pods\'s pod group "pg1" to appear in scheduling queue'}  # type: ignore[attr-defined]
    sim.apply(pg("pg1"))
    assert [sim.bound(f"p{i}") for i in (1, 2, 3)] == [True, True, False]
    assert sim.cond("pg1") == ("True", "Scheduled", "")
    un = [d for d in sim.decisions() if isinstance(d, PodUnschedulable) and d.pod == "default/p3"]
    assert un and un[0].message == "0/1 nodes are available: 1 Insufficient cpu."
    sim.delete("Pod", "default/blocker")
    assert sim.bound("p3")


def test_tc12_basic_member_arrives_after_others_ran() -> None:
    sim = Sim()
    sim.apply(node("node", cpu=2))
    sim.apply(pg("pg"), pod("p1", cpu=2, group="pg"))
    assert sim.bound("p1")
    sim.apply(pod("p2", cpu=2, group="pg"))
    assert not sim.bound("p2")
    gu = [d for d in sim.decisions() if isinstance(d, GroupUnschedulable)][-1]
    assert gu.message == "no pods were schedulable"
    sim.apply(pod("p3", cpu=2, group="pg"))
    assert not sim.bound("p2") and not sim.bound("p3")
    sim.apply(node("node2", cpu=6))
    assert sim.bound("p1", "p2", "p3")


def test_tc14_one_gated_member_gates_whole_group() -> None:
    for policy in (2, None):
        sim = Sim()
        sim.apply(node("node", cpu=2), node("node2", cpu=6))
        sim.apply(pg("pg", policy), pod("p1", gates=("g",), group="pg"))
        sim.apply(pod("p2", group="pg"), pod("p3", group="pg"))
        assert not any(sim.bound(p) for p in ("p1", "p2", "p3"))
        assert sim.s.pending_reason("default/p2") == ("SchedulingGates", "waiting for scheduling gates: [g]")
        sim.apply(pod("p1", group="pg"))  # gate removed
        assert sim.bound("p1", "p2", "p3"), policy


def test_tc14_variant_gang_unschedulable_then_gated_member() -> None:
    sim = Sim()
    sim.apply(node("node", cpu=2))
    sim.apply(pg("pg", 2), pod("p1", cpu=2, group="pg"), pod("p2", cpu=2, group="pg"))
    assert not sim.bound("p1") and not sim.bound("p2")
    sim.apply(pod("p3", cpu=2, group="pg", gates=("g",)))
    sim.apply(node("node2", cpu=6))
    assert not any(sim.bound(p) for p in ("p1", "p2", "p3"))
    sim.apply(pod("p3", cpu=2, group="pg"))
    assert sim.bound("p1", "p2", "p3")


def test_tc16_deleting_pod_group_parks_members() -> None:
    sim = Sim()
    sim.apply(node("node", cpu=2))
    sim.apply(pg("pg", 2), pod("p1", group="pg"), pod("p2", group="pg"))
    assert sim.bound("p1", "p2")
    sim.delete("PodGroup", "default/pg")
    sim.apply(pod("p3", group="pg"))
    assert not sim.bound("p3")
    assert sim.s.pending_reason("default/p3") == (
        "GangScheduling",
        'waiting for pods\'s pod group "pg" to appear in scheduling queue',
    )
    assert sim.s.group_conditions("default/pg") == {}


def test_tc16_variant_unschedulable_member_parked_after_delete() -> None:
    sim = Sim()
    sim.apply(node("node", cpu=2))
    sim.apply(pg("pg", 2), pod("p1", group="pg"), pod("p2", group="pg"), pod("p3", cpu=2, group="pg"))
    assert sim.bound("p1", "p2") and not sim.bound("p3")
    n = len(sim.results)
    sim.delete("PodGroup", "default/pg")
    new = sim.results[n:]
    assert [r.result for r in new] == ["gated"]
    assert sim.s.pending_reason("default/p3")[1].startswith("waiting for pods's pod group")  # type: ignore[index]


def test_tc17_failed_attempt_requeues_without_event() -> None:
    sim = Sim()
    sim.apply(node("node", cpu=2))
    res = sim.apply(pg("pg", 2), pod("p1", cpu=2, group="pg"), pod("p2", cpu=2, group="pg"))
    assert len(res) == 1 and res[0].result == "unschedulable"  # not retried at the same time
    rq = res[0].decisions[-1]
    assert isinstance(rq, EntityRequeued) and rq.queue == "active" and rq.backoff_until == 0.0
    gu = [d for d in res[0].decisions if isinstance(d, GroupUnschedulable)][0]
    assert gu.message == "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    assert gu.diagnosis["rejected"] == {"NodeResourcesFit": 1}
    assert sim.cond("pg") == (
        "False",
        "Unschedulable",
        "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
    )
    pu = [d for d in res[0].decisions if isinstance(d, PodUnschedulable)]
    assert [d.pod for d in pu] == ["default/p1", "default/p2"]
    # upstream's submitPodGroupResult: p1 was placed, then reverted -> the group's status; p2 fitted
    # no node -> its own fit error
    assert [d.message for d in pu] == [gu.message, "0/1 nodes are available: 1 Insufficient cpu."]
    # time moves: retried (and fails again, condition unchanged -> no new condition decision)
    res2 = sim.advance(1)
    assert [r.result for r in res2] == ["unschedulable"]
    assert not any(isinstance(d, GroupConditionChanged) for d in res2[0].decisions)


def test_tc17_basic_variant() -> None:
    sim = Sim()
    sim.apply(node("node", cpu=2))
    res = sim.apply(pg("pg"), pod("p1", cpu=2, group="pg"), pod("p2", cpu=2, group="pg"))
    assert sim.bound("p1") and not sim.bound("p2")
    assert [r.result for r in res] == ["scheduled", "unschedulable"]
    assert isinstance(res[0].decisions[-1], EntityRequeued) and res[0].decisions[-1].queue == "active"


def test_backoff_grows_and_next_timer() -> None:
    sim = Sim(DEFAULT_BACKOFF)
    sim.apply(node("node", cpu=2))
    res = sim.apply(pg("pg", 2), pod("p1", cpu=2, group="pg"), pod("p2", cpu=2, group="pg"))
    rq = res[-1].decisions[-1]
    assert (
        isinstance(rq, EntityRequeued)
        and rq.queue == "backoff"
        and rq.attempts == 1
        and rq.backoff_until == 1.0
    )
    assert sim.s.next_timer(0.0) == 1.0
    out = sim.advance(1.0)
    rq = out[-1].decisions[-1]
    assert isinstance(rq, EntityRequeued) and rq.attempts == 2 and rq.backoff_until == 3.0
    out = sim.advance(40)
    times = [r.now for r in out]
    cap = 10 * 2**0.5  # max * sqrt(entity size = 2 pods)
    assert times == [3.0, 7.0, 15.0, 15.0 + cap, 40.0][: len(times)]
    assert times[:4] == [3.0, 7.0, 15.0, 15.0 + cap]


def test_plain_pod_waits_for_event_or_flush() -> None:
    sim = Sim(DEFAULT_BACKOFF)
    sim.apply(node("node", cpu=1))
    res = sim.apply(pod("big", cpu=2, group=None))
    rq = res[0].decisions[-1]
    assert isinstance(rq, EntityRequeued) and rq.queue == "unschedulable"
    assert sim.s.next_timer(0.0) == 300.0  # flush
    assert sim.advance(299) == []
    out = sim.advance(1)
    assert [r.result for r in out] == ["unschedulable"]
    sim.apply(node("node2", cpu=4))  # event, but still backing off (2 s after 2nd attempt)
    assert not sim.bound("big")
    sim.advance(2)
    assert sim.node_of("big") == "node2"


def test_group_scheduled_decision_and_bound_counts() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=2), node("n2", cpu=2))
    res = sim.apply(pg("g", 3), *[pod(f"p{i}", group="g") for i in range(4)])
    gs = [d for d in res[0].decisions if isinstance(d, GroupScheduled)][0]
    assert gs.pods == ("default/p0", "default/p1", "default/p2", "default/p3")
    bound = [d for d in res[0].decisions if isinstance(d, PodBound)]
    assert {d.node for d in bound} == {"n1", "n2"} and all(d.group == "default/g" for d in bound)
    usage = {n: r for n, _, r in sim.s.node_usage()}
    assert usage["n1"]["cpu"] == 2000 and usage["n2"]["pods"] == 2
