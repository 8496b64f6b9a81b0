"""``jobset.x-k8s.io/v1alpha2`` JobSet with ``spec.scheduling`` (kubernetes-sigs/jobset KEP-969):
field validation with the webhook's rules, and the JobSet controller's compile step as upstream's
alpha implementation does it (pkg/controllers/scheduling.go, workload_builder.go): one Workload,
one PodGroup for the whole JobSet or one per ReplicatedJob (group, Job replica), then the Jobs and,
through the Job controller, their pods."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from ledger.resources.admission import InMemoryState, admit
from ledger.resources.job import expand_jobs
from ledger.resources.jobset import compile_jobset, pod_group_name, workload_name
from ledger.resources.models import validate_raw
from ledger.resources.models.jobset import MSG_BOTH_MODELS, JobSet


def rjob(name: str, replicas: int = 1, parallelism: int = 2, pcn: str | None = "high") -> dict[str, Any]:
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "img"}]}
    if pcn:
        pod["priorityClassName"] = pcn
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": pod}}
        },
    }


def jobset(scheduling: dict[str, Any] | None, *rjs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"replicatedJobs": list(rjs or (rjob("leader", 1, 1), rjob("worker", 2, 4))), **spec},
    }
    if scheduling is not None:
        out["spec"]["scheduling"] = scheduling
    return out


def valid(raw: dict[str, Any]) -> JobSet:
    obj, probs = validate_raw("JobSet", raw)
    assert probs == [], probs
    assert isinstance(obj, JobSet)
    return obj


def problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    obj, probs = validate_raw("JobSet", raw)
    assert (obj is None) == bool(probs)
    return probs


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def by_kind(objs: list[Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        out.setdefault(o.KIND, []).append(o.normalized())
    return out


# --------------------------------------------------------------------------- compile


def test_top_level_gang_is_one_pod_group_of_every_pod() -> None:
    js = valid(
        jobset({"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": "rack"}]}})
    )
    objs = by_kind(expand_jobs([js])[0])
    wl = f"train-{_sha('JobSet/ml/train')}"
    assert workload_name(js) == wl
    (workload,) = objs["Workload"]
    assert workload["metadata"]["name"] == wl
    (tmpl,) = workload["spec"]["podGroupTemplates"]
    # top-level mode: the template and the PodGroup take the JobSet's hashed name
    assert tmpl["name"] == wl and pod_group_name(js, tmpl["name"]) == wl
    assert tmpl["schedulingPolicy"] == {"gang": {"minCount": 1 * 1 + 2 * 4}}  # parallelism x replicas
    assert tmpl["schedulingConstraints"] == {"topology": [{"key": "rack"}]}
    assert tmpl["priorityClassName"] == "high"
    (pg,) = objs["PodGroup"]
    assert pg["metadata"]["name"] == wl and pg["spec"]["workloadRef"] == {
        "workloadName": wl,
        "templateName": wl,
    }
    assert [j["metadata"]["name"] for j in objs["Job"]] == [
        "train-leader-0",
        "train-worker-0",
        "train-worker-1",
    ]
    for j in objs["Job"]:
        assert j["spec"]["template"]["spec"]["schedulingGroup"] == {"podGroupName": wl}
        assert j["metadata"]["annotations"]["scheduling.k8s.io/group-template-name"] == wl
        assert j["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    pods = objs["Pod"]
    assert len(pods) == 9 and {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {wl}
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in pods} == {"Job"}


def test_an_empty_scheduling_block_is_a_top_level_gang() -> None:
    objs = by_kind(compile_jobset(valid(jobset({}))))
    assert objs["Workload"][0]["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {
        "gang": {"minCount": 9}
    }


def test_basic_top_level_policy_has_no_min_count() -> None:
    objs = by_kind(compile_jobset(valid(jobset({"schedulingPolicy": {"basic": {}}}))))
    assert objs["PodGroup"][0]["spec"]["schedulingPolicy"] == {"basic": {}}


def test_per_replicated_job_entries_and_groups() -> None:
    sched = {
        "replicatedJobs": [
            {"targetReplicatedJobs": ["leader"], "schedulingPolicy": {"basic": {}}},
            {
                "targetReplicatedJobs": ["worker", "ps"],
                "schedulingPolicy": {"gang": {}},
                "disruptionMode": {"all": {}},
            },
        ]
    }
    js = valid(jobset(sched, rjob("leader", 1, 1), rjob("worker", 2, 4), rjob("ps", 1, 2)))
    objs = by_kind(compile_jobset(js))
    leader = f"leader-{_sha('ReplicatedJobGroup/ml/train/leader')}"  # an entry: a group of one
    group = f"worker-ps-{_sha('ReplicatedJobGroup/ml/train/worker-ps')}"
    templates = {t["name"]: t for t in objs["Workload"][0]["spec"]["podGroupTemplates"]}
    assert set(templates) == {leader, group}
    assert templates[leader]["schedulingPolicy"] == {"basic": {}}
    assert templates[group]["schedulingPolicy"] == {"gang": {"minCount": 2 * 4 + 1 * 2}}
    assert templates[group]["disruptionMode"] == {"all": {}}
    assert sorted(pg["metadata"]["name"] for pg in objs["PodGroup"]) == sorted(
        [f"train-{leader}", f"train-{group}"]
    )
    groups = {
        j["metadata"]["name"]: j["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"]
        for j in objs["Job"]
    }
    assert groups == {
        "train-leader-0": f"train-{leader}",
        "train-worker-0": f"train-{group}",
        "train-worker-1": f"train-{group}",
        "train-ps-0": f"train-{group}",
    }


def test_job_level_entry_is_one_pod_group_per_replica() -> None:
    sched = {
        "replicatedJobs": [
            {"targetReplicatedJobs": ["leader"]},
            {"targetReplicatedJobs": ["worker"], "job": {"schedulingPolicy": {"gang": {}}}},
        ]
    }
    objs = by_kind(compile_jobset(valid(jobset(sched))))
    names = [t["name"] for t in objs["Workload"][0]["spec"]["podGroupTemplates"]]
    want = [f"worker-{i}-{_sha(f'Job/ml/train/worker/{i}')}" for i in (0, 1)]
    assert names[1:] == want  # in entry order: leader's entry, then one per worker replica
    for t in objs["Workload"][0]["spec"]["podGroupTemplates"][1:]:
        assert t["schedulingPolicy"] == {"gang": {"minCount": 4}}  # the Job's own parallelism


def test_sequenced_startup_falls_back_to_one_pod_group_per_replicated_job() -> None:
    leader, worker = rjob("leader", 1, 1), rjob("worker", 2, 4)
    worker["dependsOn"] = [{"name": "leader", "status": "Ready"}]
    objs = by_kind(compile_jobset(valid(jobset({}, leader, worker))))
    policies = sorted(
        t["schedulingPolicy"]["gang"]["minCount"] for t in objs["Workload"][0]["spec"]["podGroupTemplates"]
    )
    assert policies == [1, 8]


def test_no_scheduling_compiles_plain_jobs_and_suspend_compiles_no_pods() -> None:
    objs = by_kind(compile_jobset(valid(jobset(None))))
    assert set(objs) == {"Job"}  # no Workload of the JobSet's: each Job is the Job controller's
    assert all("schedulingGroup" not in j["spec"]["template"]["spec"] for j in objs["Job"])
    suspended = by_kind(expand_jobs([valid(jobset({}, suspend=True))])[0])
    assert set(suspended) == {"JobSet", "Job"}
    assert all(j["spec"]["suspend"] is True for j in suspended["Job"])


def test_long_names_stay_within_63_characters() -> None:
    long = "r" * 60
    js = valid(jobset({"replicatedJobs": [{"targetReplicatedJobs": [long]}]}, rjob(long)))
    pg = by_kind(compile_jobset(js))["PodGroup"][0]["metadata"]["name"]
    assert len(pg) <= 63 and pg.startswith("train-")


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("sched", "path", "fragment"),
    [
        (
            {
                "schedulingPolicy": {"gang": {}},
                "replicatedJobs": [{"targetReplicatedJobs": ["leader", "worker"]}],
            },
            "spec.scheduling",
            MSG_BOTH_MODELS,
        ),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["leader"]}]},
            "spec.scheduling.replicatedJobs",
            '"worker"',
        ),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["leader", "worker", "nope"]}]},
            "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[2]",
            "not found",
        ),
        (
            {
                "replicatedJobs": [
                    {"targetReplicatedJobs": ["leader", "worker"]},
                    {"targetReplicatedJobs": ["worker"]},
                ]
            },
            "spec.scheduling.replicatedJobs[1].targetReplicatedJobs[0]",
            "duplicate",
        ),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["leader", "worker"], "job": {}}]},
            "spec.scheduling.replicatedJobs[0].targetReplicatedJobs",
            "exactly one",
        ),
        (
            {
                "replicatedJobs": [
                    {"targetReplicatedJobs": ["leader"]},
                    {"targetReplicatedJobs": ["worker"], "schedulingPolicy": {"gang": {}}, "job": {}},
                ]
            },
            "spec.scheduling.replicatedJobs[1].schedulingPolicy",
            "together with job",
        ),
        (
            {
                "replicatedJobs": [
                    {"targetReplicatedJobs": ["leader"]},
                    {
                        "targetReplicatedJobs": ["worker"],
                        "job": {"schedulingPolicy": {"gang": {"minCount": 5}}},
                    },
                ]
            },
            "spec.scheduling.replicatedJobs[1].job.schedulingPolicy.gang.minCount",
            "parallelism (4)",
        ),
        ({"schedulingPolicy": {"basic": {}, "gang": {}}}, "spec.scheduling.schedulingPolicy", ""),
        ({"disruptionMode": {}}, "spec.scheduling.disruptionMode", ""),
    ],
)
def test_scheduling_refusals(sched: dict[str, Any], path: str, fragment: str) -> None:
    got = problems(jobset(sched))
    assert any(p == path and fragment in m for p, m in got), got


def test_one_pod_group_needs_one_priority_class_and_at_most_8_templates() -> None:
    got = problems(jobset({}, rjob("a", pcn="high"), rjob("b", pcn="low")))
    assert got[0][0] == "spec.scheduling" and "priorityClassName" in got[0][1]
    many = jobset(
        {"replicatedJobs": [{"targetReplicatedJobs": ["w"], "job": {}}]},
        rjob("w", replicas=9, parallelism=1),
    )
    assert any("at most 8" in m for _, m in problems(many))


def test_job_templates_may_not_carry_their_own_scheduling() -> None:
    rj = rjob("leader")
    rj["template"]["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    got = problems(jobset({}, rj))
    assert (
        "spec.replicatedJobs[0].template.spec.scheduling",
        "forbidden: may not be set when spec.scheduling is set",
    ) in got
    bad = rjob("leader")
    bad["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert (
        problems(jobset(None, bad))[0][0]
        == "spec.replicatedJobs[0].template.spec.template.spec.restartPolicy"
    )


def test_scheduling_is_immutable_unless_suspended() -> None:
    state = InMemoryState()
    first = valid(jobset({}))
    out = admit([first], state)
    assert not out.refused
    state.apply(out)
    changed = valid(jobset({"schedulingPolicy": {"basic": {}}}))
    refused = admit([changed], state)
    assert refused.refused and refused.rejected[0].reasons[0].field == "spec.scheduling"
    again = admit([valid(jobset({}))], state)
    assert not again.refused and again.results[0].action == "unchanged"
