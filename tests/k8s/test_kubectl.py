"""Acceptance with the real kubectl binary against ``podledger serve`` (https, bearer tokens)."""

from __future__ import annotations

import re
import subprocess

from api.cli.printer import Table, render_plain
from ledger.sql import scalar
from tests.http.conftest import GIANT
from tests.k8s.conftest import EXAMPLES, PODLEDGER, Server, needs_kubectl, wait_until

pytestmark = needs_kubectl


def _pods(k8s: Server) -> dict[str, str | None]:
    """namespace/name → node of every pod (the projection)."""
    with k8s.database.connect() as c:
        rows = c.execute("SELECT namespace, name, status->>'nodeName' FROM objects WHERE kind = 'Pod'")
        return {f"{ns}/{name}": node for ns, name, node in rows}


def _podledger(k8s: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PODLEDGER, *args], env=k8s.env, capture_output=True, text=True, timeout=300)


def _table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_kubectl_applies_the_cluster_the_worker_schedules_and_kubectl_shows_it(k8s: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    before = k8s.count()
    out = k8s.kubectl("apply", "--server-side", "-f", str(EXAMPLES)).stdout
    applied = [line for line in out.splitlines() if line.endswith("serverside-applied")]
    n_docs = sum(
        1 for p in EXAMPLES.glob("*.yaml") for line in p.read_text().splitlines() if line.startswith("kind:")
    )
    assert len(applied) == n_docs, out
    assert "pod/llm-pretrain-0 serverside-applied" in out
    # one input event per object, each recording kubectl's field manager and the token's actor
    with k8s.database.connect() as c:
        metas = [
            r[0]
            for r in c.execute(
                "SELECT meta FROM events WHERE position > %(p)s ORDER BY position", {"p": before}
            )
        ]
    # ... plus what the example Job's controller compiles (Workload, PodGroup, 4 pods), recorded
    # in the same request under the actor job-controller
    compiled = [m for m in metas if m["actor"] == "job-controller"]
    assert len(compiled) == 6 and all(m["job"] == "team-b/feature-etl" for m in compiled)
    assert len(metas) == n_docs + len(compiled)
    assert all(m["fieldManager"] == "kubectl" and m["via"] == "k8s" for m in metas)
    assert all(m["actor"] == "writer" for m in metas if m not in compiled)

    giant = tmp_path / "giant.yaml"
    giant.write_text(GIANT)
    k8s.kubectl("apply", "--server-side", "-f", str(giant))

    k8s.ensure_worker()
    pods = wait_until(
        lambda: (
            (p := _pods(k8s))
            and all(
                node
                for key, node in p.items()
                if not key.startswith(("team-a/giant", "team-a/vision-pretrain"))
            )
            and p
        ),
        120,
        "the worker to bind every pod but the giant gang",
    )
    wait_until(
        lambda: k8s.count("type = 'PodGroupUnschedulable' AND data->>'group' = 'team-a/giant'") > 0,
        60,
        "the giant gang's FailedScheduling diagnosis",
    )

    # kubectl get pods -A -o wide: NODE column = where the worker bound each pod
    rows = _table(k8s.kubectl("get", "pods", "-A", "-o", "wide").stdout)
    header, body = rows[0], rows[1:]
    assert header[:3] == ["NAMESPACE", "NAME", "READY"] and "NODE" in header
    node_col = header.index("NODE")
    shown = {f"{r[0]}/{r[1]}": r[node_col] for r in body}
    assert shown == {k: (v or "<none>") for k, v in pods.items()}
    assert shown["team-a/llm-pretrain-0"].startswith("node-")
    assert shown["team-a/giant-0"] == "<none>"

    # kubectl get podgroups -A: minCount, scheduled, the InitiallyScheduled reason
    groups = {f"{r[0]}/{r[1]}": r for r in _table(k8s.kubectl("get", "podgroups", "-A").stdout)[1:]}
    assert groups["team-a/llm-pretrain"][2:5] == ["4", "4/4", "Scheduled"]
    assert groups["team-a/giant"][2:5] == ["3", "0/3", "Unschedulable"]

    # kubectl describe podgroup: the condition and the FailedScheduling events
    text = k8s.kubectl("describe", "podgroup", "-n", "team-a", "giant").stdout
    assert "PodGroupInitiallyScheduled" in text and "Unschedulable" in text
    events = text.split("Events:", 1)[1]
    assert "FailedScheduling" in events and "Warning" in events and "podledger-scheduler" in events
    with k8s.database.connect() as c:
        message = scalar(
            c,
            "SELECT data->>'message' FROM events WHERE type = 'PodGroupUnschedulable' "
            "AND data->>'group' = 'team-a/giant' ORDER BY position LIMIT 1",
        )
    assert message.split(",")[0] in events.replace("\n", " ")
    # podledger's diagnosis in one line beside upstream's message (issue 31)
    assert "Diagnosis" in events and "podledger: fits only 0 of 3 pods" in events.replace("\n", " ")

    # kubectl get events: the scheduler's decisions as core/v1 Events
    ev_rows = k8s.kubectl("get", "events", "-n", "team-a").stdout
    assert "Successfully assigned team-a/llm-pretrain-0 to " + shown["team-a/llm-pretrain-0"] in ev_rows

    # everything written through this API keeps the log verifiable and replayable
    assert _podledger(k8s, "verify").returncode == 0
    rep = _podledger(k8s, "replay", "--verify")
    assert rep.returncode == 0 and " 0 mismatches" in rep.stdout, rep.stdout + rep.stderr


def _kubectl_cells(text: str) -> Table:
    """kubectl's table cut into cells at its header's column starts (a header such as
    ``NOMINATED NODE`` holds single spaces; columns are at least three spaces apart)."""
    header, *rows = text.splitlines()
    found = list(re.finditer(r"\S+(?: \S+)*", header))
    starts = [m.start() for m in found]
    table = Table(*(m.group() for m in found))
    for row in rows:
        ends = [*starts[1:], len(row)]
        table.add_row(*(row[a:b].rstrip() for a, b in zip(starts, ends, strict=True)))
    return table


def test_podledgers_plain_tables_are_laid_out_as_kubectl_lays_out_its_own(k8s: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """kubectl is the oracle of ``api.cli.printer``'s layout: its own tables, cut into cells
    and laid out again by the printer, come out byte for byte (widths, padding, the minimal
    width, the unpadded last column)."""
    f = tmp_path / "layout.yaml"
    f.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: layout-node}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
        "---\napiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\n"
        "metadata: {name: layout-gang, namespace: team-layout}\n"
        "spec: {schedulingPolicy: {gang: {minCount: 2}}}\n"
        + "".join(
            f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: team-layout}}\n"
            "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
            for name in ("a", "layout-with-a-rather-long-name", "mid-size")
        )
    )
    k8s.kubectl("apply", "--server-side", "-f", str(f))
    for args in (
        ("get", "pods", "-n", "team-layout"),
        ("get", "pods", "-A", "-o", "wide"),
        ("get", "podgroups", "-A"),
        ("get", "nodes", "-o", "wide"),
        # a column narrower than the minimal width: C (the container "c") is 6 wide, not 4
        (
            "get",
            "pods",
            "-n",
            "team-layout",
            "-o",
            "custom-columns=C:.spec.containers[0].name,NAME:.metadata.name",
        ),
    ):
        text = k8s.kubectl(*args).stdout
        table = _kubectl_cells(text)
        assert table.rows, (args, text)
        assert render_plain(table)[0] == text, args


