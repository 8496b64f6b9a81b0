"""Elastic quota against the pure Scheduler API: objects and lookups, the PreFilter (max at leaf
and ancestors, sum of mins), and the ElasticQuota preemption rules 1-7 of docs/semantics.md Q.4."""

from __future__ import annotations

from dataclasses import replace

from scheduler.decisions import GroupUnschedulable, PodPreempted, PodUnschedulable
from scheduler.model import Pod, PodDisruptionBudget, QuotaNode, SchedulerConfig
from scheduler.preemption import RULE_DEFAULT, RULE_EQ_BORROWED, RULE_EQ_OWN
from scheduler.quota import Quotas, fmt_quantity, node_from_flat, nodes_from_tree
from tests.scheduler.sched_helpers import Sim, node, pg, pod

ON = SchedulerConfig(backoff_initial_seconds=0.0, backoff_max_seconds=0.0)
GPU = "nvidia.com/gpu"


def gpod(name: str, ns: str, gpus: int, prio: int = 100) -> Pod:
    p = pod(name, 0.1, prio=prio, ns=ns)
    return replace(p, requests={**p.requests, GPU: gpus})


def flat(sim: Sim, name: str, ns: str, mn: int, mx: int | None) -> None:
    sim.s.upsert_quota(
        f"ElasticQuota:{ns}/{name}",
        [QuotaNode(name, {GPU: mn}, {GPU: mx} if mx is not None else None, (ns,))],
    )


def messages(sim: Sim, key: str) -> list[str]:
    return [d.message for d in sim.decisions() if isinstance(d, PodUnschedulable) and d.pod == key]


def preempted(sim: Sim) -> list[PodPreempted]:
    return [d for d in sim.decisions() if isinstance(d, PodPreempted)]


# --------------------------------------------------------------------------- objects
def test_fmt_quantity() -> None:
    assert [fmt_quantity("cpu", v) for v in (18000, 500, 1500)] == ["18", "500m", "1500m"]
    assert fmt_quantity("memory", 40 << 30) == "40Gi"
    assert fmt_quantity("memory", 1000) == "1000"
    assert fmt_quantity(GPU, 3) == "3"


def test_tree_nodes_precedence_and_renaming() -> None:
    root = {
        "name": "root",
        "min": {"cpu": 40000},
        "max": {"cpu": 40000},
        "children": [
            {"name": "root.a", "min": {"cpu": 20000}, "max": {"cpu": 20000}, "namespaces": ["team-a"]},
            {"name": "root.b", "min": {"cpu": 20000}, "namespaces": ["team-b"]},
        ],
    }
    qs = Quotas()
    qs.upsert("ElasticQuota:team-a/root.a", [node_from_flat("team-a", "root.a", {"min": {"cpu": 1}})])
    qs.upsert("ElasticQuotaTree:kube-system/t", nodes_from_tree(root))
    assert qs.leaf_for("team-a") == "root.a"  # the tree wins; the flat duplicate is renamed
    assert "root.a@ElasticQuota:team-a/root.a" in qs.nodes
    assert qs.chain("root.a") == ["root.a", "root"]
    assert qs.nodes["root.b"].max is None and qs.leaves == ("root.a", "root.b")
    assert qs.remove("ElasticQuotaTree:kube-system/t")
    assert qs.leaf_for("team-a") == "root.a" and qs.leaf_for("team-b") is None


# --------------------------------------------------------------------------- PreFilter
def test_prefilter_max_at_leaf_and_ancestor_messages() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 64))
    tree = {
        "name": "root",
        "max": {"cpu": 20000},
        "children": [
            {"name": "root.a", "max": {"cpu": 30000}, "namespaces": ["team-a"]},
            {"name": "root.b", "max": {"cpu": 3000}, "namespaces": ["team-b"]},
        ],
    }
    sim.s.upsert_quota("ElasticQuotaTree:kube-system/t", nodes_from_tree(tree))
    sim.apply(pod("a1", 18, ns="team-a", prio=100))
    assert sim.node_of("a1", "team-a") == "n1"
    sim.apply(pod("a2", 4, ns="team-a", prio=100))  # leaf root.a allows 30, the root only 20
    assert messages(sim, "team-a/a2")[0] == (
        "0/1 nodes are available: quota root: cpu used 18 + requested 4 exceeds max 20. "
        "preemption: No preemption victims found for incoming preemptor."
    )
    sim.apply(pod("b1", 2, ns="team-b", prio=100), pod("b2", 2.5, ns="team-b", prio=100))
    assert sim.node_of("b1", "team-b") == "n1"
    # the leaf is checked before its ancestors (the root is full too)
    assert "quota root.b: cpu used 2 + requested 2500m exceeds max 3." in messages(sim, "team-b/b2")[0]


def test_prefilter_sum_of_mins_and_gang_sum() -> None:
    sim = Sim(replace(ON, preemption_algorithm="None"))
    sim.apply(node("n1", 64, extra={GPU: 10}))
    flat(sim, "qa", "team-a", 4, 10)
    flat(sim, "qb", "team-b", 6, 10)
    sim.apply(*[gpod(f"a{i}", "team-a", 2) for i in range(4)])
    assert all(sim.node_of(f"a{i}", "team-a") == "n1" for i in range(4))  # A borrows: 8 > min 4
    res = sim.apply(
        pg("g", 2, ns="team-b"),
        replace(gpod("b1", "team-b", 2), pod_group="g"),
        replace(gpod("b2", "team-b", 2), pod_group="g"),
    )
    gu = [d for d in res[0].decisions if isinstance(d, GroupUnschedulable)][0]
    # the gang is checked as a whole: 8 used + 4 requested > 10 (the sum of all mins)
    assert (
        gu.message == "quota qb: nvidia.com/gpu used 8 + requested 4 exceeds the sum of min 10 of all quotas"
    )


