"""kubectl habits of ``podledger get`` and ``log``: -n/-A, -l, --field-selector, NAME -n NS, --at,
-w (ended after one bind, with a bounded wait on the pipe)."""

from __future__ import annotations

import os
import select
import subprocess
import time

from ledger.sql import scalar
from tests.api.test_cli import EXAMPLES, PODLEDGER, ROOT, cli

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: w1, labels: {kubernetes.io/hostname: w1}}
status: {allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web, tier: front}}
spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
"""


def _names(stdout: str) -> list[str]:
    lines = [line.split() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return []
    col = lines[0].index("NAME")
    return [cells[col] for cells in lines[1:]]


def test_namespace_selectors_and_name_with_namespace(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    assert cli("schedule").returncode == 0
    # default namespace by default (the example cluster has nothing there); -A for all
    default = cli("get", "pods")
    assert default.returncode == 0 and "No resources found in default namespace." in default.stderr
    everything = cli("get", "pods", "-A")
    assert "NAMESPACE" in everything.stdout and "team-b" in everything.stdout
    team_a = cli("get", "pods", "-n", "team-a", "-l", "app=llm-pretrain", "-o", "wide")
    assert team_a.returncode == 0, team_a.stderr
    assert _names(team_a.stdout) == [f"llm-pretrain-{i}" for i in range(4)]
    assert "group=llm-pretrain" in team_a.stdout and "NAMESPACE" not in team_a.stdout
    # set-based and negated requirements
    both = cli(
        "get", "pods", "-n", "team-a", "-l", "app in (llm-pretrain, resnet-finetune),app!=resnet-finetune"
    )
    assert _names(both.stdout) == [f"llm-pretrain-{i}" for i in range(4)]
    # field selectors on spec.nodeName and status.phase agree with the projection
    with database.connect() as c:
        node, on_node = c.execute(
            "SELECT status->>'nodeName', count(*) FROM objects WHERE kind = 'Pod' "
            "AND status->>'phase' = 'Bound' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1"
        ).fetchone()
        pending = scalar(
            c, "SELECT count(*) FROM objects WHERE kind = 'Pod' AND status->>'phase' = 'Pending'"
        )
    res = cli("get", "pods", "-A", "--field-selector", f"spec.nodeName={node},status.phase=Bound")
    assert len(_names(res.stdout)) == on_node
    res = cli("get", "pods", "-A", "--field-selector", "status.phase=Pending")
    assert len(_names(res.stdout)) == pending == 2  # the blocked vision-pretrain gang
    # NAME -n NS and NS/NAME name the same object
    one = cli("get", "pod", "llm-pretrain-0", "-n", "team-a", "-o", "json")
    assert one.returncode == 0 and '"llm-pretrain-0"' in one.stdout
    assert cli("get", "pod", "team-a/llm-pretrain-0", "-o", "json").stdout == one.stdout
    missing = cli("get", "pod", "llm-pretrain-0")  # not in the default namespace
    assert missing.returncode == 1 and 'Pod "default/llm-pretrain-0" not found' in missing.stderr
    # bad selectors: a clear error, no traceback
    bad = cli("get", "pods", "--field-selector", "spec.schedulerName=x")
    assert bad.returncode == 1 and 'field label not supported: "spec.schedulerName"' in bad.stderr
    bad = cli("get", "pods", "-l", "app in (x")
    assert bad.returncode == 1 and "labelSelector" in bad.stderr and "Traceback" not in bad.stderr


def test_get_at_a_position_shows_the_state_then(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    with database.connect() as c:
        before = scalar(c, "SELECT max(position) FROM events")
    assert cli("schedule").returncode == 0
    now = cli("get", "pods", "-n", "team-a", "-l", "app=llm-pretrain")
    then = cli("get", "pods", "-n", "team-a", "-l", "app=llm-pretrain", "--at", str(before))
    assert now.stdout.count("Bound") == 4 and "Pending" not in now.stdout
    assert then.stdout.count("Pending") == 4 and "Bound" not in then.stdout


def _read_until(proc: subprocess.Popen[bytes], needle: str, timeout: float = 60.0) -> str:
    """Read the process's stdout until ``needle`` appears; fail after ``timeout`` seconds."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while needle.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} not seen within {timeout}s; got {seen.decode()!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"process ended before {needle!r}; got {seen.decode()!r}"
            seen += chunk
    return seen.decode()


def _watch(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PODLEDGER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ)
    )


def test_get_watch_and_log_watch_print_the_bind(database):
    assert cli("apply", "-f", "-", stdin=CLUSTER).returncode == 0
    get_w = _watch("get", "pods", "-n", "shop", "-w")
    log_w = _watch("log", "-w")
    try:
        assert "Pending" in _read_until(get_w, "web-1")  # the listing, before any change
        # log: its listing (no bind yet) is printed before it listens; a bind in between is caught up
        _read_until(log_w, "POS")
        assert cli("schedule").returncode == 0
        assert "w1" in _read_until(get_w, "Bound")
        assert "PodBound" in _read_until(log_w, "PodBound")
    finally:
        for p in (get_w, log_w):
            p.terminate()
            p.wait(timeout=30)
