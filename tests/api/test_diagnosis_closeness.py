"""Issue 31's acceptance on three GPU gangs: the diagnosis ranks domains by closeness, pins a
group with a bound member to its domain, names the smallest unblocking change, counts an attempt
under the closest domain's binding constraint, records what the scheduler saw (``explain
--nodes`` reads it, and a recomputation on the exact state of that cycle gives the same), and
says it as a podledger Event; ``history`` names the fields an update changed."""

from __future__ import annotations

from typing import Any

import pytest

from api.services.explain import explain, recompute_exclusions, render_explain, state_at
from api.services.history import history
from api.services.simulate import Simulation
from ledger.sql import rows

RACK = "topology.kubernetes.io/rack"


def node(name: str, rack: str, gpus: int = 0) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": "32", "memory": "256Gi", "pods": 110}
    labels = {RACK: rack, "kubernetes.io/hostname": name}
    if gpus:
        alloc["nvidia.com/gpu"] = gpus
        labels["gpu"] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": alloc},
    }


def pod(name: str, gpus: int, group: str | None = None, selector: bool = True) -> dict[str, Any]:
    req: dict[str, Any] = {"cpu": "1", "nvidia.com/gpu": gpus}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": req, "limits": dict(req)}}]
    }
    if selector:
        spec["nodeSelector"] = {"gpu": "true"}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def gang(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "schedulingConstraints": {"topology": [{"key": RACK}]},
        },
    }


def _last(db: Any, group: str) -> dict[str, Any]:
    with db.connect() as c:
        found = rows(
            c,
            "SELECT position, data FROM events WHERE type = 'PodGroupUnschedulable' AND data->>'group' = %(g)s "
            "ORDER BY position DESC LIMIT 1",
            {"g": group},
        )
    return {"position": found[0].position, "data": found[0].data}


def _recorded_equals_recomputed(db: Any, group: str, pods: list[str]) -> dict[str, Any]:
    """The record of the last attempt equals a recomputation on the state just before it."""
    last = _last(db, group)
    rec = last["data"]["exclusions"]
    again = recompute_exclusions(state_at(db, last["position"] - 1), pods, last["data"]["why"])
    assert rec == again
    return rec


def _counts_agree(doc: dict[str, Any]) -> None:
    """Headline (summary), per-domain lines and per-plugin totals tell the same numbers."""
    why, rec = doc["why"], doc["exclusions"]
    best = why["domains"][0]
    assert doc["summary"].startswith(f"fits only {best['fit']} of {why['need']['pods']} pods")
    by_dom = {r[0]: r for r in rec["domains"]}
    for d in why["domains"]:
        dom, n, fit, tried = by_dom[d["domain"]]
        assert (n, fit) == (d["nodes"], d["fit"]), (d, by_dom[d["domain"]])
        excluded = sum(c[4] for c in rec["counts"] if c[0] == dom)
        table = [v for v in doc.get("gangNodes") or [] if v.get("domain") == dom]
        assert len(table) == n  # explain --nodes lists the domain's nodes, as the record counts them
        if tried > fit:  # the failing pod was rejected by every node of the domain
            assert excluded >= n
            # ... and the node table never says one of them fits
            assert all(v["rejected"] >= 1 and not v["fits"] for v in table), table
    assert rec["nodes"] == sum(r[1] for r in rec["domains"]) + sum(
        c[4] for c in rec["counts"] if c[0] == "(other)"
    )


@pytest.fixture()
def first_rack_without_gpus(database):
    """r1 has no GPU node (the first placement tried); r2: g2a 8 GPUs free, g2b 5 free (a
    3-GPU pod runs there); r3: one 4-GPU node. A gang of 2 x 6 GPUs fits 1 pod in r2."""
    steps = [
        {
            "apply": [
                node("c1a", "r1"),
                node("c1b", "r1"),
                node("g2a", "r2", 8),
                node("g2b", "r2", 8),
                node("g3a", "r3", 4),
            ]
        },
        {"apply": [{**pod("filler", 3), "spec": {**pod("filler", 3)["spec"], "nodeName": "g2b"}}]},
        {"apply": [gang("train", 2), pod("train-0", 6, "train"), pod("train-1", 6, "train")]},
        {"advance": "20s"},
    ]
    Simulation(database, {}, "diag-closeness").run(steps)
    return database


