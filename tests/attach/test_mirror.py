"""Acceptance: ``podledger attach --mode mirror`` against a second ``podledger serve`` holding
examples/cluster, through its Kubernetes API only (the read-only kubeconfig)."""

from __future__ import annotations

import urllib.request
from typing import Any

from api.attach.kinds import WATCHED
from tests.attach.conftest import Cluster, Ledger, needs_kubectl
from tests.attach.helpers import differences, remote_objects
from tests.k8s.conftest import free_port
from tests.reliability.conftest import wait_until

pytestmark = needs_kubectl


def _synced(lines: list[str]) -> bool:
    return any('"event": "synced"' in line for line in lines)


def _progress_idle(lines: list[str]) -> bool:
    return any('"event": "progress"' in line and '"queue": 0' in line for line in lines)


def _no_differences(cluster: Cluster, ledger: Ledger) -> Any:
    diffs = differences(cluster, ledger)
    _no_differences.last = diffs  # type: ignore[attr-defined]
    return not diffs


def test_mirror_copies_every_object_and_the_bindings(cluster: Cluster, ledger: Ledger) -> None:
    # the cluster's scheduler has bound what fits before we attach
    wait_until(
        lambda: cluster.count("type = 'PodBound'") >= 10,
        120,
        "the cluster's scheduler to bind the example pods",
    )
    port = free_port()
    proc = ledger.attach(cluster.kubeconfigs["reader"], "--metrics-port", str(port))
    proc.wait_for(_synced, 120, "attach to list the cluster")
    try:
        wait_until(lambda: _no_differences(cluster, ledger), 120, "the ledger to equal the cluster")
    except AssertionError:
        raise AssertionError("\n".join(_no_differences.last)) from None  # type: ignore[attr-defined]

    # counts per kind are equal (the comparison above is per object, spec included)
    for w in WATCHED:
        n = len(remote_objects(cluster, w))
        assert ledger.count("type = %(t)s", t=f"{_prefix(w.kind)}Created") >= n
    assert len(remote_objects(cluster, WATCHED[-1])) > 10

    # every input event carries the remote uid and resourceVersion
    missing = ledger.count(
        "type LIKE '%Created' AND (meta->'attach'->>'uid' = '' OR meta->'attach'->>'rv' IS NULL)"
    )
    assert missing == 0
    # bindings are observed ones, by the cluster's scheduler (its Scheduled events name it)
    bound = ledger.rows("SELECT meta->>'actor', meta->>'observed' FROM events WHERE type = 'PodBound'")
    assert bound and {tuple(r) for r in bound} == {("k8s-test-worker", "true")}
    assert len(bound) == cluster.count("type = 'PodBound'")

    # Prometheus metrics: changes by kind and outcome, the lag gauges
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    n_bound = _metric(text, 'podledger_attach_changes_total{kind="Pod",outcome="bound"}')
    assert n_bound == len(bound)
    assert _metric(text, "podledger_attach_lag_resource_versions") is not None
    assert _metric(text, "podledger_attach_lag_seconds") is not None

    # a restarted attach appends nothing: unchanged objects are not written again (the cluster's
    # Events go on: its scheduler retries the pods it cannot place, and each repeat is recorded)
    events = "type <> 'ClusterEventObserved'"
    before = ledger.count(events)
    proc.stop()
    again = ledger.attach(cluster.kubeconfigs["reader"])
    again.wait_for(_synced, 120, "attach to resume")
    again.wait_for(_progress_idle, 60, "attach to catch up")
    assert ledger.count(events) == before
    assert not differences(cluster, ledger)
    again.stop()


def _metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rpartition(" ")[2])
    return None


def _prefix(kind: str) -> str:
    from ledger.events import input_event_type

    return input_event_type(kind, "Created")[: -len("Created")]
