"""Reason codes in SQL (issue 21): v_unschedulable_reasons by code, v_pending_now, v_idle_capacity."""

from __future__ import annotations

import pytest

from api.services.simulate import Simulation
from ledger.sql import dicts, rows, scalar
from scheduler.reason_codes import CODES, base_code, codes_of

RACK = "topology.kubernetes.io/rack"


def node(name: str, rack: str, cpu: str, gpus: int = 0) -> dict:
    alloc: dict = {"cpu": cpu, "memory": "64Gi", "pods": 110}
    if gpus:
        alloc["nvidia.com/gpu"] = gpus
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {RACK: rack, "kubernetes.io/hostname": name}},
        "status": {"allocatable": alloc},
    }


def pod(name: str, cpu: str, gpus: int = 0, group: str | None = None) -> dict:
    req: dict = {"cpu": cpu}
    if gpus:
        req["nvidia.com/gpu"] = gpus
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": req, "limits": dict(req)}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


GANG = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "gpu-gang"},
    "spec": {
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "schedulingConstraints": {"topology": [{"key": RACK}]},
    },
}
STEPS = [
    {"apply": [node("g1", "r1", "8", 4), node("g2", "r2", "8", 4), node("c1", "r2", "4")]},
    {"apply": [pod("small", "1")]},
    {"apply": [GANG, pod("w-1", "1", 3, "gpu-gang"), pod("w-2", "1", 3, "gpu-gang")]},
    {"apply": [pod("huge", "64")]},
    {"advance": "20s"},
]


@pytest.fixture()
def cluster(database):
    Simulation(database, {}, "reason-views").run(STEPS)
    return database


def test_codes_are_a_fixed_vocabulary():
    assert codes_of("0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 Insufficient cpu.") == (
        "InsufficientResource(gpu)",
        "InsufficientResource(cpu)",
    )
    assert codes_of("0/2 nodes are available: 2 node(s) had untolerated taint {a: b}.") == (
        "TaintNotTolerated",
    )
    assert codes_of("quota q: cpu used 1 + requested 2 exceeds max 2") == ("QuotaMaxExceeded",)
    assert codes_of("something new") == ("Unclassified",)
    assert codes_of("boom", error=True) == ("SchedulerError",)
    for msg in (
        "minCount (4) cannot be satisfied: 2 scheduled, 2 remaining",
        "No preemption victims found for incoming pod",
    ):
        assert all(base_code(c) in CODES for c in codes_of(msg))


def test_pending_now_lists_pending_groups_and_pods_with_codes(cluster):
    with cluster.connect() as c:
        found = dicts(
            c,
            'SELECT kind, name, "group", pending_pods, queue_position, last_reason_code, last_codes, '
            "last_message, wait_seconds FROM v_pending_now ORDER BY queue_position, kind DESC, name",
        )
    by = {(r["kind"], r["name"]): r for r in found}
    assert set(by) == {("PodGroup", "gpu-gang"), ("Pod", "w-1"), ("Pod", "w-2"), ("Pod", "huge")}
    g = by[("PodGroup", "gpu-gang")]
    assert g["pending_pods"] == 2 and g["queue_position"] == 1
    assert "InsufficientResource(gpu)" in g["last_codes"], g
    assert g["last_reason_code"] == g["last_codes"][0] and g["last_message"]
    assert g["wait_seconds"] > 0
    assert by[("Pod", "w-1")]["group"] == "default/gpu-gang" and by[("Pod", "w-1")]["queue_position"] == 1
    assert by[("Pod", "w-1")]["last_codes"], "a gang member's own PodUnschedulable carries codes"
    h = by[("Pod", "huge")]
    assert h["queue_position"] == 2 and h["group"] is None
    assert h["last_reason_code"] == "InsufficientResource(cpu)"
    assert h["last_message"].startswith("0/3 nodes are available")


def test_unschedulable_reasons_by_code(cluster):
    with cluster.connect() as c:
        found = rows(c, "SELECT plugin, reason, attempts, codes FROM v_unschedulable_reasons")
    assert found
    assert all(r.reason != "Unschedulable" and r.reason == r.codes[0] for r in found)
    assert {r.reason for r in found} <= {c for r in found for c in r.codes}