def test_closest_domain_need_free_and_smallest_change(first_rack_without_gpus):
    db = first_rack_without_gpus
    doc = explain(db, "podgroup", "default", "train", nodes=True)
    why = doc["why"]
    assert why["need"] == {"pods": 2, "request": {"cpu": "1", "nvidia.com/gpu": "6"}, "topologyKey": RACK}
    # closest first: r2 fits 1; r3 fits 0 but is 2 GPUs short per pod; r1 has no GPU node
    assert [(d["domain"], d["fit"], d["binding"]) for d in why["domains"]] == [
        ("r2", 1, "resource:nvidia.com/gpu"),
        ("r3", 0, "resource:nvidia.com/gpu"),
        ("r1", 0, "filter:NodeAffinity"),
    ]
    assert why["domains"][0]["free"]["nvidia.com/gpu"] == "13"
    assert why["unblock"].startswith("free 1 more nvidia.com/gpu on g2b (it has 5 of the 6 a pod needs)")
    assert (
        doc["summary"]
        == "fits only 1 of 2 pods in the closest r2: each needs 6 nvidia.com/gpu, the best node has 5 free"
    )
    # upstream's condition stays verbatim; podledger's reading is beside it
    assert "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining" in doc["verdict"]
    assert "pod 1 of 2 fits nowhere in r1; 1 not tried" in doc["reading"]
    assert "1 of 2 pod(s) placed, then pod 2 of 2 fits nowhere in r2" in doc["reading"]
    # reason codes lead with the closest domain's binding constraint, not the first rack's
    assert doc["codes"][0] == "InsufficientResource(gpu)" and "NodeAffinityMismatch" in doc["codes"]
    with db.connect() as c:
        found = rows(c, "SELECT plugin, reason, attempts FROM v_unschedulable_reasons")
    assert found and all(r.reason == "InsufficientResource(gpu)" for r in found), found
    # what the scheduler saw: recorded, and explain --nodes reads it
    rec = _recorded_equals_recomputed(db, "default/train", ["default/train-0", "default/train-1"])
    assert doc["exclusions"] == rec and doc["exclusionsSource"] == "recorded"
    assert rec["domains"] == [["r2", 2, 1, 2], ["r3", 1, 0, 1], ["r1", 2, 0, 1]]
    assert ["r2", "NodeResourcesFit", "Filter", "Insufficient nvidia.com/gpu", 2] in rec["counts"]
    assert ["r1", "NodeAffinity", "Filter", "node(s) didn't match Pod's node affinity/selector", 2] in rec[
        "counts"
    ]
    _counts_agree(doc)
    # no node is said to fit where the attempt rejected a pod: r2's nodes both rejected pod 2
    text = render_explain(doc, limit=None)
    assert "Exclusions (what the scheduler saw; recorded with the decision):" in text
    assert "r2 (closest): 1 of 2 pod(s) fit; pod 2 fits on none of its 2 node(s)" in text
    assert "Preemption: not taken" in text


def test_events_carry_the_summary_beside_upstreams_message(first_rack_without_gpus):
    from api.k8s.events import derive

    with first_rack_without_gpus.connect() as c:
        evs = [e for e in derive(c, 1 << 62, "default") if e["kind"] == "PodGroup" and e["name"] == "train"]
    reasons = {e["reason"]: e["message"] for e in evs}
    assert "FailedScheduling" in reasons and "0 scheduled, 1 remaining" in reasons["FailedScheduling"]
    assert reasons["Diagnosis"] == (
        "podledger: fits only 1 of 2 pods in the closest r2: each needs 6 nvidia.com/gpu, the best node has 5 free"
    )


def test_every_domain_fits_zero_ranked_by_closeness_not_name(database):
    """r1's node has 4 GPUs free, r2's 5: neither fits a 6-GPU pod; r2 is closer (1 GPU short)."""
    steps = [
        {"apply": [node("a1", "r1", 4), node("b1", "r2", 5)]},
        {"apply": [gang("wide", 2), pod("wide-0", 6, "wide"), pod("wide-1", 6, "wide")]},
        {"advance": "20s"},
    ]
    Simulation(database, {}, "diag-zero").run(steps)
    doc = explain(database, "podgroup", "default", "wide", nodes=True)
    why = doc["why"]
    assert [(d["domain"], d["fit"]) for d in why["domains"]] == [("r2", 0), ("r1", 0)]
    # both pods missing: one more GPU on b1 lets one in, six more the second
    assert why["unblock"].startswith("free 7 more nvidia.com/gpu on b1 (it has 5 of the 6 a pod needs)")
    assert doc["summary"].startswith("fits only 0 of 2 pods in the closest r2: each needs 6 nvidia.com/gpu")
    assert doc["codes"][0] == "InsufficientResource(gpu)"
    rec = _recorded_equals_recomputed(database, "default/wide", ["default/wide-0", "default/wide-1"])
    assert rec["domains"] == [["r2", 1, 0, 1], ["r1", 1, 0, 1]]
    _counts_agree(doc)