def test_pods_outside_any_quota_are_not_checked() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 64, extra={GPU: 10}))
    flat(sim, "qa", "team-a", 0, 0)
    sim.apply(gpod("free", "other", 5))
    assert sim.node_of("free", "other") == "n1"


# --------------------------------------------------------------------------- rules
def story1(algo: str = "Auto") -> Sim:
    sim = Sim(replace(ON, preemption_algorithm=algo))
    sim.apply(node("n1", 64, extra={GPU: 10}))
    flat(sim, "quota-a", "team-a", 4, 6)
    flat(sim, "quota-b", "team-b", 6, 8)
    sim.apply(*[gpod(f"a{i}", "team-a", 2, prio=200) for i in range(3)])
    sim.apply(*[gpod(f"b{i}", "team-b", 1) for i in range(3)])
    return sim


def test_rule4_reclaims_borrowed_capacity_regardless_of_priority() -> None:
    sim = story1()
    sim.apply(gpod("b-new", "team-b", 3))
    (d,) = preempted(sim)
    assert d.rule == RULE_EQ_BORROWED and d.victim.startswith("team-a/")
    assert d.victim_priority == 200 > d.preemptor_priority == 100
    assert d.quota == {
        "name": "quota-b",
        "used": {GPU: 3},
        "min": {GPU: 6},
        "max": {GPU: 8},
        "request": {GPU: 3},
        "victim": {"name": "quota-a", "used": {GPU: 6}, "min": {GPU: 4}, "max": {GPU: 6}},
    }
    sim.advance(0.5)
    assert sim.node_of("b-new", "team-b") == "n1"
    # rule 5 afterwards: B is at its min, only lower-priority pods of B itself may go: none
    sim.apply(gpod("b-more", "team-b", 1))
    assert len(preempted(sim)) == 1 and sim.node_of("b-more", "team-b") is None
    assert messages(sim, "team-b/b-more")[-1].endswith(
        "preemption: No preemption victims found for incoming preemptor."
    )


def test_rule5_own_quota_lower_priority_only() -> None:
    sim = Sim(ON)
    sim.apply(node("n1", 64, extra={GPU: 10}))
    flat(sim, "qa", "team-a", 3, 4)
    flat(sim, "qb", "team-b", 4, 6)
    flat(sim, "qc", "team-c", 3, 4)
    sim.apply(*[gpod(f"a{i}", "team-a", 1, prio=1) for i in range(2)])
    sim.apply(*[gpod(f"c{i}", "team-c", 1, prio=1) for i in range(3)])
    sim.apply(gpod("b-big", "team-b", 4), gpod("b-low", "team-b", 1, prio=10))
    sim.apply(gpod("b-new", "team-b", 1, prio=50))
    (d,) = preempted(sim)
    assert (d.victim, d.rule) == ("team-b/b-low", RULE_EQ_OWN)
    assert d.quota is not None and d.quota["used"] == {GPU: 5}


def test_rule6_preemptor_outside_quota_cannot_preempt() -> None:
    sim = Sim(replace(ON, preemption_algorithm="ElasticQuota"))
    sim.apply(node("n1", 1))
    flat(sim, "qa", "team-a", 1, 1)
    sim.apply(pod("low", prio=1, node_name="n1"))
    sim.apply(pod("hi", prio=100))
    assert preempted(sim) == []
    assert messages(sim, "default/hi")[-1].endswith(
        "elastic quota preemption: not eligible: pod default/hi is not in any elastic quota."
    )


def test_auto_uses_default_preemption_outside_quotas() -> None:
    sim = Sim(ON)  # Auto
    sim.apply(node("n1", 1))
    flat(sim, "qa", "team-a", 1, 1)
    sim.apply(pod("low", prio=1, node_name="n1"))
    sim.apply(pod("hi", prio=100))
    (d,) = preempted(sim)
    assert d.rule == RULE_DEFAULT and d.quota is None


def test_rule3_pdb_protected_victims_are_not_eligible() -> None:
    sim = story1()
    sim.s.upsert_pdb(PodDisruptionBudget("team-a", "keep", {}, min_available=3))
    sim.apply(gpod("b-new", "team-b", 3))
    assert preempted(sim) == []


def test_default_algorithm_ignores_quota_rules_but_respects_prefilter() -> None:
    sim = story1("Default")
    sim.apply(gpod("b-new", "team-b", 3))
    # Default: only strictly lower priority victims (A's pods are 200 > 100): nothing to take
    assert preempted(sim) == []


def test_quota_removed_requeues_and_unblocks() -> None:
    sim = Sim(replace(ON, preemption_algorithm="None"))
    sim.apply(node("n1", 64, extra={GPU: 10}))
    flat(sim, "qa", "team-a", 0, 1)
    sim.apply(gpod("a", "team-a", 2))
    assert sim.node_of("a", "team-a") is None
    sim.s.remove_quota("ElasticQuota:team-a/qa")
    sim.run()
    assert sim.node_of("a", "team-a") == "n1"
