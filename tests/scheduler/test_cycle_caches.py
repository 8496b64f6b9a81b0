"""The caches of the cycle against a computation from scratch: NodeResourcesFit's incremental
per-demand scores (``scheduler.fitcache``), the per-shape PodInfo of ``PodScheduler.info``, the
per-node filter verdicts of ``cycle.why``, the snapshot's typed cache slots (``NodeSetCaches``);
and the plain pods' PreFilter fast path against the extension point."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from scheduler import gpushare, reference
from scheduler.cycle.why import group_why, why_rejections
from scheduler.decisions import PodUnschedulable
from scheduler.fitcache import DynamicInfo
from scheduler.framework import PreFilterRequest, Status, signature_of
from scheduler.model import (
    Node,
    NodeSelectorTerm,
    Pod,
    PreferredTerm,
    QuotaNode,
    Requirement,
    SchedulerConfig,
    Taint,
    Toleration,
)
from scheduler.plugins import node_affinity
from scheduler.plugins.elastic_quota import ElasticQuota
from scheduler.plugins.pod_index import index_of
from scheduler.scheduler import Scheduler
from scheduler.snapshot import R_PODS, Demand, NodeSetCaches, Snapshot, make_demand
from tests.scheduler.sched_helpers import GI, Sim, node, pod

CONFIGS = (
    SchedulerConfig(),
    SchedulerConfig(scoring_strategy="MostAllocated"),
    SchedulerConfig(resource_weights={"cpu": 2, "memory": 1, "example.com/fpga": 3}),
)


def _nodes(rng: random.Random, n: int, *, zero_alloc: bool) -> list[Node]:
    out = []
    for i in range(n):
        alloc = {
            "cpu": rng.choice([2000, 4000, 8000]),
            "memory": rng.choice([4, 8]) * GI,
            "pods": rng.choice([2, 5, 110]),
        }
        if rng.random() < 0.5:
            alloc["example.com/fpga"] = rng.choice([1, 2, 4])
        if zero_alloc and rng.random() < 0.1:
            alloc["cpu"] = 0  # scores skip the resource on this node (not the "simple" path)
        out.append(Node(f"n{i:02d}", alloc, seq=i))
    return out


def _demand(rng: random.Random) -> dict[str, int]:
    req = {"cpu": rng.choice([0, 250, 1000]), "memory": rng.choice([0, 1, 2]) * GI}
    if rng.random() < 0.3:
        req["example.com/fpga"] = 1
    return req


def _caches(
    rng: random.Random, zero_alloc: bool, cfg: SchedulerConfig, scored: bool = True
) -> tuple[Snapshot, list[Demand], list[DynamicInfo]]:
    """A snapshot of 40 nodes, 4 demands and a per-demand cache of each."""
    snap = Snapshot()
    for nd in _nodes(rng, 40, zero_alloc=zero_alloc):
        snap.upsert_node(nd)
    snap.refresh()
    demands = [make_demand(_demand(rng)) for _ in range(4)]
    return snap, demands, [DynamicInfo(snap, d, snap.resource_rows(d), cfg, scored) for d in demands]


def _burst(rng: random.Random, snap: Snapshot, demands: list[Demand], placed: list[str], step: int) -> None:
    """A burst of binds and deletions (bursts longer than the log threshold recompute all)."""
    for _ in range(rng.choice([0, 1, 1, 2, 3, 5, 70])):
        if placed and rng.random() < 0.4:
            snap.remove_pod(placed.pop(rng.randrange(len(placed))))
        else:
            key = f"p{step}-{len(placed)}-{rng.random()}"
            snap.add_pod(key, snap.names[rng.randrange(snap.n)], rng.choice(demands), None)
            placed.append(key)


@pytest.mark.parametrize("seed", range(6))
def test_incremental_fit_scores_equal_a_full_computation(seed: int) -> None:
    rng = random.Random(seed)
    cfg = CONFIGS[seed % len(CONFIGS)]
    snap, demands, infos = _caches(rng, seed >= 3, cfg)
    placed: list[str] = []
    for step in range(300):
        _burst(rng, snap, demands, placed, step)
        if rng.random() < 0.02:  # a node change starts a new epoch
            snap.upsert_node(replace(snap.nodes[0], labels={"step": str(step)}))
        for c in rng.sample(infos, rng.randrange(1, len(infos) + 1)):  # not all caches every step
            c.refresh(snap)
            fresh = DynamicInfo(snap, c.demand, c.rows, cfg)
            assert np.array_equal(c.mscore, fresh.mscore), (seed, step)
            mask = rng.random() < 0.5 and np.array([rng.random() < 0.7 for _ in range(snap.n)])
            m = mask if mask is not False else None
            ms = fresh.mscore if m is None else np.where(m, fresh.mscore, -1)
            want = int(np.argmax(ms)) if ms.max() >= 0 else -1
            assert c.best(snap, m) == want


@pytest.mark.parametrize("seed", range(4))
def test_fit_only_cache_keeps_the_fit_and_scores_on_demand(seed: int) -> None:
    """A fit-only cache (``scored=False``, while a GPU policy ranks) follows the log like a
    scored one: its fit equals a full computation's; asked for scores it scores, exactly."""
    rng = random.Random(100 + seed)
    cfg = CONFIGS[seed % len(CONFIGS)]
    snap, demands, infos = _caches(rng, seed >= 2, cfg, scored=False)
    placed: list[str] = []
    for step in range(200):
        _burst(rng, snap, demands, placed, step)
        for c in rng.sample(infos, rng.randrange(1, len(infos) + 1)):
            c.refresh(snap)
            fresh = DynamicInfo(snap, c.demand, c.rows, cfg)
            assert np.array_equal(c.fit, fresh.fit), (seed, step)
            if not c.scored:
                assert set(c.mscore.tolist()) <= {0, -1}
                if rng.random() < 0.05:
                    c.score_too(snap)
            if c.scored:
                c.score_too(snap)
                assert np.array_equal(c.mscore, fresh.mscore), (seed, step)


