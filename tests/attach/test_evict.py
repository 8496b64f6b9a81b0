"""``attach --mode schedule`` evicts the victims of podledger's preemptions through the Eviction
API, and the server's answer honours PodDisruptionBudgets: a refused eviction (429) is recorded
and retried until the budget allows it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.attach.conftest import Cluster, Ledger, needs_kubectl, start_cluster, stop_cluster
from tests.reliability.conftest import wait_until

pytestmark = needs_kubectl

NS = "preempt"


@pytest.fixture(scope="module")
def empty(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    srv = start_cluster(server_url, tmp_path_factory.mktemp("evict"), examples=False)
    try:
        yield srv
    finally:
        stop_cluster(srv, server_url)


def _pod(name: str, priority: str, cpu: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
        "spec": {
            "schedulerName": "podledger",  # attach's default --scheduler-name
            "priorityClassName": priority,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def test_schedule_evicts_preemption_victims_through_the_eviction_api(empty: Cluster, ledger: Ledger) -> None:
    from kubernetes import client

    api = empty.client("writer")
    v1 = client.CoreV1Api(api)
    sched = client.SchedulingV1Api(api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    v1.create_node(
        client.V1Node(
            metadata=client.V1ObjectMeta(name="small"),
            status=client.V1NodeStatus(allocatable={"cpu": "2", "memory": "4Gi", "pods": "10"}),
        )
    )
    v1.create_namespaced_pod(NS, _pod("low-0", "low", "1", "low"))
    v1.create_namespaced_pod(NS, _pod("low-1", "low", "1", "low"))
    # a budget that keeps one of the two low pods
    policy = client.PolicyV1Api(api)
    policy.create_namespaced_pod_disruption_budget(
        NS,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "low-pdb", "namespace": NS},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "low"}}},
        },
    )
    ledger.worker()
    proc = ledger.attach(empty.kubeconfigs["writer"], "--mode", "schedule")
    proc.wait_for(lambda lines: any('"event": "synced"' in x for x in lines), 120, "attach to sync")

    def on_node(name: str) -> Any:
        return v1.read_namespaced_pod(name, NS).spec.node_name

    wait_until(lambda: on_node("low-0") == "small" and on_node("low-1") == "small", 120, "the low pods bound")

    # a high-priority pod needing the whole node: podledger preempts both low pods
    v1.create_namespaced_pod(NS, _pod("high-0", "high", "2", "high"))
    wait_until(
        lambda: ledger.count("type = 'PodPreempted' AND meta ? 'cycle'") >= 2, 120, "podledger to preempt"
    )

    # the first victim goes; the server refuses the second (the budget keeps one low pod): the
    # refusal is recorded and retried, and the preemptor is not bound while a victim stays
    def refused() -> int:
        return ledger.count(
            "type = 'PodEvictionSent' AND data->>'outcome' = 'refused' AND data->>'code' = '429'"
        )

    wait_until(lambda: refused() >= 2, 120, "a refused eviction recorded and retried")
    assert ledger.count("type = 'PodEvictionSent' AND data->>'outcome' = 'evicted'") == 1
    assert len(v1.list_namespaced_pod(NS, label_selector="app=low").items) == 1
    assert on_node("high-0") is None
    assert ledger.count("type = 'PodBindingSent' AND data->>'pod' = %(p)s", p=f"{NS}/high-0") == 0

    # the budget goes: the next retry evicts, and high-0 is bound
    policy.delete_namespaced_pod_disruption_budget("low-pdb", NS)
    wait_until(lambda: on_node("high-0") == "small", 180, "high-0 bound once its victims are evicted")
    assert v1.list_namespaced_pod(NS, label_selector="app=low").items == []
    evicted = ledger.rows(
        "SELECT data->>'pod' FROM events WHERE type = 'PodEvictionSent' AND data->>'outcome' = 'evicted'"
    )
    assert sorted(r[0] for r in evicted) == [f"{NS}/low-0", f"{NS}/low-1"]
    proc.stop()