def test_idle_capacity_per_domain(cluster):
    with cluster.connect() as c:
        found = rows(
            c,
            "SELECT domain, nodes, idle_nodes, gpus_allocatable, gpus_free FROM v_idle_capacity "
            "WHERE topology_key = %(k)s ORDER BY domain",
            {"k": RACK},
        )
    assert [(r.domain, r.nodes, r.gpus_allocatable, r.gpus_free) for r in found] == [
        ("r1", 1, 4, 4),
        ("r2", 2, 4, 4),
    ]
    assert sum(r.idle_nodes for r in found) == 2  # "small" runs on one of the three nodes


def test_reporting_role_reads_the_new_views(cluster):
    with cluster.connect() as c:
        for view in ("v_pending_now", "v_idle_capacity", "v_unschedulable_reasons"):
            for role in ("podledger_reporting", "podledger_app"):
                ok = scalar(c, "SELECT has_table_privilege(%(r)s, %(v)s, 'SELECT')", {"r": role, "v": view})
                assert ok, (role, view)


def test_explain_names_best_domain_need_free_and_unblock(cluster):
    from api.services.explain import explain, render_explain

    doc = explain(cluster, "podgroup", "default", "gpu-gang")
    why = doc["why"]
    assert why["need"] == {"pods": 2, "request": {"cpu": "1", "nvidia.com/gpu": "3"}, "topologyKey": RACK}
    # each rack has one 4-GPU node: room for one 3-GPU pod, bound by the GPUs
    assert [(d["domain"], d["fit"], d["binding"]) for d in why["domains"]] == [
        ("r1", 1, "resource:nvidia.com/gpu"),
        ("r2", 1, "resource:nvidia.com/gpu"),
    ]
    # the smallest change: g1 keeps 1 GPU after the pod it has room for; 2 more let the second in
    assert why["unblock"].startswith("free 2 more nvidia.com/gpu on g1 (it has 1 of the 3 a pod needs)")
    assert "InsufficientResource(gpu)" in doc["codes"]
    text = render_explain(doc)
    assert f"Needs:     2 pod(s) x (cpu=1, nvidia.com/gpu=3) in one {RACK} domain" in text
    assert "Best:      r1: room for 1 of 2 pod(s) (1 node(s)), bound by resource:nvidia.com/gpu" in text
    assert "Unblock:   free 2 more nvidia.com/gpu on g1" in text
    assert "Domains (2, best first):" in text


def test_explain_nodes_is_gang_aware(cluster):
    from api.services.explain import explain, render_explain

    doc = explain(cluster, "podgroup", "default", "gpu-gang", nodes=True)
    per = {v["node"]: v for v in doc["gangNodes"]}
    # per rack, closest first, as the attempt placed the gang (issue 31): in r1 g1 takes w-1
    # and then has 1 GPU left, so it rejects w-2; in r2 the same on g2, and c1 has no GPU
    assert (per["g1"]["accepted"], per["g1"]["rejected"], per["g1"]["category"]) == (1, 1, "saturated")
    assert per["g1"]["reasons"] == [["NodeResourcesFit: Insufficient nvidia.com/gpu", 1]]
    assert (per["g2"]["accepted"], per["g2"]["rejected"], per["g2"]["category"]) == (1, 1, "saturated")
    assert (per["c1"]["accepted"], per["c1"]["rejected"], per["c1"]["category"]) == (0, 2, "excluded")
    assert [(v["node"], v["domain"]) for v in doc["gangNodes"]] == [("g1", "r1"), ("g2", "r2"), ("c1", "r2")]
    assert doc["nodeSummary"].startswith(
        "r1 (closest): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    )
    assert not any(v["fits"] for v in doc["gangNodes"])  # every node rejected a pod of the attempt
    text = render_explain(doc)
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("  Nodes (gang-aware"))
    assert "Saturated nodes (2) - accepted some gang pods, rejected others" in lines[start + 1]
    assert "per domain, closest first" in lines[start]
    g1 = next(ln for ln in lines if ln.strip().startswith("g1 "))
    assert (
        "fits" not in g1 and "accepted 1, rejected 1: 1 x NodeResourcesFit: Insufficient nvidia.com/gpu" in g1
    )
    assert "... 2 more node(s)" in render_explain(doc, limit=1)
    # a pod no node takes: the upstream fit error comes first
    huge = explain(cluster, "pod", "default", "huge", nodes=True)
    assert huge["nodeSummary"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert all(not v["fits"] and v["category"] == "excluded" for v in huge["gangNodes"])