def test_kubectl_get_pods_watch_prints_binds_as_they_happen(k8s: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        "".join(
            f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: w-node-{i}}}\n"
            "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
            for i in range(2)
        )
    )
    k8s.kubectl("apply", "--server-side", "-f", str(nodes))

    def pods_yaml(names: list[str]) -> str:
        return "".join(
            f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {n}, namespace: team-w}}\n"
            "spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}\n"
            for n in names
        )

    seed = tmp_path / "seed.yaml"
    seed.write_text(pods_yaml(["w-0"]))
    k8s.kubectl("apply", "--server-side", "-f", str(seed))
    k8s.ensure_worker()
    wait_until(lambda: _pods(k8s).get("team-w/w-0"), 120, "the worker to bind w-0")
    watch = k8s.popen_kubectl("get", "pods", "-n", "team-w", "-o", "wide", "-w")
    # the list part of the watch has printed w-0: every later change arrives through the watch
    watch.wait_for(lambda lines: any(x.startswith("w-0 ") for x in lines), 60, "the listed w-0 row")
    pods = tmp_path / "pods.yaml"
    pods.write_text(pods_yaml(["w-1", "w-2", "w-3"]))
    k8s.kubectl("apply", "--server-side", "-f", str(pods))

    def bound_rows(lines: list[str]) -> dict[str, str]:
        out = {}
        for x in lines:
            cols = x.split()
            if cols and cols[0].startswith("w-") and len(cols) > 6 and cols[6] != "<none>":
                out[cols[0]] = cols[6]
        return out

    lines = watch.wait_for(lambda lines: len(bound_rows(lines)) == 4, 120, "a row with its node for each pod")
    watch.stop()
    got = bound_rows(lines)
    expected = {k.split("/")[1]: v for k, v in _pods(k8s).items() if k.startswith("team-w/")}
    assert got == expected
    # each new pod appeared Pending before its bind: the watch printed the change as it happened
    for name in ("w-1", "w-2", "w-3"):
        first = next(i for i, x in enumerate(lines) if x.startswith(name + " "))
        assert "Pending" in lines[first].split(), lines


