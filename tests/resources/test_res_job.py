"""``batch/v1`` Job with ``.spec.scheduling`` (issue 16 item 4, KEP-5547 / KEP-6089): field
validation with upstream's rules, the Job controller's compile step, and the update rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ledger.resources.admission import InMemoryState, admit
from ledger.resources.job import COMPLETION_INDEX, JOB_NAME_LABEL, compile_job, expand_jobs, owning_job
from ledger.resources.models import validate_raw
from ledger.resources.models.batch import Job

BASE: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "ml"},
    "spec": {
        "parallelism": 4,
        "completions": 4,
        "completionMode": "Indexed",
        "scheduling": {
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
            "disruptionMode": {"all": {}},
        },
        "template": {
            "metadata": {"labels": {"app": "train"}},
            "spec": {
                "restartPolicy": "Never",
                "priorityClassName": "high",
                "containers": [{"name": "c", "image": "img", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
            },
        },
    },
}


def job(**changes: Any) -> dict[str, Any]:
    """BASE with ``spec`` keys replaced (``None`` deletes); ``sched`` replaces spec.scheduling."""
    raw = copy.deepcopy(BASE)
    for key, value in changes.items():
        target = raw["spec"] if key != "sched" else None
        if key == "sched":
            if value is None:
                raw["spec"].pop("scheduling")
            else:
                raw["spec"]["scheduling"] = value
        elif value is None:
            target.pop(key)  # type: ignore[union-attr]
        else:
            target[key] = value  # type: ignore[index]
    return raw


def problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    obj, probs = validate_raw("Job", raw)
    assert (obj is None) == bool(probs)
    return probs


def valid(raw: dict[str, Any]) -> Job:
    obj, probs = validate_raw("Job", raw)
    assert probs == [], probs
    assert isinstance(obj, Job)
    return obj


# --------------------------------------------------------------------------- validation


def test_the_kep_example_is_valid() -> None:
    valid(BASE)


@pytest.mark.parametrize(
    ("sched", "path", "message"),
    [
        (
            {"schedulingPolicy": {}},
            "spec.scheduling.schedulingPolicy",
            "must specify exactly one of: `basic`, `gang`",
        ),
        (
            {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}},
            "spec.scheduling.schedulingPolicy",
            "must specify exactly one of: `basic`, `gang`",
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": 0}}},
            "spec.scheduling.schedulingPolicy.gang.minCount",
            "required value",
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": -1}}},
            "spec.scheduling.schedulingPolicy.gang.minCount",
            "must be greater than or equal to 1",
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": 5}}},
            "spec.scheduling.schedulingPolicy.gang.minCount",
            "invalid value 5: must be less than or equal to spec.parallelism (4)",
        ),
        (
            {
                "schedulingPolicy": {"gang": {}},
                "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]},
            },
            "spec.scheduling.schedulingConstraints.topology",
            "too many: 2: must have at most 1 item",
        ),
        (
            {"schedulingConstraints": {"topology": [{"key": ""}]}},
            "spec.scheduling.schedulingConstraints.topology[0].key",
            "must not be empty",
        ),
        (
            {"disruptionMode": {}},
            "spec.scheduling.disruptionMode",
            "must specify exactly one of: `single`, `all`",
        ),
        (
            {"resourceClaims": [{"name": f"c{i}"} for i in range(5)]},
            "spec.scheduling.resourceClaims",
            "must have at most 4 items",
        ),
    ],
)
def test_scheduling_rules_name_the_field(sched: dict[str, Any], path: str, message: str) -> None:
    probs = problems(job(sched=sched))
    assert len(probs) == 1 and probs[0][0] == path and probs[0][1].startswith(message), probs


def test_restart_policy_must_be_on_failure_or_never() -> None:
    raw = job()
    raw["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert problems(raw) == [
        (
            "spec.template.spec.restartPolicy",
            'unsupported value "Always": supported values: "OnFailure", "Never"',
        )
    ]
    del raw["spec"]["template"]["spec"]["restartPolicy"]
    assert problems(raw) == [
        ("spec.template.spec.restartPolicy", 'required value: valid values: "OnFailure", "Never"')
    ]


def test_counts_are_non_negative_and_template_rules_apply() -> None:
    assert problems(job(parallelism=-1, completions=None, sched=None)) == [
        ("spec.parallelism", "must be greater than or equal to 0")
    ]
    raw = job()
    raw["spec"]["template"]["spec"]["containers"] = []
    assert problems(raw) == [("spec.template.spec.containers", "required value: at least one container")]


def test_scheduling_with_a_pod_template_group_is_forbidden() -> None:
    raw = job()
    raw["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    ((path, message),) = problems(raw)
    assert path == "spec.scheduling" and message.startswith(
        "forbidden: may not be set when spec.template.spec.schedulingGroup is set"
    )


# --------------------------------------------------------------------------- compile


def test_gang_job_compiles_to_workload_podgroup_and_indexed_pods() -> None:
    objs = compile_job(valid(BASE))
    assert [o.KIND for o in objs] == ["Workload", "PodGroup", "Pod", "Pod", "Pod", "Pod"]
    wl, pg, *pods = (o.normalized() for o in objs)
    assert wl["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train"}
    (tmpl,) = wl["spec"]["podGroupTemplates"]
    assert tmpl["schedulingPolicy"] == {"gang": {"minCount": 4}}  # defaulted from parallelism
    assert tmpl["schedulingConstraints"] == {"topology": [{"key": "topology.kubernetes.io/zone"}]}
    assert tmpl["disruptionMode"] == {"all": {}} and tmpl["priorityClassName"] == "high"
    assert wl["metadata"]["name"].startswith("train-")
    assert pg["metadata"]["name"].startswith(wl["metadata"]["name"] + "-job-")
    assert pg["spec"]["workloadRef"] == {"workloadName": wl["metadata"]["name"], "templateName": tmpl["name"]}
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert [r["kind"] for r in pg["metadata"]["ownerReferences"]] == ["Job", "Workload"]
    assert pg["metadata"]["ownerReferences"][0]["controller"] is True
    for i, pod in enumerate(pods):
        meta = pod["metadata"]
        assert meta["name"].startswith(f"train-{i}-")
        assert meta["labels"][JOB_NAME_LABEL] == "train" and meta["labels"]["app"] == "train"
        assert meta["labels"][COMPLETION_INDEX] == meta["annotations"][COMPLETION_INDEX] == str(i)
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": pg["metadata"]["name"]}
        assert owning_job(pod) == "ml/train"
    # the Job's minCount is not written back into the Job
    assert "minCount" not in valid(BASE).normalized()["spec"]["scheduling"]["schedulingPolicy"]["gang"]


def test_compilation_is_deterministic_and_unscheduled_jobs_are_basic() -> None:
    a = [o.normalized() for o in compile_job(valid(BASE))]
    b = [o.normalized() for o in compile_job(valid(copy.deepcopy(BASE)))]
    assert a == b
    objs = compile_job(valid(job(sched=None, completionMode=None, parallelism=3, completions=2)))
    wl, pg, *pods = (o.normalized() for o in objs)
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"basic": {}}
    assert pg["spec"]["schedulingPolicy"] == {"basic": {}}
    assert len(pods) == 2  # min(parallelism, completions)
    assert all(COMPLETION_INDEX not in p["metadata"]["labels"] for p in pods)


def test_explicit_min_count_suspend_and_bring_your_own_group() -> None:
    (_, pg, *_) = compile_job(valid(job(sched={"schedulingPolicy": {"gang": {"minCount": 2}}})))
    assert pg.normalized()["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    suspended = compile_job(valid(job(suspend=True)))
    assert [o.KIND for o in suspended] == ["Workload"]  # the PodGroup and pods come on resume
    raw = job(sched=None)
    raw["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    objs = compile_job(valid(raw))
    assert [o.KIND for o in objs] == ["Pod"] * 4
    assert all(o.normalized()["spec"]["schedulingGroup"] == {"podGroupName": "mine"} for o in objs)


# --------------------------------------------------------------------------- admission


def _admit(raw: dict[str, Any], state: InMemoryState) -> list[str]:
    objects, _owners = expand_jobs([valid(raw)])
    outcome = admit(objects, state)
    if not outcome.refused:
        state.apply(outcome)
    prefix = "error: Job ml/train: "
    # the Job's own reasons (its compiled Workload and PodGroup are refused with it)
    return [str(r).removeprefix(prefix) for r in outcome.rejected if str(r).startswith(prefix)]


def test_job_and_its_objects_are_admitted_and_updates_follow_upstream() -> None:
    state = InMemoryState()
    state.apply(
        admit(
            [
                validate_raw(
                    "PriorityClass",
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": "high"},
                        "value": 100,
                    },
                )[0]
            ],
            state,
        )
    )  # type: ignore[list-item]
    assert _admit(BASE, state) == []
    # minCount and parallelism may change (elastic Jobs); the gang follows
    assert (
        _admit(
            job(
                parallelism=6,
                sched={**BASE["spec"]["scheduling"], "schedulingPolicy": {"gang": {"minCount": 5}}},
            ),
            state,
        )
        == []
    )
    # the policy variant, the constraints, completions and the template are immutable
    basic = {
        **BASE["spec"]["scheduling"],
        "schedulingPolicy": {"basic": {}},
        "disruptionMode": {"single": {}},
    }
    assert _admit(job(sched=basic), state) == [
        "spec.scheduling.schedulingPolicy: field is immutable: cannot change from gang to basic "
        "(only gang.minCount may change); spec.scheduling.disruptionMode: field is immutable"
    ]
    assert _admit(job(sched={**BASE["spec"]["scheduling"], "disruptionMode": {"single": {}}}), state) == [
        "spec.scheduling.disruptionMode: field is immutable"
    ]
    assert _admit(job(completions=8), state) == ["spec.completions: field is immutable"]
