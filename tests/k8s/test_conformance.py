"""A conformance table: kubectl v1.32 commands against ``podledger serve``, each with the exit
code and the key output kube-apiserver gives (from upstream's docs, its e2e/integration tests
and kubectl's own printers). Rows marked ``same_log`` are dry runs or refused requests: the
event count must be unchanged after them. Deviations that remain are listed in docs/api.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.k8s.conftest import EXAMPLES, Server, needs_kubectl

pytestmark = needs_kubectl

ROOT = Path(__file__).resolve().parents[2]
CAPACITY = ROOT / "examples" / "capacity"

TYPO = """apiVersion: v1
kind: Pod
metadata: {name: typo, namespace: conf}
spec:
  containers: [{name: c, resource: {requests: {cpu: 100m}}}]
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: web, namespace: conf, labels: {app: web}}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
"""
BAD_CPU = """apiVersion: v1
kind: Pod
metadata: {name: x2, namespace: conf}
spec:
  containers: [{name: c, resources: {requests: {cpu: "-1"}}}]
"""
SSA_POD = """apiVersion: v1
kind: Pod
metadata: {name: ssa, namespace: conf, labels: {app: ssa}}
spec:
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""
RELABEL = """apiVersion: v1
kind: Pod
metadata: {name: ssa, namespace: conf, labels: {app: taken-over}}
"""
ORPHAN = """apiVersion: v1
kind: Pod
metadata:
  name: orphan
  namespace: conf
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, controller: true}]
spec:
  containers: [{name: c}]
"""


@dataclass
class Row:
    args: tuple[str, ...]
    code: int = 0
    expect: tuple[str, ...] = ()  # substrings of stdout + stderr
    same_log: bool = False  # a dry run or a refused request: nothing appended
    role: str = "writer"


PG = "podgroups.v1beta1.scheduling.k8s.io"
PG_V1 = "podgroups.v1.scheduling.k8s.io"

