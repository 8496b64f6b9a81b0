"""``attach`` when the cluster's API server forgets history (410 Gone: list again) or goes away
(reconnect with backoff): the ledger ends equal to the cluster, with nothing recorded twice."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attach.conftest import Cluster, Ledger, needs_kubectl, start_cluster, stop_cluster
from tests.attach.helpers import differences
from tests.k8s.conftest import PODLEDGER, ROOT
from tests.reliability.conftest import wait_until

pytestmark = needs_kubectl

WINDOW = 20


@pytest.fixture(scope="module")
def windowed(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster whose watches keep only WINDOW positions of history, and no scheduler (its log
    moves only when a test changes something)."""
    srv = start_cluster(
        server_url, tmp_path_factory.mktemp("windowed"), {"PODLEDGER_K8S_WATCH_WINDOW": str(WINDOW)}
    )
    try:
        yield srv
    finally:
        stop_cluster(srv, server_url)


def _has(event: str) -> object:
    return lambda lines: any(f'"event": "{event}"' in line for line in lines)


def _pods(tmp: Path, ns: str, names: list[str]) -> Path:
    docs = [
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {n}\n  namespace: {ns}\nspec:\n  containers:\n"
        "  - name: c\n    image: busybox\n    resources:\n      requests:\n        cpu: 100m\n"
        for n in names
    ]
    path = tmp / f"{ns}-{names[0]}.yaml"
    path.write_text("---\n".join(docs))
    return path


def _no_dupes(ledger: Ledger) -> None:
    dupes = ledger.rows(
        "SELECT meta->'attach'->>'uid', meta->'attach'->>'resourceVersion', type, count(*) FROM events "
        "WHERE meta ? 'attach' AND meta->'attach'->>'rv' IS NOT NULL GROUP BY 1, 2, 3 HAVING count(*) > 1"
    )
    assert dupes == []


def _equal(cluster: Cluster, ledger: Ledger) -> None:
    last: list[str] = []

    def same() -> bool:
        last[:] = differences(cluster, ledger)
        return not last

    try:
        wait_until(same, 120, "the ledger to equal the cluster")
    except AssertionError:
        raise AssertionError("\n".join(last)) from None


def test_a_watch_older_than_the_servers_history_lists_again(windowed: Cluster, ledger: Ledger) -> None:
    proc = ledger.attach(windowed.kubeconfigs["reader"])
    proc.wait_for(_has("synced"), 120, "attach to list the cluster")
    _equal(windowed, ledger)
    proc.stop()  # SIGTERM
    proc.wait_for(_has("stopped"), 30, "attach to stop")

    # while attach is away the cluster moves more than its watch window
    windowed.kubectl("apply", "-f", str(_pods(ledger.tmp, "gone", [f"p-{i}" for i in range(WINDOW + 5)])))
    windowed.kubectl("delete", "pod", "-n", "team-b", "bert-sweep-0")
    windowed.kubectl("label", "node", "node-r1-1", "attach-test=relabelled")
    before = ledger.count()

    again = ledger.attach(windowed.kubeconfigs["reader"])
    again.wait_for(_has("gone"), 120, "a 410 on resuming the watch")
    _equal(windowed, ledger)
    _no_dupes(ledger)
    # the new pods, the deleted pod and the relabelled node: nothing more
    assert ledger.count() - before == WINDOW + 5 + 2
    assert ledger.count("type = 'PodDeleted' AND stream = 'pod/team-b/bert-sweep-0'") == 1
    again.stop()


def test_losing_the_api_server_reconnects_and_loses_nothing(windowed: Cluster, ledger: Ledger) -> None:
    proc = ledger.attach(windowed.kubeconfigs["reader"])
    proc.wait_for(_has("synced"), 120, "attach to list the cluster")
    _equal(windowed, ledger)
    windowed.stop()
    proc.wait_for(_has("reconnect"), 60, "attach to notice the server is gone")
    # the cluster changes while its API server is down (written to its database directly)
    subprocess.run(
        [PODLEDGER, "apply", "-f", str(_pods(ledger.tmp, "outage", ["a", "b", "c"]))],
        env=windowed.env,
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    windowed.start()
    _equal(windowed, ledger)
    _no_dupes(ledger)
    assert ledger.count("stream LIKE 'pod/outage/%'") == 3
    assert proc.proc.poll() is None  # the same process, reconnected
    proc.stop()
