"""The Eviction API (POST pods/{name}/eviction) with the official client: a pod a
PodDisruptionBudget protects is refused with 429 naming the budget, appending nothing; any other
pod is deleted (PodDeleted by the caller)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.k8s.conftest import Server

kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes client is in the dev extra")
from kubernetes import client  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

NS = "evict"


def _pod(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]},
    }


def _bind(v1: Any, pod: str, node: str) -> None:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod), target=client.V1ObjectReference(kind="Node", name=node)
    )
    try:
        v1.create_namespaced_pod_binding(pod, NS, body)
    except ValueError:  # the Status answer does not fit the client's V1Binding model; the bind is made
        pass


def test_eviction_honours_disruption_budgets(k8s: Server) -> None:
    api = k8s.client()
    v1 = client.CoreV1Api(api)
    v1.create_node(
        client.V1Node(
            metadata=client.V1ObjectMeta(name="evict-node"),
            status=client.V1NodeStatus(allocatable={"cpu": "8", "memory": "16Gi", "pods": "20"}),
        )
    )
    for name, app in (("db-0", "db"), ("db-1", "db"), ("web-0", "web")):
        v1.create_namespaced_pod(NS, _pod(name, app))
        _bind(v1, name, "evict-node")
    client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(
        NS,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db-pdb", "namespace": NS},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
        },
    )
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="db-0", namespace=NS))
    before = k8s.inputs()
    with pytest.raises(ApiException) as refused:
        v1.create_namespaced_pod_eviction("db-0", NS, eviction)
    assert refused.value.status == 429
    assert "disruption budget db-pdb needs 2 healthy pods and has 2 currently" in refused.value.body
    assert k8s.inputs() == before
    assert v1.read_namespaced_pod("db-0", NS).spec.node_name == "evict-node"

    v1.create_namespaced_pod_eviction(
        "web-0", NS, client.V1Eviction(metadata=client.V1ObjectMeta(name="web-0"))
    )
    with pytest.raises(ApiException) as gone:
        v1.read_namespaced_pod("web-0", NS)
    assert gone.value.status == 404
    assert (
        k8s.count("type = 'PodDeleted' AND stream = %(s)s AND meta->>'actor' = 'writer'", s=f"pod/{NS}/web-0")
        == 1
    )

    with pytest.raises(ApiException) as missing:
        v1.create_namespaced_pod_eviction(
            "nope", NS, client.V1Eviction(metadata=client.V1ObjectMeta(name="nope"))
        )
    assert missing.value.status == 404
    reader = client.CoreV1Api(k8s.client("reader"))
    with pytest.raises(ApiException) as forbidden:
        reader.create_namespaced_pod_eviction(
            "db-1", NS, client.V1Eviction(metadata=client.V1ObjectMeta(name="db-1"))
        )
    assert forbidden.value.status == 403
