"""PodGroupSatisfied (KEP-6413, gate PodGroupSatisfiedCondition): the pure core's decisions."""

from __future__ import annotations

from dataclasses import replace

from scheduler.decisions import GroupSatisfiedChanged
from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, node, pg, pod

ON = replace(ZERO_BACKOFF, feature_gates={**ZERO_BACKOFF.feature_gates, "PodGroupSatisfiedCondition": True})


def _changes(sim: Sim, results: list | None = None) -> list[tuple[str, str, str, str]]:
    return [
        (d.group, d.status, d.reason, d.message)
        for d in sim.decisions(results)
        if isinstance(d, GroupSatisfiedChanged)
    ]


def test_flips_both_ways_with_binds_deletions_and_min_count_edits() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", cpu=4), run=False)
    out = sim.apply(pg("g", 2))
    assert _changes(sim, out) == [("default/g", "False", "BelowMinCount", "0 of 2 members scheduled")]
    out = sim.apply(pod("a", group="g"), pod("b", group="g"))
    assert sim.bound("a", "b")
    assert _changes(sim, out) == [("default/g", "True", "MinCountSatisfied", "2 of 2 members scheduled")]
    # the status change is a cycle of its own, after the attempt that bound the pods
    assert [r.result for r in out][-1] == "status"
    out = sim.apply(pg("g", 3))
    assert _changes(sim, out) == [("default/g", "False", "BelowMinCount", "2 of 3 members scheduled")]
    out = sim.apply(pg("g", 2))
    assert _changes(sim, out) == [("default/g", "True", "MinCountSatisfied", "2 of 2 members scheduled")]
    out = sim.delete("Pod", "default/b")
    assert _changes(sim, out) == [("default/g", "False", "BelowMinCount", "1 of 2 members scheduled")]
    assert sim.cond("g") == ("True", "Scheduled", "")  # PodGroupInitiallyScheduled never regresses
    assert sim.cond("g", "PodGroupSatisfied") == ("False", "BelowMinCount", "1 of 2 members scheduled")


def test_unchanged_condition_emits_nothing_and_basic_groups_need_one() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", cpu=4), pg("basic"), pod("x", group="basic"))
    assert _changes(sim)[-1] == ("default/basic", "True", "MinCountSatisfied", "1 of 1 members scheduled")
    n = len(_changes(sim))
    out = sim.apply(pg("basic", uid="u2"))  # an edit that changes nothing the condition counts
    assert _changes(sim, out) == [] and len(_changes(sim)) == n


def test_gate_off_emits_nothing() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=4), pg("g", 2), pod("a", group="g"), pod("b", group="g"))
    assert sim.bound("a", "b")
    assert _changes(sim) == [] and sim.cond("g", "PodGroupSatisfied") is None
    assert all(r.result != "status" for r in sim.results)


def test_turning_the_gate_on_evaluates_every_group() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=4), pg("g", 2), pod("a", group="g"), pod("b", group="g"))
    sim.s.set_config(ON)
    out = sim.run()
    assert _changes(sim, out) == [("default/g", "True", "MinCountSatisfied", "2 of 2 members scheduled")]
