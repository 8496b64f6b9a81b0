"""The CLI as a user runs it: a subprocess against a real database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from ledger.database import Database
from ledger.sql import scalar

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cluster"
PODLEDGER = str(Path(sys.executable).parent / "podledger")


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PODLEDGER, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=180,
    )


def events(database: Database) -> int:
    with database.connect() as c:
        return int(scalar(c, "SELECT count(*) FROM events"))


def test_apply_twice_second_run_is_unchanged_and_appends_nothing(database):
    first = cli("apply", "-f", str(EXAMPLES))
    assert first.returncode == 0, first.stderr
    assert "podgroup.scheduling.k8s.io/llm-pretrain created" in first.stdout
    assert "pod/llm-pretrain-0 created" in first.stdout
    n = events(database)
    assert n == len([line for line in first.stdout.splitlines() if line.endswith("created")])
    second = cli("apply", "-f", str(EXAMPLES))
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert lines and all(line.endswith(" unchanged") for line in lines)
    assert events(database) == n


def _ten_docs(bad_index: int) -> str:
    docs = []
    for i in range(10):
        cpu = "-1" if i == bad_index else "100m"
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\n"
            f"spec: {{containers: [{{name: c, resources: {{requests: {{cpu: '{cpu}'}}}}}}]}}\n"
        )
    return "---\n".join(docs)


def test_one_invalid_document_of_ten_appends_nothing(database, tmp_path):
    f = tmp_path / "ten.yaml"
    f.write_text(_ten_docs(6))
    res = cli("apply", "-f", str(f))
    assert res.returncode == 1
    assert "Pod default/p6" in res.stderr and "spec.containers[0].resources.requests.cpu" in res.stderr
    assert "document 7" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert events(database) == 0


def test_malformed_yaml_reports_its_line(database, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Pod\nmetadata: [unclosed\n"
    )
    res = cli("apply", "-f", str(f))
    assert res.returncode == 1
    assert "line" in res.stderr and "Traceback" not in res.stderr
    assert events(database) == 0


def test_unknown_kind_and_api_version(database, tmp_path):
    f = tmp_path / "k.yaml"
    f.write_text(
        "apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n---\napiVersion: v2\nkind: Pod\nmetadata: {name: p}\n"
    )
    res = cli("apply", "-f", str(f))
    assert res.returncode == 1
    assert "Gadget" in res.stderr and "apiVersion" in res.stderr
    assert events(database) == 0


def test_admission_refusal_records_one_event_and_changes_no_state(database):
    manifest = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: 4}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\n"
        "spec: {priorityClassName: gold, containers: [{name: c}]}\n"
    )
    res = cli("apply", "-f", "-", stdin=manifest)
    assert res.returncode == 1
    assert 'no PriorityClass with name "gold" was found' in res.stderr
    with database.connect() as c:
        rows = c.execute("SELECT type, data FROM events").fetchall()
        assert [r[0] for r in rows] == ["AdmissionRejected"]
        assert rows[0][1]["rejected"][0]["name"] == "p1"
        assert scalar(c, "SELECT count(*) FROM objects") == 0


def test_get_pods_json_matches_what_was_applied(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    res = cli("get", "pods", "-A", "-o", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["kind"] == "List"
    by_name = {(i["metadata"]["namespace"], i["metadata"]["name"]): i for i in doc["items"]}
    from ledger.resources.job import expand_jobs
    from ledger.resources.parse import iter_path, validate

    docs = list(iter_path(EXAMPLES))
    applied = [d.raw for d in docs if d.raw.get("kind") == "Pod"]
    # the example Job's pods, compiled by the Job controller's step
    jobs = [validate(d)[0] for d in docs if d.raw.get("kind") == "Job"]
    compiled = [o for o in expand_jobs([j for j in jobs if j is not None])[0] if o.KIND == "Pod"]
    assert compiled and len(by_name) == len(applied) + len(compiled)
    for pod in compiled:
        assert by_name[(pod.namespace, pod.name)]["metadata"]["labels"]["batch.kubernetes.io/job-name"]
    for raw in applied:
        got = by_name[(raw["metadata"].get("namespace", "default"), raw["metadata"]["name"])]
        assert got["status"]["phase"] == "Pending"
        want = raw["spec"]["containers"][0]["resources"]["requests"]
        assert set(got["spec"]["containers"][0]["resources"]["requests"]) == set(want)
    one = json.loads(cli("get", "po", "team-a/llm-pretrain-0", "-o", "json").stdout)
    assert (
        one["metadata"]["name"] == "llm-pretrain-0"
        and one["spec"]["schedulingGroup"]["podGroupName"] == "llm-pretrain"
    )


def test_short_names_tables_and_delete(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    table = cli("get", "no")
    assert table.returncode == 0 and "NAME" in table.stdout and "node-r1-1" in table.stdout
    assert "llm-pretrain" in cli("get", "pg", "-A").stdout
    assert "pipeline-1" in cli("get", "cpg", "-A").stdout
    res = cli("delete", "pdb", "team-b/bert-sweep")
    assert res.returncode == 0 and "poddisruptionbudget.policy/bert-sweep deleted" in res.stdout
    missing = cli("delete", "pdb", "team-b/bert-sweep")
    assert missing.returncode == 1 and "not found" in missing.stderr
    assert cli("get", "pods", "team-a/nope").returncode == 1


def test_schedule_verify_and_rebuild(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    res = cli("schedule", "--until-idle")
    assert res.returncode == 0, res.stderr
    with database.connect() as c:
        bound = scalar(c, "SELECT count(*) FROM objects WHERE kind = 'Pod' AND status->>'phase' = 'Bound'")
        before = c.execute(
            "SELECT kind, namespace, name, object, status FROM objects ORDER BY 1, 2, 3"
        ).fetchall()
    assert bound > 0
    assert "hash chain intact" in cli("verify").stdout
    assert cli("projections", "rebuild").returncode == 0
    with database.connect() as c:
        after = c.execute(
            "SELECT kind, namespace, name, object, status FROM objects ORDER BY 1, 2, 3"
        ).fetchall()
    assert before == after


def test_demo_exits_zero(database):
    res = cli("demo")
    assert res.returncode == 0, res.stderr
    assert "PodGroupInitiallyScheduled=True" in res.stdout
    assert "node-r4-1" in res.stdout
    ver = cli("replay", "--verify")
    assert ver.returncode == 0 and " 0 mismatches" in ver.stdout, ver.stdout + ver.stderr
    again = cli("demo")  # idempotent: applying the examples again changes nothing
    assert again.returncode == 0 and "0 created or updated" in again.stdout
    # ... and still tells the story: explained as of the moment before the node joined
    assert "Verdict:   Unschedulable" in again.stdout and " 0 mismatches" in again.stdout


def test_demo_tells_the_story_in_order(database):
    """A fresh ledger: the blocked gang is Unschedulable with per-node reasons in upstream's
    words and its quota, capacity joins, it is Scheduled, and every decision replays."""
    res = cli("demo")
    assert res.returncode == 0, res.stderr
    text = res.stdout
    verdict = text.index("Verdict:   Unschedulable")
    why = text.index("NodeResourcesFit (Filter): Insufficient nvidia.com/gpu", verdict)  # closest rack
    quota = text.index("Quota quota-a: used", verdict)
    scheduled = text.index("team-a/vision-pretrain: Scheduled", quota)
    history = text.index("PodGroupScheduled", scheduled)
    replayed = text.index(" 0 mismatches", history)
    assert verdict < why < quota < scheduled < history < replayed
    # the example Job (batch/v1 with .spec.scheduling) is compiled into a gang that schedules
    job_line = next(line for line in text.splitlines() if line.startswith("Job team-b/feature-etl "))
    group = job_line.split("PodGroup ", 1)[1].split()[0]
    assert group.startswith("team-b/feature-etl-")
    assert any(group.split("/")[1] in line and "Scheduled" in line for line in text[:verdict].splitlines())
    explained = cli("explain", "job", "team-b/feature-etl")
    assert explained.returncode == 0, explained.stderr
    assert (
        "Job:       team-b/feature-etl" in explained.stdout
        and "Verdict:   Scheduled (4/4 pods bound)" in explained.stdout
    )
    assert "node-r4-5" in text[scheduled:history]  # it fits only once the node has joined
    tail = text[replayed:]
    assert "Try next:" in tail and "FROM v_group_wait_times" in tail
    with database.connect() as c:
        bound = scalar(
            c,
            "SELECT count(*) FROM objects WHERE kind = 'Pod' AND namespace = 'team-a' "
            "AND name LIKE 'vision-pretrain-%' AND status->>'phase' = 'Bound'",
        )
    assert bound == 2


def test_get_yaml_round_trips_through_apply_for_every_kind(database):
    """`get KIND -o yaml | apply -f -` is a no-op for every object of the example cluster:
    quantities come out in Kubernetes notation (64, 31500m, 124Gi), not in stored base units."""
    from ledger.resources.kinds import resolve_kind

    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    n = events(database)
    kinds = (
        "priorityclasses",
        "nodes",
        "elasticquotas",
        "podgroups",
        "compositepodgroups",
        "pods",
        "pdb",
        "workloads",
        "jobs",
    )
    seen = 0
    for kind in kinds:
        got = cli("get", kind, "-A", "-o", "yaml")
        assert got.returncode == 0, got.stderr
        again = cli("apply", "-f", "-", stdin=got.stdout)
        assert again.returncode == 0, (kind, again.stderr)
        lines = again.stdout.splitlines()
        assert lines and all(line.endswith(" unchanged") for line in lines), (kind, again.stdout)
        # a Job's apply also lists the objects its controller compiles (counted under their kinds)
        seen += sum(1 for line in lines if line.split("/", 1)[0] == resolve_kind(kind).group)
    assert events(database) == n
    assert seen == n  # every object of the example went through the round trip
    node = yaml.safe_load(cli("get", "nodes", "node-r1-1", "-o", "yaml").stdout)
    assert node["status"]["capacity"]["cpu"] == "32" and node["status"]["allocatable"]["cpu"] == "31500m"
    assert list(node)[:3] == ["apiVersion", "kind", "metadata"]


def test_python_dash_m_api_cli_is_the_same_command_line():
    res = subprocess.run(
        [sys.executable, "-m", "api.cli", "get", "nosuchkind"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=120,
    )
    assert res.returncode == 1
    assert res.stderr.startswith('error: the server doesn\'t have a resource type "nosuchkind"'), res.stderr


def test_podgroup_at_v1_and_v1beta1_is_one_object_shown_at_its_version(database):
    """Issue 16: scheduling.k8s.io/v1 and v1beta1 Workload/PodGroup are the same objects."""
    doc = "apiVersion: scheduling.k8s.io/{v}\nkind: PodGroup\nmetadata: {{name: g, namespace: ns}}\nspec: {{schedulingPolicy: {{gang: {{minCount: 2}}}}}}\n"
    res = cli("apply", "-f", "-", stdin=doc.format(v="v1"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "podgroup.scheduling.k8s.io/g created"
    got = yaml.safe_load(cli("get", "podgroup", "ns/g", "-o", "yaml").stdout)
    assert (
        got["apiVersion"] == "scheduling.k8s.io/v1"
        and got["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2
    )
    res = cli("apply", "-f", "-", stdin=doc.format(v="v1beta1"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().startswith("podgroup.scheduling.k8s.io/g ") and "created" not in res.stdout
    got = yaml.safe_load(cli("get", "podgroups", "-A", "-o", "yaml").stdout)
    assert [i["apiVersion"] for i in got["items"]] == ["scheduling.k8s.io/v1beta1"]
