"""Elastic quota usage from the snapshot's per-namespace totals (``Snapshot.ns_used``, kept on every
bind, unbind, assume and journal restore) equals the scan of every occupying pod that it replaced
(``Quotas.usage``), after seeded random changes; and through the scheduler, with quota preemption."""

from __future__ import annotations

import random

from scheduler.model import Pod, QuotaNode, SchedulerConfig
from scheduler.plugins.elastic_quota import occupying
from scheduler.quota import Quotas, Usage, nodes_from_tree
from scheduler.snapshot import Snapshot, pod_demand
from tests.scheduler.sched_helpers import Sim, node, pod

GPU = "nvidia.com/gpu"
NAMESPACES = ("team-a", "team-b", "team-c", "free")


def _quotas() -> Quotas:
    qs = Quotas()
    root = {
        "name": "root",
        "min": {"cpu": 8000},
        "max": {"cpu": 12000},
        "children": [
            {"name": "root.a", "min": {"cpu": 4000}, "max": {"cpu": 6000}, "namespaces": ["team-a"]},
            {"name": "root.b", "min": {"cpu": 4000, GPU: 2}, "namespaces": ["team-b"]},
        ],
    }
    qs.upsert("ElasticQuotaTree:kube-system/t", nodes_from_tree(root))
    qs.upsert("ElasticQuota:team-c/qc", [QuotaNode("qc", {"cpu": 1000}, {"cpu": 3000}, ("team-c",))])
    return qs


def _random_pod(rng: random.Random, i: int) -> Pod:
    req = {"cpu": rng.choice((0, 100, 250, 1000)), "pods": 1}
    if rng.random() < 0.5:
        req["memory"] = rng.choice((0, 1 << 20, 1 << 30))
    if rng.random() < 0.3:
        req[GPU] = rng.choice((0, 1, 2))
    return Pod(rng.choice(NAMESPACES), f"p{i}", req)


def _same(a: Usage, b: Usage) -> None:
    assert a.used == b.used
    for name in a.quotas.nodes:  # what the decisions record of each quota
        assert a.state_of(name) == b.state_of(name)


def _check(qs: Quotas, snap: Snapshot, pods: dict[str, Pod]) -> None:
    scan = qs.usage(pods, [k for keys in snap.node_pods.values() for k in keys])
    _same(qs.usage_of(snap.ns_used, snap.ns_count), scan)
    assert sum(snap.ns_count.values()) == len(snap.objs)
    assert all(snap.ns_used.values()), "no empty namespace totals are kept"


def test_usage_equals_scan_after_random_changes() -> None:
    rng = random.Random(14)
    qs = _quotas()
    snap = Snapshot()
    pods: dict[str, Pod] = {}
    snap.resolve = pods.get
    for i in range(4):
        snap.upsert_node(node(f"n{i}", 64))
    marks: list[int] = []
    for i in range(3000):
        r = rng.random()
        placed = list(snap.objs)
        if r < 0.45 or not placed:
            p = _random_pod(rng, i)
            pods[p.key] = p
            snap.add_pod(p.key, f"n{rng.randrange(4)}", pod_demand(p), None)
        elif r < 0.8:
            k = rng.choice(placed)
            snap.remove_pod(k)
            if rng.random() < 0.5:
                del pods[k]
        elif r < 0.9 and len(marks) < 3:
            marks.append(snap.backup())
        elif marks:
            mark = marks.pop()
            (snap.restore if rng.random() < 0.5 else snap.release)(mark)
        _check(qs, snap, pods)
    while marks:
        snap.restore(marks.pop())
        _check(qs, snap, pods)


def test_scheduler_usage_equals_scan_with_quota_preemption() -> None:
    rng = random.Random(7)
    sim = Sim(SchedulerConfig(backoff_initial_seconds=0.0, backoff_max_seconds=0.0))
    sim.s.upsert_quota(
        "ElasticQuota:team-a/qa", [QuotaNode("qa", {"cpu": 6000}, {"cpu": 12000}, ("team-a",))]
    )
    sim.s.upsert_quota(
        "ElasticQuota:team-b/qb", [QuotaNode("qb", {"cpu": 6000}, {"cpu": 12000}, ("team-b",))]
    )
    sim.apply(*[node(f"n{i}", 4) for i in range(4)])
    st = sim.s.state
    live: list[str] = []
    for i in range(300):
        if live and rng.random() < 0.3:
            k = live.pop(rng.randrange(len(live)))
            sim.delete("Pod", k)
        else:
            ns = rng.choice(("team-a", "team-b", "free"))
            p = pod(f"p{i}", rng.choice((0.5, 1, 2)), prio=rng.choice((10, 100)), ns=ns)
            live.append(p.key)
            sim.apply(p)
        qs = sim.s.quotas
        _same(qs.usage_of(st.snap.ns_used, st.snap.ns_count), qs.usage(st.pods, occupying(st)))
    assert any(type(d).__name__ == "PodPreempted" for d in sim.decisions())