def _pod(rng: random.Random, i: int) -> Pod:
    req = _demand(rng)
    if rng.random() < 0.5:
        req = dict(reversed(list(req.items())))  # same requests, another order
    sel = {"zone": "a", "rack": "r1"} if rng.random() < 0.3 else {}
    if sel and rng.random() < 0.5:
        sel = {"rack": "r1", "zone": "a"}
    tols = (Toleration(key="dedicated", operator="Exists"),) if rng.random() < 0.3 else ()
    terms = (NodeSelectorTerm((Requirement("zone", "In", ("a", "b")),)),) if rng.random() < 0.3 else ()
    pref = (
        (PreferredTerm(5, NodeSelectorTerm((Requirement("rack", "Exists"),))),) if rng.random() < 0.3 else ()
    )
    return Pod(
        "default",
        f"p{i}",
        req,
        node_selector=sel,
        tolerations=tols,
        required_terms=terms,
        preferred_terms=pref,
        spec_node_name="n01" if rng.random() < 0.1 else None,
        seq=i,
    )


def test_pod_info_of_a_known_shape_equals_one_built_from_scratch() -> None:
    rng = random.Random(5)
    s = Scheduler()
    for nd in _nodes(rng, 12, zero_alloc=False):
        s.upsert_node(replace(nd, labels={"zone": rng.choice("ab"), "rack": rng.choice(["r1", "r2"])}))
    ps = s.state.podsched
    for i in range(300):
        p = _pod(rng, i)
        pi = ps.info(p)
        d = make_demand(p.requests)
        sig = signature_of(p)
        assert pi.pod is p
        assert (pi.demand, pi.rows, pi.sig, pi.fit_key) == (d, s.state.snap.resource_rows(d), sig, (sig, d))
        ps.schedule(p)  # fills the static and dynamic caches the next pod of the shape starts from
        st = ps.static(pi)
        assert st.ranks == any(r is not None for r in st.raws)
        fresh = [f.filter(sig, s.state.snap) for f in ps.filters]
        assert all(np.array_equal(a.ok, b.ok) for a, b in zip(st.results, fresh, strict=True))


