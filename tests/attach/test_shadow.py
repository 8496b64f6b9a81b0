"""Acceptance: ``attach --mode shadow`` on a cluster whose bindings were made by another
scheduler (the test, through the pods/binding subresource, with its own tie-breaks and no gang
rule): podledger's worker places the mirrored pods itself, the cluster's bindings are recorded
beside its decisions, and the views and ``explain`` show where they differ."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.attach.conftest import Cluster, Ledger, needs_kubectl, start_cluster, stop_cluster
from tests.k8s.conftest import PODLEDGER
from tests.reliability.conftest import wait_until

pytestmark = needs_kubectl

NS = "shadow"
PODS = [f"s-{i}" for i in range(4)]
GANG = ("team-a", "vision-pretrain", ["vision-pretrain-0", "vision-pretrain-1"])


@pytest.fixture(scope="module")
def unscheduled(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """examples/cluster with no scheduler of its own: the test binds pods."""
    srv = start_cluster(server_url, tmp_path_factory.mktemp("shadow"))
    try:
        yield srv
    finally:
        stop_cluster(srv, server_url)


def _bind(v1: Any, ns: str, pod: str, node: str) -> None:
    from kubernetes import client

    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod), target=client.V1ObjectReference(kind="Node", name=node)
    )
    try:
        v1.create_namespaced_pod_binding(pod, ns, body)
    except ValueError:
        # the API answers a Binding with a Status (as upstream does); the client's V1Binding model
        # cannot hold it (a known client quirk): the binding itself was made
        pass


def _decisions(ledger: Ledger) -> dict[str, str]:
    rows = ledger.rows(
        "SELECT data->>'pod', data->>'node' FROM events WHERE type = 'PodBound' AND meta ? 'cycle'"
    )
    return {r[0]: r[1] for r in rows}


def test_shadow_reports_where_podledger_and_the_cluster_differ(unscheduled: Cluster, ledger: Ledger) -> None:
    from kubernetes import client

    v1 = client.CoreV1Api(unscheduled.client("writer"))
    for name in PODS:
        v1.create_namespaced_pod(
            NS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": NS},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
            },
        )
    proc = ledger.attach(unscheduled.kubeconfigs["reader"], "--mode", "shadow")
    proc.wait_for(lambda lines: any('"event": "synced"' in x for x in lines), 120, "attach to sync")
    ledger.worker("shadow-worker")

    # podledger's worker decides on the mirrored state: the small pods bound, the gang held
    wait_until(lambda: all(f"{NS}/{p}" in _decisions(ledger) for p in PODS), 120, "podledger's decisions")
    wait_until(
        lambda: ledger.count("type = 'PodGroupUnschedulable' AND data->>'group' = 'team-a/vision-pretrain'"),
        120,
        "podledger to hold the vision-pretrain gang",
    )
    mine = _decisions(ledger)
    nodes = sorted(f"node-r{r}-{i}" for r in range(1, 4) for i in range(1, 5))
    # the other scheduler: agrees on s-0, picks another node for the rest, binds the gang anyway
    chosen = {PODS[0]: mine[f"{NS}/{PODS[0]}"]}
    for name in PODS[1:]:
        chosen[name] = next(n for n in reversed(nodes) if n != mine[f"{NS}/{name}"])
    for name, node in chosen.items():
        _bind(v1, NS, name, node)
    ns, group, members = GANG
    for pod in members:
        _bind(v1, ns, pod, "node-r4-1")

    wait_until(
        lambda: ledger.count("type = 'PodBindingObserved'") == len(PODS) + len(members),
        120,
        "the cluster's bindings to be observed",
    )
    # the cluster's bindings did not move podledger's own placement
    assert _decisions(ledger) == mine
    assert ledger.count("type = 'PodBound' AND NOT meta ? 'cycle'") == 0

    diff = ledger.rows(
        "SELECT namespace, pod, podledger_node, cluster_node, cluster_scheduler, difference "
        "FROM v_shadow_pod_differences WHERE namespace = %(n)s ORDER BY pod",
        n=NS,
    )
    assert [tuple(r) for r in diff] == [
        (NS, name, mine[f"{NS}/{name}"], chosen[name], "writer", "bound elsewhere") for name in PODS[1:]
    ]
    gang_pods = ledger.rows(
        "SELECT pod, podledger_node, cluster_node, difference FROM v_shadow_pod_differences "
        "WHERE namespace = %(n)s AND pod_group = %(g)s ORDER BY pod",
        n=ns,
        g=f"{ns}/{group}",
    )
    assert [tuple(r) for r in gang_pods] == [
        (p, None, "node-r4-1", "bound by the cluster only") for p in members
    ]
    groups = ledger.rows(
        "SELECT namespace, pod_group, podledger, cluster_bound_pods FROM v_shadow_group_differences "
        "WHERE namespace = %(n)s AND pod_group = %(g)s",
        n=ns,
        g=group,
    )
    assert [tuple(r) for r in groups] == [(ns, group, "held", 2)]

    # explain shows the same, per pod
    env = dict(os.environ, PODLEDGER_DATABASE_URL=ledger.url)
    out = subprocess.run(
        [PODLEDGER, "explain", "podgroup", f"{ns}/{group}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Shadow (podledger vs the cluster's scheduler): 2 of 2 pod(s) differ" in out
    out = subprocess.run(
        [PODLEDGER, "explain", "pod", f"{NS}/{PODS[0]}"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "0 of 1 pod(s) differ" in out and f"cluster {chosen[PODS[0]]}" in out
    proc.stop()


COMPOSITE = ("team-b", "pipeline-1")
LEAF_PODS = ["pipeline-1-prefill-0", "pipeline-1-prefill-1", "pipeline-1-decode-0", "pipeline-1-decode-1"]


def test_shadow_counts_a_composites_leaf_pods_and_decides_pods_naming_podledger(
    unscheduled: Cluster, ledger: Ledger
) -> None:
    """Issue 33 item 3: the cluster bound every pod of a CompositePodGroup's leaves; the group
    view counts them for the composite (podledger's verdict is on the composite, the pods name
    their leaves). A pod naming podledger's scheduler is decided in the shadow ledger (no
    "profile not found") and shows as podledger's opinion."""
    from kubernetes import client

    v1 = client.CoreV1Api(unscheduled.client("writer"))
    v1.create_namespaced_pod(
        "trial",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "second-scheduler", "namespace": "trial"},
            "spec": {
                "schedulerName": "podledger",
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
            },
        },
    )
    proc = ledger.attach(unscheduled.kubeconfigs["reader"], "--mode", "shadow")
    proc.wait_for(lambda lines: any('"event": "synced"' in x for x in lines), 120, "attach to sync")
    ledger.worker("shadow-composite-worker")
    ns, name = COMPOSITE

    def verdict() -> str | None:
        rows = ledger.rows(
            "SELECT type FROM events WHERE type IN ('PodGroupScheduled', 'PodGroupUnschedulable') "
            "AND data->>'group' = %(g)s ORDER BY position DESC LIMIT 1",
            g=f"{ns}/{name}",
        )
        return rows[0][0] if rows else None

    wait_until(verdict, 120, "podledger's verdict on the composite")
    wait_until(
        lambda: "trial/second-scheduler" in _decisions(ledger), 120, "podledger to place the trial pod"
    )
    assert ledger.count("type = 'PodUnschedulable' AND data->>'pod' = 'trial/second-scheduler'") == 0

    nodes = [f"node-r3-{i}" for i in range(1, 5)]
    for pod, node in zip(LEAF_PODS, nodes, strict=True):
        _bind(v1, ns, pod, node)
    wait_until(
        lambda: (
            ledger.count(
                "type = 'PodBindingObserved' AND data->>'pod' = ANY(%(p)s)",
                p=[f"{ns}/{p}" for p in LEAF_PODS],
            )
            == len(LEAF_PODS)
        ),
        120,
        "the cluster's bindings of the leaves' pods",
    )
    rows = ledger.rows(
        "SELECT podledger, cluster_bound_pods, difference FROM v_shadow_group_differences "
        "WHERE namespace = %(n)s AND pod_group = %(g)s",
        n=ns,
        g=name,
    )
    if verdict() == "PodGroupScheduled":
        assert rows == []  # both admitted it: no difference (it used to say "the cluster bound none")
    else:
        assert [tuple(r)[:2] for r in rows] == [("held", len(LEAF_PODS))]
    trial = ledger.rows(
        "SELECT difference FROM v_shadow_pod_differences WHERE namespace = 'trial' AND pod = 'second-scheduler'"
    )
    assert [r[0] for r in trial] == ["bound by podledger only"]
    proc.stop()
