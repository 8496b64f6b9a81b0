"""Acceptance: ``attach --mode schedule``: podledger's worker decides on the mirrored state and
attach binds the gang in the cluster through the pods/binding subresource; the cluster's own
``kubectl get pods -o wide`` shows the nodes. A call the cluster refuses is recorded and retried."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.attach.conftest import Cluster, Ledger, needs_kubectl, start_cluster, stop_cluster
from tests.k8s.conftest import PODLEDGER, ROOT
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
    worker = subprocess.Popen(
        [PODLEDGER, "worker", "--interval", "0.2", "--name", "podledger-scheduler"],
        env=dict(os.environ, PODLEDGER_DATABASE_URL=ledger.url),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=(ledger.tmp / "worker.log").open("ab"),
    )
    ledger.procs.append(worker)  # type: ignore[arg-type]

    # a read-only token: every bind is refused (403), recorded, and retried
    proc = ledger.attach(unscheduled.kubeconfigs["reader"], "--mode", "schedule")
    proc.wait_for(_synced, 120, "attach to sync")
    wait_until(
        lambda: all(f"team-a/{p}" in _decisions(ledger) for p in GANG), 120, "podledger to place the gang"
    )
    first = f"team-a/{GANG[0]}"
    wait_until(
        lambda: (
            ledger.count(
                "type = 'PodBindingSent' AND data->>'pod' = :p AND data->>'outcome' = 'failed' AND data->>'code' = '403'",
                p=first,
            )
            >= 2
        ),
        60,
        "a refused bind to be recorded and retried",
    )
    assert all(_wide(unscheduled)[p] is None for p in GANG)
    proc.stop()

    # with a token that may bind, the gang lands where podledger placed it
    proc = ledger.attach(unscheduled.kubeconfigs["writer"], "--mode", "schedule")
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
    proc.stop()
