"""Issue 21's acceptance on the demo (the example cluster plus an impossible gang, scheduled):
the unschedulable gang's explain names the best domain, the needed and free amounts and an
unblocking action; the gang-aware node view never says ``fits`` for a node that rejected one of
its pods; ``v_pending_now`` returns the demo's pending groups with reason codes."""

from __future__ import annotations

from api.services.demo import BLOCKED_GROUP
from api.services.explain import explain, render_explain
from ledger.sql import rows, scalar

RACK = "topology.kubernetes.io/rack"


def test_demo_gang_explain_names_best_domain_need_free_and_unblock(demo_database):
    ns, name = BLOCKED_GROUP
    doc = explain(demo_database, "podgroup", ns, name)
    why = doc["why"]
    # the need: 2 pods x (16 cpu, 96Gi, 6 GPUs) in one rack (examples/cluster/40-blocked.yaml)
    assert why["need"] == {
        "pods": 2,
        "request": {"cpu": "16", "memory": "96Gi", "nvidia.com/gpu": "6"},
        "topologyKey": RACK,
    }
    best = why["domains"][0]
    assert (best["domain"], best["fit"], best["binding"]) == ("rack-4", 1, "resource:nvidia.com/gpu")
    assert all(d["fit"] <= best["fit"] for d in why["domains"])
    # the free GPUs of the best rack agree with v_idle_capacity (every node of rack-4 admits the pods)
    with demo_database.connect() as c:
        idle = scalar(
            c,
            "SELECT gpus_free FROM v_idle_capacity WHERE topology_key = %(k)s AND domain = 'rack-4'",
            {"k": RACK},
        )
    assert best["free"]["nvidia.com/gpu"] == str(idle) and idle >= 6
    # the smallest change: one GPU on the rack-4 node that has 5 of the 6 a pod needs
    assert why["unblock"].startswith("free 1 more nvidia.com/gpu on node-r4-"), why["unblock"]
    assert "(it has 5 of the 6 a pod needs)" in why["unblock"]
    assert doc["codes"][0] == "InsufficientResource(gpu)"  # the closest domain's binding constraint
    text = render_explain(doc)
    assert f"Needs:     2 pod(s) x (cpu=16, memory=96Gi, nvidia.com/gpu=6) in one {RACK} domain" in text
    assert "Best:      rack-4: room for 1 of 2 pod(s) (4 node(s)), bound by resource:nvidia.com/gpu" in text
    assert f"nvidia.com/gpu={idle} on the nodes that admit the pods" in text
    assert "Unblock:   free 1 more nvidia.com/gpu on node-r4-" in text
    assert (
        "Summary:   fits only 1 of 2 pods in the closest rack-4: each needs 6 nvidia.com/gpu, "
        "the best node has 5 free" in text
    )
    assert "Reading:   pod 1 of 2 fits nowhere in rack-1; 1 not tried" in text
    # the preemption clause whole, as the verdict says it
    assert "Preemption: not taken: elastic quota preemption: No preemption victims found" in text
    assert "Domains (4, best first):" in text


def test_demo_gang_nodes_never_fit_where_a_pod_was_rejected(demo_database):
    ns, name = BLOCKED_GROUP
    doc = explain(demo_database, "podgroup", ns, name, nodes=True)
    per_node = doc["gangNodes"]
    assert len(per_node) == 16 and doc["nodeSummary"]
    rejecting = {v["node"] for v in per_node if v["rejected"]}
    assert rejecting, "the gang cannot fit: some node rejects some pod"
    for v in per_node:
        assert v["fits"] == (v["rejected"] == 0), v
    for v in per_node:  # the pod x node rows agree with the per-node counts
        rows = [r for r in doc["nodes"] if r["node"] == v["node"]]
        assert (
            sum(r["fits"] for r in rows) == v["accepted"]
            and sum(not r["fits"] for r in rows) == v["rejected"]
        )
    lines = render_explain(doc, limit=None).splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("  Nodes (gang-aware"))
    for line in lines[start + 4 :]:
        node = line.split()[0]
        assert (node in rejecting) == ("fits" not in line), line


def test_pending_now_returns_the_demo_pending_groups_with_codes(demo_database):
    with demo_database.connect() as c:
        pending = {
            f"{r.namespace}/{r.name}": r
            for r in rows(
                c,
                "SELECT namespace, name, last_codes, last_reason_code, queue_position FROM v_pending_now "
                "WHERE kind = 'PodGroup'",
            )
        }
        unscheduled = {
            f"{ns}/{n}"
            for ns, n in c.execute(
                "SELECT namespace, name FROM objects WHERE kind = 'PodGroup' AND NOT EXISTS ("
                "SELECT 1 FROM jsonb_array_elements(coalesce(status->'conditions', '[]')) x "
                "WHERE x->>'type' = 'PodGroupInitiallyScheduled' AND x->>'status' = 'True')"
            )
        }
    assert "/".join(BLOCKED_GROUP) in pending and "team-a/giant" in pending
    assert set(pending) == unscheduled
    for key, r in pending.items():
        assert r.last_codes and r.last_reason_code == r.last_codes[0], key
    assert sorted(r.queue_position for r in pending.values()) == sorted(
        {r.queue_position for r in pending.values()}
    )
