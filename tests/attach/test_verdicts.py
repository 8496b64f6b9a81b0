"""Issue 33 item 1: in mirror mode the cluster scheduler's own verdicts are recorded (the cluster:
a second ``podledger serve`` whose worker writes conditions and Events through its Kubernetes
API as kube-scheduler does): every PodGroup's conditions and every pending pod's PodScheduled
condition in the ledger are the cluster's, at the cluster's times; its Scheduled and
FailedScheduling Events are recorded once per count; objects keep the cluster's
creationTimestamp; ``history`` shows the Events beside the rest."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from typing import Any

from api.k8s.objects import view
from api.k8s.resources import lookup
from ledger.queries.objects import projection_rows
from tests.attach.conftest import Cluster, Ledger, needs_kubectl
from tests.k8s.conftest import PODLEDGER, ROOT
from tests.reliability.conftest import wait_until

pytestmark = needs_kubectl


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c.get("reason") or "", c.get("message") or "")
        for c in (obj.get("status") or {}).get("conditions") or []
    }


def _remote(cluster: Cluster, plural: str) -> dict[str, dict[str, Any]]:
    out = cluster.kubectl("get", plural, "-A", "-o", "json", role="reader").stdout
    return {f"{i['metadata']['namespace']}/{i['metadata']['name']}": i for i in json.loads(out)["items"]}


def _local(ledger: Ledger, kind: str, group: str, version: str, plural: str) -> dict[str, dict[str, Any]]:
    res = lookup(group, version, plural)
    assert res is not None
    with ledger.database.connect() as conn:
        return {f"{r['namespace']}/{r['name']}": view(res, r) for r in projection_rows(conn, kind)}


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_mirror_records_the_cluster_schedulers_verdicts(cluster: Cluster, ledger: Ledger) -> None:
    wait_until(lambda: cluster.count("type = 'PodUnschedulable'") >= 1, 120, "the cluster to hold a pod")
    proc = ledger.attach(cluster.kubeconfigs["reader"], "--events-every", "0.5")
    proc.wait_for(lambda lines: any('"event": "synced"' in x for x in lines), 120, "attach to sync")

    # PodGroups: the ledger's conditions are the cluster's (type, status, reason, message)
    def groups_agree() -> bool:
        remote = {k: _conditions(v) for k, v in _remote(cluster, "podgroups").items()}
        local = {
            k: _conditions(v)
            for k, v in _local(ledger, "PodGroup", "scheduling.k8s.io", "v1beta1", "podgroups").items()
        }
        return remote == local and any(remote.values())

    wait_until(groups_agree, 120, "the PodGroups' conditions to be the cluster's")

    # pending pods: the cluster's PodScheduled=False reason and message
    def pending_agree() -> bool:
        remote = {
            k: _conditions(v).get("PodScheduled")
            for k, v in _remote(cluster, "pods").items()
            if not (v.get("spec") or {}).get("nodeName")
        }
        local = _local(ledger, "Pod", "", "v1", "pods")
        return bool(remote) and all(_conditions(local[k]).get("PodScheduled") == c for k, c in remote.items())

    wait_until(pending_agree, 120, "the pending pods' PodScheduled conditions to be the cluster's")
    observed = ledger.rows(
        "SELECT meta->>'observed', meta ? 'cycle' FROM events WHERE type IN "
        "('PodUnschedulable', 'PodGroupConditionChanged', 'CompositePodGroupConditionChanged')"
    )
    assert observed and {tuple(r) for r in observed} == {("true", False)}

    # the cluster's Events, once per (Event, count), at the cluster's times
    wait_until(
        lambda: (
            ledger.count("type = 'ClusterEventObserved' AND data->>'reason' = 'FailedScheduling'") >= 1
            and ledger.count("type = 'ClusterEventObserved' AND data->>'reason' = 'Scheduled'") >= 1
        ),
        120,
        "the cluster's scheduling Events",
    )
    dupes = ledger.rows(
        "SELECT data->>'event', data->>'count', count(*) FROM events WHERE type = 'ClusterEventObserved' "
        "GROUP BY 1, 2 HAVING count(*) > 1"
    )
    assert dupes == []
    for last, effective in ledger.rows(
        "SELECT data->>'last_time', effective_at FROM events WHERE type = 'ClusterEventObserved'"
    ):
        assert _when(last) == effective

    # objects keep the cluster's creationTimestamp; attach's own time is recorded_at
    remote_pods = _remote(cluster, "pods")
    local_pods = _local(ledger, "Pod", "", "v1", "pods")
    for key, obj in remote_pods.items():
        assert local_pods[key]["metadata"]["creationTimestamp"] == obj["metadata"]["creationTimestamp"], key

    # history interleaves the cluster's Events with the rest
    scheduled = ledger.rows(
        "SELECT data->>'object' FROM events WHERE type = 'ClusterEventObserved' AND data->>'reason' = 'Scheduled' "
        "AND data->>'kind' = 'Pod' LIMIT 1"
    )[0][0]
    env = dict(os.environ, PODLEDGER_DATABASE_URL=ledger.url)
    out = subprocess.run(
        [PODLEDGER, "history", "pod", scheduled],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert "cluster Event Normal Scheduled" in out and "bound to" in out

    # get and explain answer with the cluster's status and words
    groups = _remote(cluster, "podgroups")
    table = subprocess.run(
        [PODLEDGER, "get", "podgroups", "-A"], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    for key, obj in groups.items():
        ns, name = key.split("/")
        cond = _conditions(obj).get("PodGroupInitiallyScheduled")
        status = "Scheduled" if cond and cond[0] == "True" else "Unschedulable" if cond else "Pending"
        assert any(row.split()[:3] == [ns, name, status] for row in table.splitlines()), (key, table)
    held = [
        k for k, o in groups.items() if _conditions(o).get("PodGroupInitiallyScheduled", ("",))[0] == "False"
    ]
    assert held
    explained = subprocess.run(
        [PODLEDGER, "explain", "podgroup", held[0]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    message = _conditions(groups[held[0]])["PodGroupInitiallyScheduled"][2]
    assert message and message in explained
    assert "not attempted yet" not in explained
    # and the cluster scheduler's Events about it and its pods, newest first
    assert "Cluster (its scheduler's Events, newest first):" in explained
    assert "Warning FailedScheduling" in explained.partition("Cluster (its scheduler's Events")[2]

    # Jobs are mirrored as the cluster has them (not compiled again: their pods are mirrored), and
    # `explain job` answers through the PodGroup the Job controls
    assert ledger.count("type = 'JobCreated' AND stream = 'job/team-b/feature-etl'") == 1
    job = subprocess.run(
        [PODLEDGER, "explain", "job", "team-b/feature-etl"], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert job.returncode == 0, job.stderr
    assert "Job:       team-b/feature-etl" in job.stdout

    # kill -9 and restart: the verdicts are all there, none recorded twice
    proc.proc.kill()
    proc.proc.wait(10)
    again = ledger.attach(cluster.kubeconfigs["reader"], "--events-every", "0.5")
    again.wait_for(
        lambda lines: any('"event": "synced"' in x for x in lines), 120, "the restarted attach to sync"
    )
    wait_until(groups_agree, 120, "the PodGroups' conditions after the restart")
    wait_until(pending_agree, 120, "the pending pods' conditions after the restart")
    twice = ledger.rows(
        "SELECT stream, type, data::text, count(*) FROM events WHERE meta->>'observed' = 'true' "
        "AND type IN ('PodUnschedulable', 'PodNominated', 'PodGroupConditionChanged', "
        "'CompositePodGroupConditionChanged', 'ClusterEventObserved') GROUP BY 1, 2, 3 HAVING count(*) > 1"
    )
    assert twice == []
    again.stop()