def test_pod_info_shapes_do_not_outlive_a_profile_change() -> None:
    s = Scheduler()
    s.upsert_node(Node("n1", {"cpu": 4000, "memory": 8 * GI}, unschedulable=True))
    p1 = Pod("default", "a", {"cpu": 100})
    assert s.state.podsched.schedule(p1)[0] == -1  # NodeUnschedulable rejects the node
    s.use_profile(
        replace(s.profile, filter=tuple(f for f in s.profile.filter if f.name != "NodeUnschedulable"))
    )
    p2 = Pod("default", "b", {"cpu": 100})  # same shape as p1
    assert s.state.podsched.schedule(p2)[0] == 0


def test_group_why_with_cached_rejections_equals_a_fresh_snapshot() -> None:
    """``group_why`` keeps each pod signature's per-node filter verdicts for the node set: after
    node and load changes it still says what a snapshot built from scratch says."""
    rng = random.Random(11)
    nodes = {nd.name: nd for nd in _nodes(rng, 30, zero_alloc=False)}
    snap = Snapshot()
    for nd in nodes.values():
        snap.upsert_node(nd)
    loads: dict[str, tuple[str, dict[str, int]]] = {}
    for step in range(60):
        name = rng.choice(sorted(nodes))
        change = rng.random()
        if change < 0.3:
            taints = () if nodes[name].taints else (Taint("dedicated", "x"),)
            nodes[name] = replace(nodes[name], taints=taints, labels={"zone": rng.choice("ab")})
            snap.upsert_node(nodes[name])
        elif change < 0.4:
            nodes[name] = replace(nodes[name], unschedulable=not nodes[name].unschedulable)
            snap.upsert_node(nodes[name])
        for _ in range(rng.randrange(4)):
            key = f"p{step}-{rng.random()}"
            loads[key] = (rng.choice(sorted(nodes)), _demand(rng))
            snap.add_pod(key, loads[key][0], make_demand(loads[key][1]), None)
        fresh = Snapshot()
        for nd in nodes.values():
            fresh.upsert_node(nd)
        for key, (nn, req) in loads.items():
            fresh.add_pod(key, nn, make_demand(req), None)
        pending = [_pod(rng, 1000 + step)] * 5000  # more than the cluster holds: ``fit`` is the room
        snap.refresh()
        want = [
            reference.filter_node(pending[0], make_demand({}), reference.RefNode(nd)) for nd in snap.nodes
        ]
        assert why_rejections(snap, pending[0]) == [r[0] if r is not None else None for r in want], step
        args = {
            "min_count": 5000,
            "bound": 0,
            "topology_key": rng.choice([None, "zone"]),
            "codes": (),
            "message": "",
        }
        got = group_why(snap, pending, **args)
        assert got == group_why(fresh, pending, **args), step
        if args["topology_key"] is None:  # the cluster's room, node by node
            req = {r: v for r, v in pending[0].requests.items() if v > 0}
            room = 0
            for j, verdict in enumerate(want):
                if verdict is None:
                    caps = [max(int(snap.free[snap.res_index[r], j]), 0) // v for r, v in req.items()]
                    room += max(0, min([int(snap.free[R_PODS, j]), *caps]))
            assert got["domains"][0]["fit"] == room, step


def test_node_set_caches_are_dropped_with_the_node_set() -> None:
    """Every slot of ``Snapshot.caches`` is filled by its reader, survives pod changes (the pod
    index follows them), and is dropped when a node changes; the values read again then reflect
    the new nodes."""
    snap = Snapshot()
    for i in range(4):
        labels = {"zone": "a" if i % 2 else "b", gpushare.GPU_MODEL: "T4" if i else "A10"}
        snap.upsert_node(Node(f"n{i}", {"cpu": 4000, "nvidia.com/gpu": 1}, labels, seq=i))
    snap.refresh()
    zone_a = Requirement("zone", "In", ("a",))
    plain = Pod("ns", "p", {"cpu": 100})

    def fill() -> None:
        node_affinity.requirement_mask(snap, zone_a)
        gpushare.view_of(snap, np.arange(snap.n, dtype=np.intp))
        why_rejections(snap, plain)
        index_of(snap)

    fill()
    caches = snap.caches
    assert list(caches.requirement_masks) == [zone_a]
    assert caches.gpu_model_ids is not None and len(caches.gpu_model_ids) == 4
    assert list(caches.why_rejections) == [signature_of(plain)]
    assert caches.pod_index is not None
    snap.resolve = lambda key: plain if key == plain.key else None
    snap.add_pod(plain.key, "n1", make_demand(plain.requests), None)
    fill()
    assert snap.caches is caches and caches.pod_index is not None
    assert caches.pod_index.node_of == {plain.key: "n1"}  # the index followed the pod

    snap.upsert_node(Node("n0", {"cpu": 4000}, {"zone": "a"}, seq=0))  # relabelled, no GPU model
    snap.refresh()
    assert snap.caches == NodeSetCaches()  # a new, empty set of slots
    fill()
    assert node_affinity.requirement_mask(snap, zone_a).tolist() == [True, True, False, True]
    ids = snap.caches.gpu_model_ids
    assert ids is not None and ids[0] == gpushare.model_id("")
    assert snap.caches.pod_index is not None and snap.caches.pod_index.node_of == {plain.key: "n1"}


def test_every_cache_slot_is_in_the_architecture_table() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    table = doc[doc.index("## Caches") :]
    missing = [f.name for f in dataclasses.fields(NodeSetCaches) if f"`caches.{f.name}`" not in table]
    assert missing == []


@dataclass
class _NoFastPath:
    """A PreFilter plugin without ``passes_plain``: every attempt goes through it."""

    inner: ElasticQuota
    name: str = "ElasticQuota"

    def pre_filter(self, req: PreFilterRequest) -> Status | None:
        return self.inner.pre_filter(req)


@pytest.mark.parametrize("seed", range(3))
def test_plain_pre_filter_fast_path_decides_as_the_extension_point(seed: int) -> None:
    """Pods of namespaces without a quota skip the PreFilter extension point (``passes_plain``):
    the decisions equal those of a profile whose plugin runs for every attempt."""
    outcomes = []
    for fast in (True, False):
        rng = random.Random(seed)
        sim = Sim(SchedulerConfig(backoff_initial_seconds=0.0, backoff_max_seconds=0.0))
        if not fast:
            sim.s.use_profile(replace(sim.s.profile, pre_filter=(_NoFastPath(sim.s.elastic_quota),)))
        sim.s.upsert_quota(
            "ElasticQuota:team-a/qa", [QuotaNode("qa", {"cpu": 2000}, {"cpu": 3000}, ("team-a",))]
        )
        sim.apply(*(node(f"n{i}", 4) for i in range(3)))
        for i in range(40):
            ns = rng.choice(["team-a", "team-b", "default"])
            sim.apply(pod(f"p{i}", rng.choice([0.5, 1, 2]), ns=ns, prio=rng.choice([10, 100])))
            if i % 7 == 6:
                sim.delete("Pod", f"{ns}/p{i - 3}")
        outcomes.append(sim.decisions())
    assert outcomes[0] == outcomes[1]
    assert any(isinstance(d, PodUnschedulable) and "quota" in d.message for d in outcomes[0])
