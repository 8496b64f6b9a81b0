"""Pod-aware plugins: ported upstream test tables (inputs and expected status/score facts) and
the vectorized plugins cross-checked against ``scheduler.reference`` on random clusters."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from scheduler import reference
from scheduler.framework import diagnose
from scheduler.model import (
    HostPort,
    LabelSelector,
    Node,
    Pod,
    PodAffinityTerm,
    Requirement,
    SchedulerConfig,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from scheduler.plugins import (
    balanced_allocation,
    inter_pod_affinity,
    node_name,
    node_ports,
    pod_topology_spread,
)
from scheduler.podsched import num_feasible_nodes_to_find
from scheduler.snapshot import make_demand
from scheduler.state import State

HOST = "kubernetes.io/hostname"
ZONE = "zone"


def sel(**labels: str) -> LabelSelector:
    return LabelSelector(tuple(sorted(labels.items())))


def state_with(nodes: list[Node], placed: list[tuple[Pod, str]]) -> State:
    st = State(SchedulerConfig())
    for i, nd in enumerate(nodes):
        st.snap.upsert_node(replace(nd, seq=i))
    for p, nm in placed:
        st.pods[p.key] = p
        st.snap.add_pod(p.key, nm, make_demand(p.requests), None)
    st.snap.refresh()
    return st


def hnode(name: str, **labels: str) -> Node:
    return Node(name, {"cpu": 4000, "memory": 8 << 30, "pods": 110}, {HOST: name, **labels})


# ------------------------------------------------------------------ NodeName
@pytest.mark.parametrize(
    ("want", "node", "fits"),
    [(None, "foo", True), ("foo", "foo", True), ("bar", "foo", False)],
    ids=["no host specified", "host matches", "host doesn't match"],
)
def test_node_name_table(want: str | None, node: str, fits: bool) -> None:
    st = state_with([hnode(node)], [])
    fr = node_name.filter_nodes(want, st.snap)
    assert bool(fr.ok[0]) is fits
    if not fits:
        assert fr.node_reasons(0) == ["node(s) didn't match the requested node name"]
        assert fr.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"


# ------------------------------------------------------------------ NodePorts
def ports(*specs: str) -> tuple[HostPort, ...]:
    """``"UDP/127.0.0.1/8080"`` (upstream's newPod notation)."""
    out = []
    for s in specs:
        proto, ip, port = s.split("/")
        out.append(HostPort(int(port), proto, ip))
    return tuple(out)


NODE_PORTS_TABLE = [
    ("nothing running", (), (), True),
    ("other port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), True),
    ("same udp port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), False),
    ("same tcp port", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), False),
    ("different host ip", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), True),
    ("different protocol", ("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), True),
    (
        "second udp port conflict",
        ("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ("UDP/127.0.0.1/8080",),
        False,
    ),
    (
        "first tcp port conflict",
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        False,
    ),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ("TCP/0.0.0.0/8001",), ("TCP/127.0.0.1/8001",), False),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        False,
    ),
    ("second tcp port conflict to 0.0.0.0 hostIP", ("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), False),
    ("second different protocol", ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), True),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ("UDP/127.0.0.1/8001",),
        ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "want", "used", "fits"), NODE_PORTS_TABLE, ids=[t[0] for t in NODE_PORTS_TABLE]
)
def test_node_ports_table(name: str, want: tuple[str, ...], used: tuple[str, ...], fits: bool) -> None:
    existing = Pod("default", "existing", host_ports=ports(*used))
    st = state_with([hnode("n1")], [(existing, "n1")])
    incoming = Pod("default", "in", host_ports=ports(*want))
    fr = node_ports.filter_pod(incoming, st.snap)
    assert bool(fr.ok[0]) is fits, name
    assert fr.node_reasons(0) == (
        [] if fits else ["node(s) didn't have free ports for the requested pod ports"]
    )
    assert node_ports.filter_node(incoming, list(existing.host_ports)) == fr.node_reasons(0)


# ------------------------------------------------------------------ BalancedAllocation
def test_balanced_allocation_table() -> None:
    """Upstream's cases: cpu 3000/10000 vs memory 5000/20000 -> fractions .3 and .25 -> std
    .025 -> 97; nothing requested on an empty node -> 100 (pod requests skip)."""
    nd = Node("m1", {"cpu": 10000, "memory": 20000}, {HOST: "m1"})
    st = state_with([nd], [(Pod("default", "e", {"cpu": 2000, "memory": 4000}), "m1")])
    p = Pod("default", "p", {"cpu": 1000, "memory": 1000})
    got = balanced_allocation.score_nodes(p, st.snap, np.array([0]))
    assert int(got[0]) == 97
    assert balanced_allocation.score_node(p, nd.allocatable, {"cpu": 2000, "memory": 4000}) == 97
    # one resource at its limit: fractions 1 and .5 -> std .25 -> 75
    p2 = Pod("default", "p2", {"cpu": 8000, "memory": 6000})
    assert int(balanced_allocation.score_nodes(p2, st.snap, np.array([0]))[0]) == 75
    assert balanced_allocation.skip(Pod("default", "be"))


# ------------------------------------------------------------------ InterPodAffinity
def term(key: str = HOST, **labels: str) -> PodAffinityTerm:
    return PodAffinityTerm(key, sel(**labels))


def ipa(pod: Pod, nodes: list[Node], placed: list[tuple[Pod, str]]) -> list[list[str]]:
    st = state_with(nodes, placed)
    fr = inter_pod_affinity.filter_pod(pod, st.snap)
    ref = reference.inter_pod_filter(pod, reference.ref_nodes(nodes), placed)
    out = [fr.node_reasons(i) for i in range(len(nodes))]
    assert out == [[r[0]] if r else [] for r in ref]
    unres = fr.unresolvable if fr.unresolvable is not None else np.zeros(len(nodes), dtype=bool)
    assert [bool(unres[i]) for i in range(len(nodes))] == [bool(r and r[1]) for r in ref]
    return out


AFF = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


def test_ipa_required_affinity_table() -> None:
    nodes = [hnode("machine1", region="r1"), hnode("machine2", region="r2")]
    sec = Pod("default", "s", labels={"service": "securityscan"})
    # satisfied: a matching pod on the node (topology hostname)
    p = Pod("default", "p", affinity_required=(term(service="securityscan"),))
    assert ipa(p, nodes, [(sec, "machine1")]) == [[], [AFF]]
    # satisfied in the same region
    p = Pod("default", "p", affinity_required=(term("region", service="securityscan"),))
    assert ipa(p, nodes, [(sec, "machine1")]) == [[], [AFF]]
    # the pod's namespace only: a matching pod elsewhere does not count
    other = replace(sec, namespace="other")
    assert ipa(p, nodes, [(other, "machine1")]) == [[AFF], [AFF]]
    # namespaces lists "other"
    pn = Pod(
        "default",
        "p",
        affinity_required=(replace(term("region", service="securityscan"), namespaces=("other",)),),
    )
    assert ipa(pn, nodes, [(other, "machine1")]) == [[], [AFF]]
    # empty namespaceSelector: every namespace
    pe = Pod(
        "default",
        "p",
        affinity_required=(
            replace(term("region", service="securityscan"), namespace_selector=LabelSelector()),
        ),
    )
    assert ipa(pe, nodes, [(other, "machine1")]) == [[], [AFF]]
    # no matching pod anywhere, the pod matches its own term: first of a series fits anywhere
    self_aff = Pod(
        "default", "p", labels={"service": "securityscan"}, affinity_required=(term(service="securityscan"),)
    )
    assert ipa(self_aff, nodes, []) == [[], []]
    # ... but not when it does not match itself
    assert ipa(p, nodes, []) == [[AFF], [AFF]]
    # a node without the topology key never satisfies affinity
    nodes2 = [hnode("machine1", region="r1"), Node("nolabel", {"cpu": 1000}, {})]
    assert ipa(self_aff, nodes2, []) == [[], [AFF]]


def test_ipa_anti_affinity_table() -> None:
    nodes = [hnode("machine1", zone="z1"), hnode("machine2", zone="z1"), hnode("machine3", zone="z2")]
    web = Pod("default", "w", labels={"app": "web"})
    p = Pod("default", "p", anti_affinity_required=(term(ZONE, app="web"),))
    assert ipa(p, nodes, [(web, "machine1")]) == [[ANTI], [ANTI], []]
    # hostname anti-affinity: only that node
    p = Pod("default", "p", anti_affinity_required=(term(app="web"),))
    assert ipa(p, nodes, [(web, "machine1")]) == [[ANTI], [], []]
    # existing pod's anti-affinity against the incoming pod (symmetry)
    guard = Pod("default", "g", anti_affinity_required=(term(ZONE, app="web"),))
    assert ipa(web, nodes, [(guard, "machine3")]) == [[], [], [EXISTING]]
    # affinity is checked first, then anti-affinity, then existing pods'
    both = Pod(
        "default",
        "b",
        labels={"app": "web"},
        affinity_required=(term(ZONE, app="db"),),
        anti_affinity_required=(term(app="web"),),
    )
    db = Pod("default", "db", labels={"app": "db"})
    assert ipa(both, nodes, [(db, "machine1"), (web, "machine1"), (guard, "machine2")]) == [
        [ANTI],
        [EXISTING],
        [AFF],
    ]


def test_ipa_scores_table() -> None:
    nodes = [hnode("m1", region="china"), hnode("m2", region="india"), hnode("m3", region="china")]
    red = Pod("default", "r", labels={"security": "S1"})
    blue = Pod("default", "b", labels={"security": "S2"})
    p = Pod(
        "default",
        "p",
        affinity_preferred=(WeightedPodAffinityTerm(5, term("region", security="S1")),),
        anti_affinity_preferred=(WeightedPodAffinityTerm(5, term("region", security="S2")),),
    )
    placed = [(red, "m1"), (blue, "m2")]
    st = state_with(nodes, placed)
    idx = np.arange(3)
    got = inter_pod_affinity.normalize(inter_pod_affinity.score_raw(p, st.snap, idx)).tolist()
    assert got == [100, 0, 100]
    assert got == reference.inter_pod_scores(p, reference.ref_nodes(nodes), placed, [0, 1, 2])
    # existing pods' required affinity attracts the incoming pod (hardPodAffinityWeight 1)
    hard = Pod("default", "h", affinity_required=(term("region", security="S1"),))
    st = state_with(nodes, [(hard, "m2")])
    got = inter_pod_affinity.normalize(inter_pod_affinity.score_raw(red, st.snap, idx)).tolist()
    assert got == [0, 100, 0]


# ------------------------------------------------------------------ PodTopologySpread
def spread(max_skew: int, key: str, when: str = "DoNotSchedule", **kw: object) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(max_skew, key, when, sel(foo=""), **kw)  # type: ignore[arg-type]


def zone_nodes() -> list[Node]:
    return [
        hnode("node-a", zone="zone1"),
        hnode("node-b", zone="zone1"),
        hnode("node-x", zone="zone2"),
        hnode("node-y", zone="zone2"),
    ]


def foo(name: str, ns: str = "default") -> Pod:
    return Pod(ns, name, labels={"foo": ""})


def pts(pod: Pod, nodes: list[Node], placed: list[tuple[Pod, str]]) -> list[bool]:
    st = state_with(nodes, placed)
    fr = pod_topology_spread.filter_pod(pod, st.snap)
    ref = reference.spread_filter(pod, reference.ref_nodes(nodes), placed)
    assert [fr.node_reasons(i) for i in range(len(nodes))] == [[r[0]] if r else [] for r in ref]
    return [bool(x) for x in fr.ok]


def test_pts_filter_table() -> None:
    nodes = zone_nodes()
    # "pods spread across zones as 3/3, all nodes fit"
    placed = [(foo("p-a1"), "node-a"), (foo("p-b1"), "node-b"), (foo("p-x1"), "node-x")]
    p = replace(foo("p"), spread_constraints=(spread(1, ZONE),))
    # zone1 has 2, zone2 has 1: only zone2 fits with maxSkew 1
    assert pts(p, nodes, placed) == [False, False, True, True]
    # maxSkew 2: all fit
    p2 = replace(foo("p"), spread_constraints=(spread(2, ZONE),))
    assert pts(p2, nodes, placed) == [True, True, True, True]
    # "no existing pods, incoming pod doesn't match itself": all fit
    p3 = Pod("default", "p", spread_constraints=(spread(1, ZONE),))
    assert pts(p3, nodes, []) == [True, True, True, True]
    # pods of other namespaces do not count
    other = [(foo("o1", "other"), "node-a"), (foo("o2", "other"), "node-a")]
    assert pts(p, nodes, other) == [True, True, True, True]
    # hostname: maxSkew 1 over 4 nodes with 1/1/1/0
    ph = replace(foo("p"), spread_constraints=(spread(1, HOST),))
    assert pts(ph, nodes, placed) == [False, False, False, True]


def test_pts_missing_label_and_min_domains() -> None:
    nodes = [*zone_nodes(), Node("nolabel", {"cpu": 4000}, {HOST: "nolabel"})]
    p = replace(foo("p"), spread_constraints=(spread(1, ZONE),))
    st = state_with(nodes, [])
    fr = pod_topology_spread.filter_pod(p, st.snap)
    assert fr.node_reasons(4) == [
        "node(s) didn't match pod topology spread constraints (missing required label)"
    ]
    assert fr.unresolvable is not None and bool(fr.unresolvable[4]) and not fr.unresolvable[:4].any()
    # minDomains 3 with 2 domains: global minimum 0, so a zone holding 1 pod is full (skew 2)
    placed = [(foo("a1"), "node-a"), (foo("x1"), "node-x")]
    pm = replace(foo("p"), spread_constraints=(spread(1, ZONE, min_domains=3),))
    assert pts(pm, zone_nodes(), placed) == [False, False, False, False]
    pm2 = replace(foo("p"), spread_constraints=(spread(1, ZONE, min_domains=2),))
    assert pts(pm2, zone_nodes(), placed) == [True, True, True, True]


def test_pts_node_inclusion_policies() -> None:
    """nodeAffinityPolicy Honor: nodes the pod's nodeSelector excludes are not counted (their
    domain's pods do not raise the minimum); Ignore counts them."""
    nodes = [hnode("a", zone="z1", pool="x"), hnode("b", zone="z2", pool="y")]
    placed = [(foo("b1"), "b")]
    honor = replace(foo("p"), node_selector={"pool": "x"}, spread_constraints=(spread(1, ZONE),))
    assert pts(honor, nodes, placed) == [True, True]
    ignore = replace(honor, spread_constraints=(spread(1, ZONE, node_affinity_policy="Ignore"),))
    assert pts(ignore, nodes, [*placed, (foo("b2"), "b")]) == [True, False]


def test_pts_score_table() -> None:
    nodes = zone_nodes()
    placed = [(foo("a1"), "node-a"), (foo("a2"), "node-a"), (foo("b1"), "node-b"), (foo("x1"), "node-x")]
    p = replace(foo("p"), spread_constraints=(spread(1, ZONE, "ScheduleAnyway"),))
    st = state_with(nodes, placed)
    idx = np.arange(4)
    raw, ign = pod_topology_spread.score_raw(p, st.snap, idx)
    got = pod_topology_spread.normalize(raw, ign).tolist()
    assert got == reference.spread_scores(p, reference.ref_nodes(nodes), placed, [0, 1, 2, 3])
    assert got[2] == got[3] > got[0] == got[1]  # the emptier zone scores higher


# ------------------------------------------------------------------ percentageOfNodesToScore
@pytest.mark.parametrize(
    ("pct", "n", "want"),
    [
        (0, 50, 50),
        (0, 1000, 420),
        (0, 5000, 500),
        (0, 6000, 300),
        (0, 10000, 500),
        (10, 500, 100),
        (30, 5000, 1500),
        (100, 5000, 5000),
    ],
)
def test_num_feasible_nodes_to_find(pct: int, n: int, want: int) -> None:
    assert num_feasible_nodes_to_find(pct, n) == want


# ------------------------------------------------------------------ cross-check
def random_pod(rng: random.Random, i: int) -> Pod:
    apps = ["a", "b", "c"]
    app = rng.choice(apps)
    kw: dict[str, object] = {}
    if rng.random() < 0.4:
        kw["anti_affinity_required"] = (term(rng.choice([HOST, ZONE]), app=rng.choice(apps)),)
    if rng.random() < 0.2:
        kw["affinity_required"] = (term(ZONE, app=rng.choice(apps)),)
    if rng.random() < 0.3:
        kw["affinity_preferred"] = (
            WeightedPodAffinityTerm(rng.randint(1, 100), term(ZONE, app=rng.choice(apps))),
        )
    if rng.random() < 0.3:
        kw["anti_affinity_preferred"] = (
            WeightedPodAffinityTerm(rng.randint(1, 100), term(HOST, app=rng.choice(apps))),
        )
    if rng.random() < 0.4:
        kw["spread_constraints"] = (
            TopologySpreadConstraint(
                rng.randint(1, 2),
                rng.choice([HOST, ZONE]),
                rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                LabelSelector((), (Requirement("app", "In", (app,)),)),
                rng.choice([None, 3]) if rng.random() < 0.3 else None,
            ),
        )
    if rng.random() < 0.2:
        kw["host_ports"] = (HostPort(rng.choice([80, 443]), "TCP", rng.choice(["0.0.0.0", "10.0.0.1"])),)
    ns = rng.choice(["default", "default", "other"])
    return Pod(
        ns, f"p{i}", {"cpu": 100 * rng.randint(1, 5), "memory": 1 << 28}, labels={"app": app}, seq=i, **kw
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorized_pod_plugins_equal_reference(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [
        hnode(f"n{i:02d}", zone=f"z{i % 4}")
        if i % 9
        else Node(f"n{i:02d}", {"cpu": 4000, "memory": 8 << 30}, {})
        for i in range(24)
    ]
    st = state_with(nodes, [])
    st.podsched.set_plugins(
        st.podsched.filters,
        st.podsched.scores,
        (
            node_ports.NodePorts(),
            pod_topology_spread.PodTopologySpread(),
            inter_pod_affinity.InterPodAffinity(),
        ),
        (inter_pod_affinity.InterPodAffinity(), pod_topology_spread.PodTopologySpread()),
    )
    ref = reference.ref_nodes(nodes)
    placed: list[tuple[Pod, str]] = []
    for i in range(80):
        p = random_pod(rng, i)
        st.pods[p.key] = p
        pi = st.podsched.info(p)
        results = st.podsched.filter_results(pi)
        by = {r.plugin: r for r in results}
        exp = {
            "NodePorts": [reference.node_ports_reasons(p, rn.node.name, placed) for rn in ref],
            "PodTopologySpread": [[r[0]] if r else [] for r in reference.spread_filter(p, ref, placed)],
            "InterPodAffinity": [[r[0]] if r else [] for r in reference.inter_pod_filter(p, ref, placed)],
        }
        for name, want in exp.items():
            fr = by.get(name)
            got = [fr.node_reasons(j) if fr is not None else [] for j in range(len(ref))]
            assert got == want, (i, name)
        ok = np.logical_and.reduce([r.ok for r in results])
        feasible = [int(j) for j in np.flatnonzero(ok)]
        if feasible:
            fidx = np.array(feasible)
            if (
                p.affinity_preferred
                or p.anti_affinity_preferred
                or any(q.has_pod_affinity for q, _ in placed)
            ):
                got_s = inter_pod_affinity.normalize(inter_pod_affinity.score_raw(p, st.snap, fidx)).tolist()
                assert got_s == reference.inter_pod_scores(p, ref, placed, feasible), i
            if any(c.when_unsatisfiable == "ScheduleAnyway" for c in p.spread_constraints):
                raw, ign = pod_topology_spread.score_raw(p, st.snap, fidx)
                assert pod_topology_spread.normalize(raw, ign).tolist() == reference.spread_scores(
                    p, ref, placed, feasible
                ), i
        node, _ = st.podsched.schedule(p)
        assert (node >= 0) == bool(feasible)
        if node >= 0:
            assert node in feasible
            st.snap.assume(p.key, node, pi.demand, None)
            ref[node].add(pi.demand)
            placed.append((p, ref[node].node.name))
        else:
            assert diagnose(results, None).num_nodes == len(ref)
