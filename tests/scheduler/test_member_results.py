"""Per-member results of a group attempt, as upstream's ``submitPodGroupResult``
(pkg/scheduler/schedule_one_podgroup.go) hands each pod to the FailureHandler: a pod that fitted
no node gets its own fit error; a pod that was placed and then reverted gets the group's status
(with the PostFilter's message); a pod never evaluated gets the group's status as it was before
PostFilter ran. For PodGroups and for the leaves of a CompositePodGroup."""

from __future__ import annotations

from scheduler.decisions import GroupUnschedulable, PodUnschedulable
from scheduler.model import SchedulerConfig
from tests.scheduler.sched_helpers import Sim, cpg, node, pg, pod

FIT_1 = "0/1 nodes are available: 1 Insufficient cpu."


def _verdicts(sim: Sim) -> dict[str, str]:
    return {d.pod.split("/")[1]: d.message for d in sim.decisions() if isinstance(d, PodUnschedulable)}


def _group_message(sim: Sim) -> str:
    return [d for d in sim.decisions() if isinstance(d, GroupUnschedulable)][-1].message


def test_placed_member_gets_the_group_status_a_failed_one_its_own_fit_error() -> None:
    sim = Sim()
    sim.apply(node("n", cpu=2))
    sim.apply(pg("g", 3), *(pod(f"p{i}", group="g") for i in (1, 2, 3)))
    group = "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    assert _group_message(sim) == group
    assert _verdicts(sim) == {"p1": group, "p2": group, "p3": FIT_1}
    assert sim.cond("g") == ("False", "Unschedulable", group)


def test_never_evaluated_member_gets_the_status_before_postfilter() -> None:
    # preemption runs (no victims): its message is appended to the group's status only
    sim = Sim(SchedulerConfig(backoff_initial_seconds=0, backoff_max_seconds=0))
    sim.apply(node("n", cpu=1))
    sim.apply(pg("g", 3), *(pod(f"p{i}", group="g") for i in (1, 2, 3, 4)))
    before = "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"
    after = _group_message(sim)
    assert after.startswith(before + ", pod group preemption: ")
    # p1 placed then reverted; p2, p3 fitted nowhere; the loop stopped before p4
    assert _verdicts(sim) == {"p1": after, "p2": FIT_1, "p3": FIT_1, "p4": before}


def test_group_scheduled_member_that_did_not_fit_keeps_its_own_fit_error() -> None:
    sim = Sim()
    sim.apply(node("n", cpu=2))
    sim.apply(pg("g", 2), *(pod(f"p{i}", group="g") for i in (1, 2, 3)))
    assert sim.bound("p1", "p2") and not sim.bound("p3")
    assert _verdicts(sim) == {"p3": FIT_1}


def test_composite_leaves_follow_the_same_rule() -> None:
    sim = Sim()
    sim.apply(node("n", cpu=2))
    sim.apply(
        cpg("root", 2, workload="w"),
        pg("a", 1, parent="root", workload="w"),
        pg("b", 2, parent="root", workload="w"),
        pod("a1", group="a"),
        pod("b1", group="b"),
        pod("b2", group="b"),
    )
    v = _verdicts(sim)
    b_status = "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    root_status = sim.cond("root", "CompositePodGroupInitiallyScheduled")
    assert root_status is not None and root_status[1] == "Unschedulable"
    # a1 was placed (leaf a succeeded), then the root failed: the status leaf a completes to
    assert v["a1"] == root_status[2] == sim.cond("a")[2]  # type: ignore[index]
    # b1 was placed, then leaf b failed; b2 fitted nowhere
    assert v["b1"] == b_status and v["b2"] == FIT_1
