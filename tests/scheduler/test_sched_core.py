"""Core invariants: vectorized filters == reference, snapshot journal, placement fast path ==
exact evaluation, determinism, validation messages, compact diagnosis, profile plugins, import rule."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from scheduler import reference
from scheduler.cycle import Algorithm, PostFilterRequest, PostFilterResult, gang_outcome
from scheduler.decisions import GroupUnschedulable, PodNominated, PodUnschedulable
from scheduler.framework import SUCCESS, Status, diagnose
from scheduler.model import (
    NEVER,
    Node,
    NodeSelectorTerm,
    Pod,
    PreferredTerm,
    Requirement,
    SchedulerConfig,
    Taint,
    Toleration,
)
from scheduler.plugins.topology_placement import generate
from scheduler.scheduler import Scheduler
from scheduler.snapshot import Snapshot, make_demand
from tests.scheduler.sched_helpers import DEFAULT_BACKOFF, GI, Sim, cpg, node, pg, pod

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- random clusters
def random_cluster(rng: random.Random, n: int) -> list[Node]:
    nodes = []
    for i in range(n):
        labels = {"zone": rng.choice(["a", "b", "c"]), "rack": f"r{rng.randrange(6)}"}
        if rng.random() < 0.5:
            labels["gen"] = str(rng.randrange(1, 6))
        if rng.random() < 0.2:
            labels["gpu"] = "true"
        taints: tuple[Taint, ...] = ()
        if rng.random() < 0.2:
            taints = (
                Taint(
                    rng.choice(["dedicated", "spot"]),
                    rng.choice(["x", "y", ""]),
                    rng.choice(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
                ),
            )
        alloc = {
            "cpu": rng.choice([2000, 4000, 8000]),
            "memory": rng.choice([4, 8, 16]) * GI,
            "pods": rng.choice([3, 110]),
        }
        if labels.get("gpu"):
            alloc["nvidia.com/gpu"] = rng.choice([1, 2, 4])
        nodes.append(Node(f"n{i:03d}", alloc, labels, taints, rng.random() < 0.1, seq=rng.randrange(5)))
    return nodes


def random_pod(rng: random.Random, i: int) -> Pod:
    req = {"cpu": rng.choice([0, 250, 1000, 3000]), "memory": rng.choice([0, 1, 3, 6]) * GI}
    if rng.random() < 0.2:
        req["nvidia.com/gpu"] = 1
    sel = {"zone": rng.choice(["a", "b"])} if rng.random() < 0.3 else {}
    terms: tuple[NodeSelectorTerm, ...] = ()
    r = rng.random()
    if r < 0.15:
        terms = (
            NodeSelectorTerm((Requirement("gen", rng.choice(["Gt", "Lt"]), (str(rng.randrange(1, 5)),)),)),
        )
    elif r < 0.3:
        terms = (
            NodeSelectorTerm((Requirement("rack", "NotIn", ("r1", "r2")),)),
            NodeSelectorTerm((Requirement("gpu", "Exists"),)),
        )
    elif r < 0.35:
        terms = (NodeSelectorTerm((Requirement("gen", "DoesNotExist"),)),)
    tols: tuple[Toleration, ...] = ()
    if rng.random() < 0.3:
        tols = (Toleration(key="dedicated", operator="Exists"),)
    if rng.random() < 0.1:
        tols += (Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),)
    pref: tuple[PreferredTerm, ...] = ()
    if rng.random() < 0.3:
        pref = (PreferredTerm(rng.randrange(1, 100), NodeSelectorTerm((Requirement("zone", "In", ("c",)),))),)
    return Pod(
        "default",
        f"p{i}",
        req,
        node_selector=sel,
        required_terms=terms,
        tolerations=tols,
        preferred_terms=pref,
        seq=i,
    )


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_vectorized_filters_equal_reference(seed: int) -> None:
    rng = random.Random(seed)
    nodes = random_cluster(rng, 60)
    s = Scheduler()
    for nd in nodes:
        s.upsert_node(nd)
    ref = reference.ref_nodes(nodes)
    snap = s.state.snap
    ps = s.state.podsched
    for i in range(120):
        p = random_pod(rng, i)
        pi = ps.info(p)
        results = ps.filter_results(pi)
        ok = np.logical_and.reduce([r.ok for r in results])
        d = make_demand(p.requests)
        for j, rn in enumerate(ref):
            assert snap.names[j] == rn.node.name
            verdict = reference.filter_node(p, d, rn)
            assert bool(ok[j]) == (verdict is None), (i, j)
            if verdict is not None:
                first = next(fr for fr in results if not fr.ok[j])
                assert first.plugin == verdict[0]
                assert sorted(first.node_reasons(j)) == sorted(verdict[1])
        expected = reference.fit_error(p, ref)
        assert diagnose(results, None).fit_error() == expected
        # the same node is selected; then bind it on both sides
        want = reference.schedule(p, ref, s.config)
        got, _ = ps.schedule(p)
        assert got == want, (i, got, want)
        if got >= 0:
            snap.assume(p.key, got, pi.demand, None)
            ref[got].add(d)


def test_most_allocated_strategy_matches_reference() -> None:
    rng = random.Random(9)
    nodes = random_cluster(rng, 40)
    cfg = SchedulerConfig(
        scoring_strategy="MostAllocated", resource_weights={"cpu": 2, "memory": 1, "nvidia.com/gpu": 3}
    )
    s = Scheduler(cfg)
    for nd in nodes:
        s.upsert_node(nd)
    ref = reference.ref_nodes(nodes)
    for i in range(80):
        p = random_pod(rng, i)
        got, pi = s.state.podsched.schedule(p)
        assert got == reference.schedule(p, ref, cfg)
        if got >= 0:
            s.state.snap.assume(p.key, got, pi.demand, None)
            ref[got].add(make_demand(p.requests))


def test_snapshot_backup_restore_is_exact() -> None:
    snap = Snapshot()
    for i in range(5):
        snap.upsert_node(Node(f"n{i}", {"cpu": 4000, "memory": 8 * GI}))
    snap.refresh()
    snap.add_pod("d/a", "n1", make_demand({"cpu": 1000}), None)
    before = (
        snap.free.copy(),
        snap.nz.copy(),
        dict(snap.group_pods),
        {k: set(v) for k, v in snap.node_pods.items()},
    )
    mark = snap.backup()
    snap.assume("d/b", 2, make_demand({"cpu": 500, "nvidia.com/gpu": 1}), "d/g")
    inner = snap.backup()
    snap.assume("d/c", 3, make_demand({"memory": GI}), "d/g")
    snap.remove_pod("d/a")
    snap.release(inner)
    assert snap.group_pods["d/g"] == {"d/b": "n2", "d/c": "n3"}
    snap.restore(mark)
    assert np.array_equal(snap.free[: before[0].shape[0]], before[0])
    assert np.array_equal(snap.nz, before[1])
    assert snap.group_pods == before[2] and snap.node_pods == before[3]
    assert len(snap._journal) == 0


@pytest.mark.parametrize("seed", range(6))
def test_placement_prediction_equals_exact_evaluation(seed: int) -> None:
    rng = random.Random(seed)
    s = Scheduler()
    for i in range(40):
        s.upsert_node(
            Node(
                f"n{i:02d}",
                {"cpu": rng.choice([1000, 2000, 4000]), "memory": 8 * GI, "pods": rng.choice([2, 110])},
                {"rack": f"r{rng.randrange(5)}"},
                seq=i,
            )
        )
    for i in range(30):
        nd = f"n{rng.randrange(40):02d}"
        s.upsert_pod(Pod("d", f"e{i}", {"cpu": rng.choice([500, 1000])}, node_name=nd), 0)
    group = pg("g", rng.randrange(1, 9), key="rack", ns="d")
    s.upsert_pod_group(group, 0)
    pods = [Pod("d", f"p{i}", {"cpu": 1000}, pod_group="g", seq=i) for i in range(rng.randrange(1, 12))]
    for p in pods:
        s.upsert_pod(p, 0)
    st = s.state
    alg = Algorithm(st, {group.key: pods}, s.profile)
    placements, _ = generate(st.snap, "rack", st.snap.all_nodes, [])
    predicted = alg._predict(group, alg._infos(pods), placements, st.snap.all_nodes, "rack")
    for pl, ev in zip(placements, predicted, strict=True):
        exact = alg._evaluate_exact(group, pods, pl)
        assert (ev.status, ev.placed, ev.any_scheduled) == (
            exact.status,
            exact.placed,
            exact.any_scheduled,
        ), pl.name


def test_gang_outcome_closed_form_matches_loop() -> None:
    from scheduler.plugins.gang_scheduling import placement_feasible

    for m in range(1, 6):
        for s0 in range(0, 4):
            for n in range(0, 6):
                for placed in range(0, n + 1):
                    st = placement_feasible(m, s0, n)
                    any_s = False
                    if st.code.name != "UNSCHEDULABLE":
                        s, r = s0, n
                        for i in range(1, n + 1):
                            ok = i <= placed
                            r -= 1
                            s += ok
                            st = placement_feasible(m, s, r)
                            if st.code.name == "UNSCHEDULABLE":
                                break
                            any_s = any_s or ok
                    got, got_any = gang_outcome(m, s0, n, placed)
                    assert got.message == st.message and got.ok == st.ok
                    assert got_any == (any_s if st.ok else False)


# --------------------------------------------------------------------------- validation (§11.2)
@pytest.mark.parametrize(
    ("objs", "msg"),
    [
        (
            [pg("g", 1, prio=100), pod("p", prio=50, group="g")],
            'all pods in a pod group hierarchy should have the same priority as the root pod group\'s priority, got 50 ("p") and 100 ("g")',
        ),
        (
            [pg("g", 1, prio=100), pod("p", group="g", scheduler_name="other")],
            'profile not found for scheduler name "other"',
        ),
        (
            [pg("g", 2, prio=100), pod("p", group="g"), pod("q", group="g", scheduler_name="other")],
            'all pods in a pod group hierarchy should have the same .spec.schedulerName set, got: "other" ("q") and "default-scheduler" ("p")',
        ),
        (
            [pg("g", 1, prio=100), pod("p", group="g", preemption_policy=NEVER)],
            "all pods in a pod group hierarchy should have the same preemption policy as the root pod group's preemption policy, "
            'got Never ("p") and PreemptLowerPriority ("g")',
        ),
        (
            [
                cpg("root", None, prio=100, workload="w"),
                pg("g", 1, prio=50, parent="root", workload="w"),
                pod("p", group="g", prio=100),
            ],
            'all pod groups in a hierarchy should have the same priority as the root pod group\'s priority, got 50 ("g") and 100 ("root")',
        ),
        (
            [
                cpg("root", None, prio=100, workload="w"),
                pg("g", 1, parent="root", workload="w", preemption_policy=NEVER),
                pod("p", group="g"),
            ],
            "all pod groups in a hierarchy should have the same preemption policy as the root pod group's preemption policy, "
            'got Never ("g") and PreemptLowerPriority ("root")',
        ),
    ],
)
def test_hierarchy_validation_messages(objs: list[object], msg: str) -> None:
    sim = Sim()
    sim.apply(node("n", cpu=8, labels={"rack": "r"}))
    res = sim.apply(*objs)
    assert res[-1].result == "error"
    gu = [d for d in res[-1].decisions if isinstance(d, GroupUnschedulable)][0]
    assert (gu.reason, gu.message) == ("SchedulerError", msg)
    assert sim.cond("g") == ("False", "SchedulerError", msg)
    assert all(
        d.reason == "SchedulerError" and d.message == msg
        for d in res[-1].decisions
        if isinstance(d, PodUnschedulable)
    )


def test_validation_includes_running_members_and_gate_off_wording() -> None:
    cfg = SchedulerConfig(
        backoff_initial_seconds=0,
        backoff_max_seconds=0,
        preemption_algorithm="None",
        feature_gates={"PodGroupPreemptionPolicy": False},
    )
    sim = Sim(cfg)
    sim.apply(node("n", cpu=8))
    sim.apply(pg("g", 1), pod("p", group="g", preemption_policy=NEVER), pod("q", group="g"))
    assert sim.cond("g") == (
        "False",
        "SchedulerError",
        'all pods in a pod group hierarchy should have the same preemption policy, got PreemptLowerPriority ("q") and Never ("p")',
    )
    sim2 = Sim()
    sim2.apply(node("n", cpu=8))
    sim2.apply(pg("g", 1), pod("run", group="g", prio=7, node_name="n"), pod("q", group="g"))
    assert sim2.cond("g")[2].endswith('got 7 ("run") and 100 ("g")')  # type: ignore[index]


# --------------------------------------------------------------------------- determinism
def _scenario() -> list[str]:
    rng = random.Random(5)
    sim = Sim(DEFAULT_BACKOFF)
    sim.apply(*[node(f"n{i}", cpu=rng.choice([2, 4]), labels={"rack": f"r{i % 3}"}) for i in range(5)])
    groups = {"g1": pg("g1", 3, key="rack"), "g2": pg("g2", 2), "g3": pg("g3", None, prio=200), None: None}
    objs: list[object] = [g for g in groups.values() if g is not None]
    for i in range(24):
        g = rng.choice(["g1", "g2", "g3", None])
        objs.append(pod(f"p{i}", cpu=rng.choice([1, 2]), group=g, prio=200 if g == "g3" else 100))
    sim.apply(*objs)
    sim.advance(30)
    for victim in ("p3", "p7", "p11"):
        sim.delete("Pod", f"default/{victim}")
        sim.advance(20)
    sim.apply(node("extra", cpu=16, labels={"rack": "r9"}))
    sim.advance(400)
    return [repr(r) for r in sim.results]


def test_determinism_same_inputs_same_decisions() -> None:
    a, b = _scenario(), _scenario()
    assert a == b and len(a) > 10
    assert any("unschedulable" in r for r in a) and any("'scheduled'" in r for r in a)


def test_queue_order_priority_then_time_then_seq() -> None:
    sim = Sim()
    sim.apply(node("n", cpu=1))
    res = sim.apply(pod("low", prio=1), pod("high", prio=10), pod("mid", prio=5))
    assert [r.entity for r in res] == ["default/high", "default/mid", "default/low"]
    assert sim.node_of("high") == "n"


def test_compact_diagnosis_under_1kb_at_5000_nodes() -> None:
    s = Scheduler(DEFAULT_BACKOFF)
    for i in range(5000):
        labels = {"rack": f"rack-{i // 100:02d}"}
        if i % 3 == 0:
            labels["zone"] = "z"
        s.upsert_node(Node(f"node-{i:05d}", {"cpu": 4000, "memory": 16 * GI}, labels, seq=i))
    s.upsert_pod_group(pg("g", 200, key="rack", ns="d"), 0)
    for i in range(200):
        s.upsert_pod(
            Pod(
                "d",
                f"p{i}",
                {"cpu": 3000},
                node_selector={"zone": "z"} if i % 2 else {},
                priority=100,
                pod_group="g",
                seq=i,
            ),
            0,
        )
    res = s.run_until_idle(0)
    gu = [d for r in res for d in r.decisions if isinstance(d, GroupUnschedulable)][0]
    size = len(json.dumps(gu.diagnosis, separators=(",", ":")))
    assert size <= 1024, size
    assert gu.diagnosis["placements"]["generated"] == 50
    pl = gu.diagnosis["placements"]
    assert 4 <= len(pl["results"]) <= 8 and len(pl["results"]) + pl["more"] == 50
    assert gu.message.startswith(
        "0/50 placements are available, first placement status: minCount (200) cannot be satisfied"
    )


def test_post_filter_hook_called_and_applied() -> None:
    calls: list[PostFilterRequest] = []

    def hook(req: PostFilterRequest) -> PostFilterResult | None:
        calls.append(req)
        if req.kind == "podgroup":
            st, props = req.reschedule()
            assert not st.ok and props == {}
            return PostFilterResult(
                SUCCESS.append_reason(
                    "pod group preemption: found a placement for podgroup, preempting 1 victims"
                ),
                {"default/h1": "n1"},
                ("default/low",),
            )
        return None

    @dataclass
    class Recorder:  # a PostFilter plugin, replacing preemption in this scheduler's profile
        name: str = "Recorder"

        def post_filter(self, req: PostFilterRequest) -> PostFilterResult | None:
            return hook(req)

    sim = Sim()
    sim.s.use_profile(replace(sim.s.profile, post_filter=(Recorder(),)))
    sim.apply(node("n1", cpu=1), pod("low", prio=10, node_name="n1"))
    res = sim.apply(pg("g", 1), pod("h1", group="g"))
    assert [c.kind for c in calls] == ["podgroup"]
    assert res[0].result == "waiting-on-preemption"
    assert sim.s.pod("default/low") is None
    assert sim.s.pod("default/h1").nominated_node == "n1"  # type: ignore[union-attr]
    assert any(isinstance(d, PodNominated) and d.node == "n1" for d in res[0].decisions)
    cond = sim.cond("g")
    assert cond is not None and cond[1] == "Unschedulable"
    assert "minCount (1) cannot be satisfied" in cond[2]
    assert "pod group preemption: found a placement for podgroup, preempting 1 victims" in cond[2]
    sim.advance(0.5)
    assert sim.node_of("h1") == "n1"
    # plain pods reach the hook too
    sim.apply(pod("solo", cpu=5))
    assert [c.kind for c in calls][-1] == "pod"


def test_nominated_pods_reserve_their_node_for_lower_priority() -> None:
    sim = Sim()
    sim.apply(node("n1", cpu=2))
    sim.apply(pod("h", cpu=2, prio=100, gates=("hold",), nominated_node="n1"))
    sim.apply(pod("low", cpu=1, prio=10))
    assert not sim.bound("low")
    msg = [d for d in sim.decisions() if isinstance(d, PodUnschedulable) and d.pod == "default/low"][
        0
    ].message
    assert msg == "0/1 nodes are available: 1 Insufficient cpu."
    sim.apply(pod("higher", cpu=1, prio=200))
    assert sim.node_of("higher") == "n1"
    sim.apply(pod("h", cpu=2, prio=100, nominated_node="n1"))  # ungated: only 1 CPU left
    assert not sim.bound("h")
    sim.delete("Pod", "default/higher")
    assert sim.node_of("h") == "n1"


def test_pre_filter_hook_rejects_attempts() -> None:
    from scheduler.cycle import PreFilterRequest
    from scheduler.framework import unschedulable

    seen: list[tuple[str, str, int]] = []

    def hook(req: PreFilterRequest) -> Status | None:
        seen.append((req.kind, req.key, len(req.pods)))
        if req.key.endswith("blocked") or req.kind == "podgroup":
            return unschedulable("quota q: cpu used 1 + requested 2 exceeds max 2", "ElasticQuota")
        return None

    @dataclass
    class Quota:  # a PreFilter plugin, in place of the elastic quota
        name: str = "ElasticQuota"

        def pre_filter(self, req: PreFilterRequest) -> Status | None:
            return hook(req)

    sim = Sim()
    sim.s.use_profile(replace(sim.s.profile, pre_filter=(Quota(),)))
    sim.apply(node("n1", cpu=8), node("n2", cpu=8))
    sim.apply(pod("ok"), pod("blocked"))
    assert sim.bound("ok") and not sim.bound("blocked")
    msg = [d for d in sim.decisions() if isinstance(d, PodUnschedulable)][0].message
    assert msg == "0/2 nodes are available: quota q: cpu used 1 + requested 2 exceeds max 2."
    assert sim.s.pending_reason("default/blocked") == ("ElasticQuota", msg)
    sim.apply(pg("g", 2), pod("a", group="g"), pod("b", group="g"))
    assert ("podgroup", "default/g", 2) in seen
    assert sim.cond("g") == ("False", "Unschedulable", "quota q: cpu used 1 + requested 2 exceeds max 2")
