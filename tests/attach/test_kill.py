"""Killing ``attach`` (SIGKILL) mid-watch and restarting it loses and duplicates nothing: every
change the cluster made is recorded exactly once, with its own resourceVersion.

``PODLEDGER_ATTACH_KILL_RUNS`` (default 2) sets how many seeded runs; the issue's bar is 10
in a row (``PODLEDGER_ATTACH_KILL_RUNS=10``)."""

from __future__ import annotations

import os
import random
import threading
from typing import Any

import pytest

from tests.attach.conftest import Cluster, Ledger, needs_kubectl
from tests.attach.helpers import differences
from tests.reliability.conftest import wait_until

pytestmark = needs_kubectl

RUNS = int(os.environ.get("PODLEDGER_ATTACH_KILL_RUNS", "2"))


def _synced(lines: list[str]) -> bool:
    return any('"event": "synced"' in line for line in lines)


def _pod(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"round": "0"}},
        "spec": {
            # fits nowhere: the cluster's scheduler only adds status changes (which append nothing)
            "nodeSelector": {"example.com/nowhere": "true"},
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }


class Churn(threading.Thread):
    """Creates, relabels and deletes pods in one namespace; remembers each change's (uid, rv)."""

    def __init__(self, cluster: Cluster, ns: str, seed: int, n: int = 24) -> None:
        super().__init__(daemon=True)
        from kubernetes import client

        self.v1 = client.CoreV1Api(cluster.client("writer"))
        self.ns, self.rng, self.n = ns, random.Random(seed), n
        self.changes: set[tuple[str, str, str]] = set()  # (uid, resourceVersion, event type)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            alive: list[str] = []
            for i in range(self.n):
                p = self.v1.create_namespaced_pod(self.ns, _pod(f"p-{i}", self.ns))
                self.changes.add((p.metadata.uid, p.metadata.resource_version, "PodCreated"))
                alive.append(p.metadata.name)
                if i % 3 == 2:
                    name = self.rng.choice(alive)
                    p = self.v1.patch_namespaced_pod(
                        name, self.ns, {"metadata": {"labels": {"round": str(i)}}}
                    )
                    self.changes.add((p.metadata.uid, p.metadata.resource_version, "PodUpdated"))
                if i % 4 == 3:
                    name = alive.pop(self.rng.randrange(len(alive)))
                    p = self.v1.delete_namespaced_pod(name, self.ns)
                    self.changes.add((p.metadata.uid, p.metadata.resource_version, "PodDeleted"))
        except BaseException as exc:  # reported by the test
            self.error = exc


@pytest.mark.parametrize("seed", range(RUNS))
def test_kill_and_restart_mid_watch_loses_and_duplicates_nothing(
    cluster: Cluster, ledger: Ledger, seed: int
) -> None:
    rng = random.Random(seed)
    ns = f"churn-{seed}"
    proc = ledger.attach(cluster.kubeconfigs["reader"])
    proc.wait_for(_synced, 120, "attach to list the cluster")
    churn = Churn(cluster, ns, seed)
    churn.start()

    def recorded() -> int:
        return ledger.count(
            "meta->'attach'->>'scope' = '' AND data->'object'->'metadata'->>'namespace' = %(n)s", n=ns
        )

    for kill in sorted(rng.sample(range(2, 20), 2)):
        wait_until(lambda k=kill: recorded() >= k or not churn.is_alive(), 120, f"{kill} changes recorded")
        proc.proc.kill()  # SIGKILL: no clean shutdown, maybe mid-transaction
        proc.proc.wait(10)
        proc = ledger.attach(cluster.kubeconfigs["reader"])
        proc.wait_for(_synced, 120, "the restarted attach to resume")
    churn.join(120)
    assert churn.error is None, churn.error

    def caught_up() -> bool:
        got = ledger.rows(
            "SELECT meta->'attach'->>'uid', meta->'attach'->>'resourceVersion', type FROM events "
            "WHERE type IN ('PodCreated', 'PodUpdated', 'PodDeleted') AND stream LIKE %(s)s",
            s=f"pod/{ns}/%",
        )
        return {tuple(r) for r in got} == churn.changes

    wait_until(caught_up, 120, "every change of the cluster to be recorded")
    # exactly once each: no (uid, resourceVersion, type) twice, and nothing else in the namespace
    dupes = ledger.rows(
        "SELECT meta->'attach'->>'uid', meta->'attach'->>'resourceVersion', type, count(*) FROM events "
        "WHERE meta ? 'attach' GROUP BY 1, 2, 3 HAVING count(*) > 1"
    )
    assert dupes == []
    assert ledger.count("stream LIKE %(s)s", s=f"pod/{ns}/%") == len(churn.changes)
    assert ledger.count("type = 'AdmissionRejected'") == 0
    assert not differences(cluster, ledger, ns)
    proc.stop()