TABLE: list[Row] = [
    # apply, client- and server-side, twice
    Row(("apply", "-f", str(EXAMPLES)), expect=("pod/llm-pretrain-0 created",)),
    Row(("apply", "-f", str(EXAMPLES)), expect=("podgroup.scheduling.k8s.io/vision-pretrain unchanged",)),
    Row(("apply", "--server-side", "-f", str(EXAMPLES)), expect=("pod/llm-pretrain-0 serverside-applied",)),
    Row(("apply", "--server-side", "-f", str(EXAMPLES)), expect=("pod/llm-pretrain-0 serverside-applied",)),
    Row(("apply", "-f", "{pod}"), expect=("pod/web created",)),
    # server-side apply: a partial apply by another manager conflicts on a field kubectl applied
    Row(("apply", "--server-side", "-f", "{ssa_pod}"), expect=("pod/ssa serverside-applied",)),
    Row(
        ("apply", "--server-side", "--field-manager=other", "-f", "{relabel}"),
        code=1,
        expect=('conflict with "kubectl"', ".metadata.labels.app"),
        same_log=True,
    ),
    Row(
        ("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "{relabel}"),
        expect=("pod/ssa serverside-applied",),
    ),
    # dry runs of every verb
    Row(
        ("apply", "--dry-run=server", "-f", str(CAPACITY)),
        expect=("created (server dry run)",),
        same_log=True,
    ),
    Row(
        ("apply", "--server-side", "--dry-run=server", "-f", str(CAPACITY)),
        expect=("serverside-applied (server dry run)",),
        same_log=True,
    ),
    Row(("diff", "-f", str(CAPACITY)), code=1, expect=("+  name: node-r4-5",), same_log=True),
    Row(("diff", "-f", "{pod}"), code=0, same_log=True),
    Row(
        ("create", "--dry-run=server", "-f", str(CAPACITY)),
        expect=("created (server dry run)",),
        same_log=True,
    ),
    Row(
        ("replace", "--dry-run=server", "-f", "{pod}"),
        expect=("pod/web replaced (server dry run)",),
        same_log=True,
    ),
    Row(
        ("delete", "pod", "-n", "conf", "web", "--dry-run=server"),
        expect=('pod "web" deleted (server dry run)',),
        same_log=True,
    ),
    Row(
        ("label", "pod", "-n", "conf", "web", "tier=x", "--dry-run=server"),
        expect=("pod/web labeled (server dry run)",),
        same_log=True,
    ),
    Row(
        ("annotate", "pod", "-n", "conf", "web", "note=x", "--dry-run=server"),
        expect=("pod/web annotated (server dry run)",),
        same_log=True,
    ),
    Row(
        (
            "patch",
            "pod",
            "-n",
            "conf",
            "web",
            "--type=merge",
            "-p",
            '{"metadata":{"labels":{"a":"b"}}}',
            "--dry-run=server",
        ),
        expect=("pod/web patched",),
        same_log=True,
    ),
    Row(
        ("patch", "pod", "-n", "conf", "web", "-p", '{"metadata":{"labels":{"a":"b"}}}', "--dry-run=server"),
        expect=("pod/web patched",),
        same_log=True,
    ),
    Row(
        (
            "patch",
            "pod",
            "-n",
            "conf",
            "web",
            "--type=json",
            "-p",
            '[{"op":"add","path":"/metadata/labels/b","value":"c"}]',
            "--dry-run=server",
        ),
        expect=("pod/web patched",),
        same_log=True,
    ),
    Row(
        ("delete", "-f", str(EXAMPLES / "30-pdb.yaml"), "--dry-run=server"),
        expect=("deleted (server dry run)",),
        same_log=True,
    ),
    # field validation
    Row(
        ("apply", "-f", "{typo}"),
        code=1,
        expect=('strict decoding error: unknown field "spec.containers[0].resource"',),
        same_log=True,
    ),
    Row(
        ("create", "-f", "{typo}"),
        code=1,
        expect=('strict decoding error: unknown field "spec.containers[0].resource"',),
        same_log=True,
    ),
    Row(
        ("apply", "--validate=false", "--dry-run=server", "-f", "{typo}"),
        expect=("pod/typo created (server dry run)",),
        same_log=True,
    ),
    Row(
        ("apply", "--validate=warn", "--dry-run=server", "-f", "{typo}"),
        expect=('Warning: unknown field "spec.containers[0].resource"',),
        same_log=True,
    ),
    # refused requests
    Row(
        ("apply", "-f", "{bad_cpu}"),
        code=1,
        expect=('The Pod "x2" is invalid', "requests[cpu]"),
        same_log=True,
    ),
    Row(
        ("apply", "-f", "{orphan}"),
        code=1,
        expect=('The Pod "orphan" is invalid', "uid must not be empty"),
        same_log=True,
    ),
    Row(("delete", "pod", "-n", "conf", "nope"), code=1, expect=('pods "nope" not found',), same_log=True),
    Row(("create", "-f", "{pod}"), code=1, expect=('pods "web" already exists',), same_log=True),
    Row(
        ("label", "pod", "-n", "conf", "web", "x=y"),
        role="reader",
        code=1,
        expect=("Forbidden",),
        same_log=True,
    ),
    Row(("get", "--raw", "/api/v1/pods?watch=maybe"), code=1, expect=("BadRequest",), same_log=True),
    Row(("get", "--raw", "/api/v1/pods?labelSelector=a,,b"), code=1, expect=("BadRequest",), same_log=True),
    Row(
        ("get", "--raw", "/api/v1/pods?resourceVersionMatch=Garbage&resourceVersion=1"),
        code=1,
        expect=("Unsupported value",),
        same_log=True,
    ),
    # patch and label at every served version of a group
    Row(("label", PG, "-n", "team-a", "llm-pretrain", "conf=yes"), expect=("labeled",)),
    Row(("label", PG_V1, "-n", "team-a", "llm-pretrain", "conf-v1=yes"), expect=("labeled",)),
    Row(
        (
            "patch",
            PG_V1,
            "-n",
            "team-a",
            "llm-pretrain",
            "--type=merge",
            "-p",
            '{"metadata":{"annotations":{"a":"b"}}}',
        ),
        expect=("patched",),
    ),
    Row(
        (
            "patch",
            PG,
            "-n",
            "team-a",
            "llm-pretrain",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/annotations/a"}]',
        ),
        expect=("patched",),
    ),
    # wait and jsonpath on upstream's status
    Row(
        ("wait", "--for=jsonpath={.status.phase}=Pending", "pod/web", "-n", "conf", "--timeout=20s"),
        expect=("pod/web condition met",),
    ),
    Row(("get", "pod", "web", "-n", "conf", "-o", "jsonpath={.status.phase}"), expect=("Pending",)),
    # reads and printers
    Row(("get", "pods", "-n", "conf"), expect=("NAME", "READY", "STATUS", "web")),
    Row(("get", "pods", "-A", "--field-selector", "status.phase=Pending"), expect=("llm-pretrain-0",)),
    Row(("get", "podgroups", "-A"), expect=("llm-pretrain",)),
    Row(("get", "nodes"), expect=("NAME", "STATUS")),
    Row(("get", "priorityclasses"), expect=("NAME", "VALUE", "GLOBAL-DEFAULT", "training-high")),
    Row(("get", "pdb", "-A"), expect=("MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS")),
    Row(("get", "namespaces"), expect=("NAME", "STATUS", "AGE", "Active")),
    Row(("get", "jobs", "-A"), expect=("STATUS", "COMPLETIONS", "DURATION")),
    Row(("auth", "can-i", "create", "pods"), expect=("yes",)),
    Row(("auth", "can-i", "create", "pods"), role="reader", code=1, expect=("no",)),
    Row(("auth", "whoami"), expect=("writer",)),
    Row(("version",), expect=("Server Version: v1.3",)),
    Row(("explain", "pods.spec.containers.resources"), expect=("requests",)),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("conf")
    out = {}
    for name, text in (
        ("typo", TYPO),
        ("pod", POD),
        ("bad_cpu", BAD_CPU),
        ("orphan", ORPHAN),
        ("relabel", RELABEL),
        ("ssa_pod", SSA_POD),
    ):
        p = d / f"{name}.yaml"
        p.write_text(text)
        out[name] = str(p)
    return out


def test_kubectl_conformance_table(k8s: Server, files: dict[str, str]) -> None:
    assert len(TABLE) >= 40
    failures = []
    for row in TABLE:
        args = tuple(files.get(a[1:-1], a) if a.startswith("{") else a for a in row.args)
        before = k8s.count()
        res = k8s.kubectl(*args, role=row.role, check=False)
        text = res.stdout + res.stderr
        problems = []
        if res.returncode != row.code:
            problems.append(f"exit {res.returncode}, want {row.code}")
        problems += [f"missing {e!r}" for e in row.expect if e not in text]
        if row.same_log and k8s.count() != before:
            problems.append(f"the log grew by {k8s.count() - before}")
        if problems:
            failures.append(f"kubectl {' '.join(args)}: {'; '.join(problems)}\n{text[-600:]}")
    assert not failures, "\n\n".join(failures)


def test_kubectl_get_events_watch_prints_new_decisions(k8s: Server, tmp_path: Path) -> None:
    watcher = k8s.popen_kubectl("get", "events", "-n", "conf-ev", "-w")
    huge = tmp_path / "huge.yaml"
    huge.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: huge, namespace: conf-ev}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: '100000'}}}]}\n"
    )
    k8s.kubectl("apply", "-f", str(huge))
    k8s.ensure_worker()
    lines = watcher.wait_for(
        lambda ls: any("FailedScheduling" in x and "pod/huge" in x for x in ls),
        120,
        "the FailedScheduling event",
    )
    watcher.stop()
    assert any("Warning" in x for x in lines if "FailedScheduling" in x)