def test_kubectl_delete_pod_appends_a_delete(k8s: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "pod.yaml"
    f.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: doomed, namespace: team-d}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
    )
    k8s.kubectl("apply", "--server-side", "-f", str(f))
    before = k8s.count()
    out = k8s.kubectl("delete", "pod", "-n", "team-d", "doomed").stdout
    assert 'pod "doomed" deleted' in out
    with k8s.database.connect() as c:
        rows = c.execute(
            "SELECT type, stream, meta->>'actor' FROM events WHERE position > %(p)s "
            "AND stream = 'pod/team-d/doomed' ORDER BY position",
            {"p": before},
        ).fetchall()
    assert [tuple(r) for r in rows] == [("PodDeleted", "pod/team-d/doomed", "writer")]
    # (kubectl reports the namespace, which has no object left, rather than the pod)
    res = k8s.kubectl("get", "pod", "-n", "team-d", "doomed", check=False)
    assert res.returncode != 0 and "(NotFound)" in res.stderr
    assert k8s.kubectl("get", "pods", "-A", "--field-selector", "metadata.name=doomed").stdout == ""


def test_a_reader_token_cannot_apply(k8s: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "pod.yaml"
    f.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: sneaky, namespace: team-r}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
    )
    before = k8s.inputs()
    res = k8s.kubectl("apply", "--server-side", "-f", str(f), role="reader", check=False)
    assert res.returncode != 0
    assert "Forbidden" in res.stderr and 'User "reader" cannot patch resource "pods"' in res.stderr
    assert k8s.inputs() == before
    # the same token reads
    assert k8s.kubectl("get", "nodes", role="reader").returncode == 0


def test_invalid_input_is_a_422_status_and_appends_nothing(k8s: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "bad.yaml"
    f.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad, namespace: team-x}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n"
    )
    before = k8s.inputs()
    res = k8s.kubectl("apply", "--server-side", "-f", str(f), check=False)
    assert res.returncode != 0
    assert (
        '"bad" is invalid' in res.stderr
        and "Invalid" not in res.stdout
        and "spec.containers[0].resources.requests[cpu]" in res.stderr  # upstream's path syntax
        and 'The Pod "bad" is invalid' in res.stderr
    )
    assert k8s.inputs() == before


def test_kubectl_patches_a_podgroups_status_subresource(k8s: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    import yaml

    f = tmp_path / "pg.yaml"
    f.write_text(
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: st, namespace: team-st}\n"
        "spec: {schedulingPolicy: {gang: {minCount: 2}}}\n"
    )
    k8s.kubectl("apply", "--server-side", "-f", str(f))
    cond = {
        "type": "PodGroupInitiallyScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "",
        "lastTransitionTime": "2026-12-04T10:00:00Z",
    }
    args = ("patch", "podgroup.v1beta1.scheduling.k8s.io", "st", "-n", "team-st", "--subresource=status")
    out = k8s.kubectl(*args, "--type=strategic", "-p", json.dumps({"status": {"conditions": [cond]}}))
    assert "patched" in out.stdout
    doc = yaml.safe_load(
        k8s.kubectl("get", "podgroup.v1beta1.scheduling.k8s.io", "st", "-n", "team-st", "-o", "yaml").stdout
    )
    assert [(c["type"], c["status"], c["reason"]) for c in doc["status"]["conditions"]] == [
        ("PodGroupInitiallyScheduled", "True", "Scheduled")
    ]
    with k8s.database.connect() as c:
        meta = scalar(
            c,
            "SELECT meta FROM events WHERE type = 'PodGroupConditionChanged' "
            "AND data->>'group' = 'team-st/st'",
        )
    assert meta["observed"] is True and meta["actor"] == "writer"
    # a bad condition is a 422 naming the field; a reader is refused
    bad = {"status": {"conditions": [{**cond, "reason": ""}]}}
    res = k8s.kubectl(*args, "--type=merge", "-p", json.dumps(bad), check=False)
    assert res.returncode != 0 and "status.conditions[0].reason: Required value" in res.stderr
    res = k8s.kubectl(*args, "--type=merge", "-p", json.dumps({"status": {}}), role="reader", check=False)
    assert res.returncode != 0 and "Forbidden" in res.stderr
