"""Acceptance: ``attach --mode schedule``: podledger's worker decides on the mirrored state and
attach binds the gang in the cluster through the pods/binding subresource; the cluster's own
``kubectl get pods -o wide`` shows the nodes, and the gang's PodGroup shows podledger's
PodGroupInitiallyScheduled condition (written through its status subresource). A call the
cluster refuses is recorded and retried."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest
import yaml

from tests.attach.conftest import Cluster, Ledger, needs_kubectl, start_cluster, stop_cluster
from tests.k8s.conftest import PODLEDGER
from tests.reliability.conftest import wait_until

pytestmark = needs_kubectl

GANG = [f"llm-pretrain-{i}" for i in range(4)]


@pytest.fixture(scope="module")
def unscheduled(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    srv = start_cluster(server_url, tmp_path_factory.mktemp("schedule"))
    try:
        yield srv
    finally:
        stop_cluster(srv, server_url)


def _synced(lines: list[str]) -> bool:
    return any('"event": "synced"' in x for x in lines)


def _decisions(ledger: Ledger) -> dict[str, str]:
    rows = ledger.rows(
        "SELECT data->>'pod', data->>'node' FROM events WHERE type = 'PodBound' AND meta ? 'cycle' ORDER BY position"
    )
    return {r[0]: r[1] for r in rows}


def _wide(cluster: Cluster) -> dict[str, str | None]:
    res = cluster.kubectl("get", "pods", "-n", "team-a", "-o", "wide", role="reader")
    lines = res.stdout.splitlines()
    header = lines[0].split()
    col = header.index("NODE")
    return {
        line.split()[0]: (line.split()[col] if line.split()[col] != "<none>" else None) for line in lines[1:]
    }


def test_schedule_binds_the_gang_through_the_binding_subresource(
    unscheduled: Cluster, ledger: Ledger
) -> None:
    assert all(_wide(unscheduled)[p] is None for p in GANG)  # the cluster has no scheduler of its own
    ledger.worker()

    # a read-only token: every bind is refused (403), recorded, and retried. The example pods
    # name no scheduler (default-scheduler), and this cluster has none of its own: podledger
    # serves that profile here
    proc = ledger.attach(
        unscheduled.kubeconfigs["reader"], "--mode", "schedule", "--scheduler-name", "default-scheduler"
    )
    proc.wait_for(_synced, 120, "attach to sync")
    wait_until(
        lambda: all(f"team-a/{p}" in _decisions(ledger) for p in GANG), 120, "podledger to place the gang"
    )
    first = f"team-a/{GANG[0]}"
    wait_until(
        lambda: (
            ledger.count(
                "type = 'PodBindingSent' AND data->>'pod' = %(p)s AND data->>'outcome' = 'failed' AND data->>'code' = '403'",
                p=first,
            )
            >= 2
        ),
        60,
        "a refused bind to be recorded and retried",
    )
    assert all(_wide(unscheduled)[p] is None for p in GANG)
    # the gang's condition is refused too, recorded and retried
    wait_until(
        lambda: (
            ledger.count(
                "type = 'PodGroupConditionSent' AND data->>'group' = 'team-a/llm-pretrain' "
                "AND data->>'outcome' = 'failed' AND data->>'code' = '403'"
            )
            >= 2
        ),
        60,
        "a refused condition patch to be recorded and retried",
    )
    assert _condition(unscheduled, "team-a", "llm-pretrain") is None
    proc.stop()

    # with a token that may bind, the gang lands where podledger placed it
    proc = ledger.attach(
        unscheduled.kubeconfigs["writer"], "--mode", "schedule", "--scheduler-name", "default-scheduler"
    )
    mine = _decisions(ledger)
    wait_until(
        lambda: all(_wide(unscheduled)[p] == mine[f"team-a/{p}"] for p in GANG),
        120,
        "kubectl get pods -o wide to show the gang on podledger's nodes",
    )
    bound = ledger.rows(
        "SELECT data->>'pod', data->>'node', (data->>'decision_position')::bigint FROM events "
        "WHERE type = 'PodBindingSent' AND data->>'outcome' = 'bound'"
    )
    assert {r[0]: r[1] for r in bound if r[0].startswith("team-a/llm-pretrain")} == {
        f"team-a/{p}": mine[f"team-a/{p}"] for p in GANG
    }
    assert len({r[2] for r in bound}) == len(bound)  # each decision bound once
    # the cluster's binding of our own decision does not come back as an observed binding
    proc.wait_for(lambda lines: any('"queue": 0' in x for x in lines[-3:]), 60, "attach to drain")
    assert ledger.count("type = 'PodBound' AND NOT meta ? 'cycle'") == 0
    # the remote pods are bound by the caller of the binding subresource (the writer token)
    events = json.loads(
        unscheduled.kubectl("get", "events", "-n", "team-a", "-o", "json", role="reader").stdout
    )
    scheduled = {e["involvedObject"]["name"] for e in events["items"] if e["reason"] == "Scheduled"}
    assert set(GANG) <= scheduled
    wait_until(
        lambda: _condition(unscheduled, "team-a", "llm-pretrain") is not None, 60, "the condition patched"
    )
    assert _condition(unscheduled, "team-a", "llm-pretrain") == ("True", "Scheduled")
    # history shows what was sent to the cluster beside the decision (issue 33)
    out = subprocess.run(
        [PODLEDGER, "history", "pod", f"team-a/{GANG[0]}"],
        env=dict(os.environ, PODLEDGER_DATABASE_URL=ledger.url),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"binding to {mine[f'team-a/{GANG[0]}']} sent to the cluster: bound" in out
    proc.stop()


def _condition(cluster: Cluster, ns: str, name: str) -> tuple[str, str] | None:
    """The PodGroupInitiallyScheduled condition of a PodGroup in the cluster, read with the
    kubernetes client."""
    from kubernetes import client

    obj = client.CustomObjectsApi(cluster.client("reader")).get_namespaced_custom_object(
        "scheduling.k8s.io", "v1beta1", ns, "podgroups", name
    )
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodGroupInitiallyScheduled":
            return c["status"], c["reason"]
    return None


TEAM = "team-p"


def _gang(cluster: Cluster) -> None:
    """A gang of two pods whose schedulerName is podledger's profile (attach's default)."""
    from kubernetes import client

    api = cluster.client("writer")
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "scheduling.k8s.io",
        "v1beta1",
        TEAM,
        "podgroups",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pair", "namespace": TEAM},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        },
    )
    for i in range(2):
        client.CoreV1Api(api).create_namespaced_pod(
            TEAM,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pair-{i}", "namespace": TEAM},
                "spec": {
                    "schedulerName": "podledger",
                    "schedulingGroup": {"podGroupName": "pair"},
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                },
            },
        )


def test_schedule_writes_the_group_condition_for_podledgers_own_pods(
    unscheduled: Cluster, ledger: Ledger
) -> None:
    _gang(unscheduled)
    ledger.worker()
    proc = ledger.attach(unscheduled.kubeconfigs["writer"], "--mode", "schedule")  # profile: podledger
    proc.wait_for(_synced, 120, "attach to sync")
    # the ledger's SchedulerConfig serves the profile, without controller emulation
    spec = ledger.rows("SELECT object->'spec' FROM objects WHERE kind = 'SchedulerConfig'")[0][0]
    assert (spec["schedulerName"], spec["controllerEmulation"]) == ("podledger", False)

    def nodes() -> dict[str, str | None]:
        res = unscheduled.kubectl("get", "pods", "-n", TEAM, "-o", "wide", role="reader")
        lines = res.stdout.splitlines()
        col = lines[0].split().index("NODE")
        return {x.split()[0]: (None if x.split()[col] == "<none>" else x.split()[col]) for x in lines[1:]}

    wait_until(lambda: all(nodes().get(f"pair-{i}") for i in range(2)), 120, "the gang bound in the cluster")
    wait_until(lambda: _condition(unscheduled, TEAM, "pair") is not None, 60, "the condition patched")
    assert _condition(unscheduled, TEAM, "pair") == ("True", "Scheduled")
    # kubectl shows it on the remote side too
    doc = yaml.safe_load(
        unscheduled.kubectl(
            "get", "podgroup.v1beta1.scheduling.k8s.io", "pair", "-n", TEAM, "-o", "yaml", role="reader"
        ).stdout
    )
    (cond,) = [c for c in doc["status"]["conditions"] if c["type"] == "PodGroupInitiallyScheduled"]
    assert (cond["status"], cond["reason"]) == ("True", "Scheduled") and cond["lastTransitionTime"]
    sent = ledger.rows(
        "SELECT data->>'group', data->>'outcome', (data->>'decision_position')::bigint FROM events "
        "WHERE type = 'PodGroupConditionSent'"
    )
    assert [(g, o) for g, o, _ in sent] == [(f"{TEAM}/pair", "patched")]
    decided = ledger.rows(
        "SELECT position FROM events WHERE type = 'PodGroupConditionChanged' AND meta ? 'cycle' "
        "AND data->>'group' = %(g)s AND data->>'status' = 'True'",
        g=f"{TEAM}/pair",
    )
    assert sent[0][2] == decided[-1][0]
    # the example pods name default-scheduler: podledger does not schedule them, nor write the
    # conditions of their groups
    assert ledger.count("type = 'PodBound' AND meta ? 'cycle' AND data->>'pod' LIKE 'team-a/%'") == 0
    # the cluster's status write comes back through the mirror as nothing new (status is not mirrored)
    proc.wait_for(lambda lines: any('"queue": 0' in x for x in lines[-3:]), 60, "attach to drain")
    assert ledger.count("type = 'PodGroupConditionChanged' AND NOT meta ? 'cycle'") == 0
    proc.stop()
