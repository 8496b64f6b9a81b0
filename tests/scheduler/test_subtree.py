"""The one walk of a CompositePodGroup subtree (``State.subtree``), which the cycle's group
attempt (``State.tree``), the CPG placement algorithm and the disruption units of preemption read:
pre-order, children in forest order, each CompositePodGroup once, a parent cycle or a missing
parent ends the walk."""

from __future__ import annotations

from scheduler.cycle.composite import Algorithm
from scheduler.preemption.units import Units
from tests.scheduler.sched_helpers import Sim, cpg, node, pg, pod


def _forest() -> Sim:
    sim = Sim()
    sim.apply(node("n1", 64))
    sim.apply(
        cpg("root"),
        cpg("mid", parent="root"),  # older than the leaves of root: first in forest order
        pg("a", parent="root"),
        pg("m2", parent="mid"),
        cpg("deep", parent="mid"),
        pg("m1", parent="mid"),
        pg("d1", parent="deep"),
        pg("b", parent="root"),
        pg("alone"),
        run=False,
    )
    return sim


def test_subtree_is_preorder_in_forest_order() -> None:
    st = _forest().s.state
    leaves, cpgs = st.subtree("default/root")
    assert cpgs == ["default/root", "default/mid", "default/deep"]
    assert leaves == ["default/m2", "default/d1", "default/m1", "default/a", "default/b"]
    assert st.tree("default/root") == (leaves, cpgs)  # every leaf's chain ends at the root
    assert st.subtree("default/mid") == (
        ["default/m2", "default/d1", "default/m1"],
        ["default/mid", "default/deep"],
    )
    assert st.subtree("default/alone") == ([], [])  # not a CompositePodGroup: nothing below


def test_subtree_ends_at_cycles_and_missing_parents() -> None:
    sim = Sim()
    sim.apply(
        cpg("x", parent="y"),
        cpg("y", parent="x"),
        pg("under-x", parent="x"),
        pg("under-y", parent="y"),
        pg("orphan", parent="gone"),
        run=False,
    )
    st = sim.s.state
    # x's children in forest order: y (older), then under-x; y's: x (seen: the walk ends), under-y
    assert st.subtree("default/x") == (["default/under-y", "default/under-x"], ["default/x", "default/y"])
    assert st.subtree("default/y") == (["default/under-x", "default/under-y"], ["default/y", "default/x"])
    # a missing CompositePodGroup still has the children that name it, and is not listed itself
    assert st.subtree("default/gone") == (["default/orphan"], [])
    # the group attempt keeps the leaves whose parent chain ends at the root: a cycle's root is
    # its smallest key, so the walk from y keeps none of them
    assert st.tree("default/x") == (["default/under-y", "default/under-x"], ["default/x", "default/y"])
    assert st.tree("default/y") == ([], ["default/y", "default/x"])


def test_the_readers_use_the_walk() -> None:
    sim = _forest()
    sim.apply(
        pod("p-d1", group="d1", node_name="n1"),
        pod("p-b", group="b", node_name="n1"),
        pod("p-alone", group="alone", node_name="n1"),
        run=False,
    )
    st = sim.s.state
    units = Units(st)
    assert units._subtree_pods("CompositePodGroup", "default/mid") == ["default/p-d1"]
    assert units._subtree_pods("CompositePodGroup", "default/root") == ["default/p-b", "default/p-d1"]
    assert units._subtree_pods("PodGroup", "default/alone") == ["default/p-alone"]
    assert not hasattr(Algorithm, "subtree_leaves")