def test_bound_member_pins_the_diagnosis_to_its_domain(database):
    """A member bound in r1 (upstream limits the group to that domain): after minCount rises to
    2 the second member fits nowhere in r1, although r2 has room; the diagnosis stays in r1."""
    steps = [
        {"apply": [node("a1", "r1", 8)]},
        {"apply": [gang("pin", 1), pod("pin-0", 6, "pin")]},
        {"apply": [node("b1", "r2", 8), node("b2", "r2", 8)]},
        {"apply": [gang("pin", 2), pod("pin-1", 6, "pin")]},
        {"advance": "20s"},
    ]
    Simulation(database, {}, "diag-pinned").run(steps)
    doc = explain(database, "podgroup", "default", "pin", nodes=True)
    assert [p["phase"] for p in doc["pods"]] == ["Bound", "Pending"]
    why = doc["why"]
    assert why["pinned"] == {"domains": ["r1"], "bound": 1}
    assert [(d["domain"], d["fit"]) for d in why["domains"]] == [("r1", 0)]
    assert why["unblock"].startswith("free 4 more nvidia.com/gpu on a1 (it has 2 of the 6 a pod needs)")
    assert "r2" not in why["unblock"] and "b1" not in why["unblock"]
    assert doc["summary"].startswith("fits only 0 of 1 pods in r1, where its bound members are")
    assert "Pinned:    r1: 1 bound member(s)" in render_explain(doc)
    rec = _recorded_equals_recomputed(database, "default/pin", ["default/pin-1"])
    assert rec["domains"] == [["r1", 1, 0, 1]]
    assert [
        "(other)",
        "TopologyPlacement",
        "PreFilterNarrowing",
        "node(s) outside the domain of the group's bound members",
        2,
    ] in rec["counts"]
    _counts_agree(doc)
    # history names the field the update changed
    steps_h = [h for h in history(database, "podgroup", "default", "pin") if h["type"] == "PodGroupUpdated"]
    assert steps_h and "spec.schedulingPolicy.gang.minCount 1 -> 2" in steps_h[-1]["summary"]
    assert {"field": "spec.schedulingPolicy.gang.minCount", "from": 1, "to": 2} in steps_h[-1]["changes"]


def test_group_pod_and_verdict_agree_on_preemption(first_rack_without_gpus):
    db = first_rack_without_gpus
    group = explain(db, "podgroup", "default", "train")
    member = explain(db, "pod", "default", "train-0")
    tried = "pod group preemption: No preemption victims found for incoming preemptor"
    assert tried in group["verdict"] and "PreemptionNoVictims" in group["codes"]
    for d in (group, member):  # the pod's own fit error does not name it; its explain does
        assert d["preemption"] == {"tried": True, "message": tried, "taken": False, "victims": []}


def test_a_later_gate_is_never_shown_beside_the_older_attempts_codes(database):
    steps = [
        {"apply": [node("a1", "r1", 4)]},
        {"apply": [gang("late", 2), pod("late-0", 6, "late"), pod("late-1", 6, "late")]},
        {"advance": "5s"},
        {
            "apply": [
                {
                    **pod("late-2", 1, "late"),
                    "spec": {**pod("late-2", 1, "late")["spec"], "schedulingGates": [{"name": "hold"}]},
                }
            ]
        },
    ]
    Simulation(database, {}, "diag-gate").run(steps)
    doc = explain(database, "podgroup", "default", "late")
    # the gated member holds the group back after its unschedulable attempt: the verdict is the
    # gate's, and the attempt's codes and diagnosis are not shown beside it
    assert doc["verdict"] == "Waiting (not attempted): waiting for scheduling gates: [hold]"
    assert doc["attempts"] >= 1 and doc["lastAttempt"]["data"]["codes"]
    assert doc["staleAttempt"] and doc["codes"] == [] and doc["why"] is None and not doc["summary"]
    text = render_explain(doc)
    assert "predate this verdict" in text and "Codes:" not in text and "Unblock:" not in text


def test_an_event_without_the_record_is_recomputed_on_the_exact_state_and_says_so(first_rack_without_gpus):
    """A PodGroupUnschedulable written before the record existed (its payload without
    ``exclusions``): ``--nodes`` recomputes it on the state just before that decision, which gives
    what the scheduler recorded, and says it was recomputed."""
    from api.services.explain import document, read_inputs

    db = first_rack_without_gpus
    with db.snapshot() as conn:
        inputs = read_inputs(conn, "PodGroup", "default", "train", None)
        recorded = None
        for e in inputs["decisions"]:
            if e["type"] == "PodGroupUnschedulable":
                recorded = e["data"].get("exclusions")
                e["data"] = {k: v for k, v in e["data"].items() if k != "exclusions"}  # as before issue 31
        doc = document(db, conn, "PodGroup", "default", "train", inputs, nodes=True)
    assert recorded and doc["exclusionsSource"] == "recomputed" and doc["exclusions"] == recorded
    assert doc["nodesAt"] == doc["lastAttempt"]["position"] - 1
    assert "recomputed on the exact state of that cycle" in render_explain(doc)
