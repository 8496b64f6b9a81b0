import json
from typing import Any

import pytest

from ledger.resources.models import (
    MODELS,
    Node,
    Pod,
    PodGroup,
    SchedulerConfig,
    effective_requests,
    from_normalized,
    pod_effective_requests,
    validate_raw,
    validate_scheduler_config_spec,
)

from .conftest import SAMPLES

GI = 1024**3


def valid(kind: str, raw: dict[str, Any]) -> Any:
    obj, problems = validate_raw(kind, raw)
    assert problems == [], problems
    assert obj is not None
    return obj


def problems_of(kind: str, raw: dict[str, Any]) -> list[tuple[str, str]]:
    obj, problems = validate_raw(kind, raw)
    assert obj is None
    return problems


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_round_trip_every_kind(kind: str, samples: dict[str, dict[str, Any]]) -> None:
    obj = valid(kind, samples[kind])
    data = obj.normalized()
    assert MODELS[kind].from_normalized(data).normalized() == data
    assert from_normalized(data).normalized() == data
    # JSON-able, deterministic, and stable through a JSON round trip (as stored in jsonb)
    text = json.dumps(data, sort_keys=True)
    assert MODELS[kind].from_normalized(json.loads(text)).normalized() == data
    assert valid(kind, samples[kind]).normalized() == data


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_minimal_object_round_trips(kind: str, samples: dict[str, dict[str, Any]]) -> None:
    raw = samples[kind]
    minimal = {"apiVersion": raw["apiVersion"], "kind": kind, "metadata": {"name": "x"}}
    if kind == "Pod":
        minimal["spec"] = {"containers": [{"name": "c"}]}
    elif kind == "PodGroup":
        minimal["spec"] = {"schedulingPolicy": {"basic": {}}}
    elif kind == "CompositePodGroup":
        minimal["spec"] = {
            "schedulingPolicy": {"basic": {}},
            "workloadRef": {"workloadName": "w", "templateName": "t"},
        }
    elif kind == "Workload":
        minimal["spec"] = {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}
    elif kind == "ElasticQuotaTree":
        minimal["spec"] = {"root": {"name": "root"}}
    elif kind == "PriorityClass":
        minimal["value"] = 5
    obj = valid(kind, minimal)
    data = obj.normalized()
    assert MODELS[kind].from_normalized(data).normalized() == data


def test_pod_normalized_shape(samples: dict[str, dict[str, Any]]) -> None:
    data = valid("Pod", samples["Pod"]).normalized()
    assert data["metadata"] == {
        "name": "p1",
        "namespace": "team-a",
        "uid": "1234",
        "labels": {"app": "train"},
        "annotations": {"note": "x"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": True}],
    }
    spec = data["spec"]
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": 500, "memory": GI}}
    # requests default to limits for resources without a request
    assert spec["containers"][1]["resources"] == {
        "requests": {"cpu": 1000, "nvidia.com/gpu": 1},
        "limits": {"cpu": 2000, "nvidia.com/gpu": 1},
    }
    assert spec["overhead"] == {"cpu": 100}
    assert spec["tolerations"][1] == {"key": "k", "value": "v"}  # operator Equal is the default
    assert spec["schedulingGroup"] == {"podGroupName": "pg1"}


def test_pod_defaults_are_written() -> None:
    data = valid(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}]},
        },
    ).normalized()
    assert data == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c"}],
            "preemptionPolicy": "PreemptLowerPriority",
            "schedulerName": "default-scheduler",
        },
    }


def test_effective_requests_kubernetes_rule(samples: dict[str, dict[str, Any]]) -> None:
    pod = valid("Pod", samples["Pod"])
    assert isinstance(pod, Pod)
    # cpu: max(0.5 + 1, 3) + 0.1 ; memory: max(1Gi, 100Mi) ; gpu from limits
    assert pod.effective_requests() == {"cpu": 3100, "memory": GI, "nvidia.com/gpu": 1}
    assert pod.has_controller
    assert pod.pod_group_name == "pg1"


def test_effective_requests_with_sidecars() -> None:
    # containers 1 cpu; sidecar 0.5 (adds to the running total); a later init container of 2 cpu
    # runs next to the sidecar: 2.5 > 1.5
    assert effective_requests([{"cpu": 1000}], [({"cpu": 500}, True), ({"cpu": 2000}, False)]) == {
        "cpu": 2500
    }
    assert effective_requests([{"cpu": 1000}], [({"cpu": 500}, True)], {"cpu": 10}) == {"cpu": 1510}
    assert effective_requests([{"memory": 5}, {"memory": 7}], [({"memory": 10}, False)]) == {"memory": 12}


def test_node_allocatable_defaults_to_capacity() -> None:
    node = valid(
        "Node",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi"}},
        },
    )
    assert isinstance(node, Node)
    assert node.allocatable == {"cpu": 4000, "memory": 8 * GI}
    data = node.normalized()
    assert data["status"] == {
        "capacity": {"cpu": 4000, "memory": 8 * GI},
        "allocatable": {"cpu": 4000, "memory": 8 * GI},
    }
    assert "namespace" not in data["metadata"]


def test_node_sample_normalized(samples: dict[str, dict[str, Any]]) -> None:
    data = valid("Node", samples["Node"]).normalized()
    assert data["status"]["allocatable"] == {"cpu": 7500, "memory": 30 * GI, "nvidia.com/gpu": 4, "pods": 110}
    assert data["spec"] == {
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        "unschedulable": True,
    }


def test_podgroup_defaults() -> None:
    pg = valid(
        "PodGroup",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        },
    )
    assert isinstance(pg, PodGroup)
    assert pg.normalized()["spec"] == {
        "schedulingPolicy": {"gang": {"minCount": 3}},
        "disruptionMode": {"single": {}},
        "preemptionPolicy": "PreemptLowerPriority",
    }
    assert pg.spec.min_count == 3
    assert pg.spec.disruption == "Single"
    assert pg.spec.topology_key is None


def test_scheduler_config_defaults_filled() -> None:
    cfg = valid(
        "SchedulerConfig",
        {"apiVersion": "podledger.io/v1alpha1", "kind": "SchedulerConfig", "metadata": {"name": "c"}},
    )
    assert isinstance(cfg, SchedulerConfig)
    assert cfg.normalized()["spec"] == {
        "scoringStrategy": "LeastAllocated",
        "resourceWeights": {"cpu": 1, "memory": 1},
        "pluginWeights": {
            "NodeAffinity": 2,
            "NodeResourcesFit": 1,
            "PodGroupPodsCount": 1,
            "TaintToleration": 3,
        },
        "preemptionAlgorithm": "Auto",
        "backoff": {"initialSeconds": 1, "maxSeconds": 10},
        "podMaxInUnschedulablePodsDuration": 300,
        "featureGates": {
            "CompositePodGroup": True,
            "GenericWorkload": True,
            "PodGroupPreemptionPolicy": True,
            "TopologyAwareWorkloadScheduling": True,
            "WorkloadAwarePreemption": True,
        },
    }


def test_scheduler_config_sample(samples: dict[str, dict[str, Any]]) -> None:
    spec = valid("SchedulerConfig", samples["SchedulerConfig"]).normalized()["spec"]
    assert spec["backoff"] == {"initialSeconds": 0.5, "maxSeconds": 30}
    assert spec["podMaxInUnschedulablePodsDuration"] == 300
    assert spec["pluginWeights"]["TaintToleration"] == 1
    assert spec["pluginWeights"]["NodeAffinity"] == 2
    assert spec["resourceWeights"] == {"cpu": 2, "memory": 1, "nvidia.com/gpu": 5}
    assert spec["featureGates"]["CompositePodGroup"] is False
    assert spec["featureGates"]["GenericWorkload"] is True


def test_scheduler_config_defaults_match_scheduler_model() -> None:
    from scheduler.model import SchedulerConfig as CoreConfig

    spec = valid(
        "SchedulerConfig",
        {"apiVersion": "podledger.io/v1alpha1", "kind": "SchedulerConfig", "metadata": {"name": "c"}},
    ).normalized()["spec"]
    core = CoreConfig()
    assert spec["scoringStrategy"] == core.scoring_strategy
    assert spec["resourceWeights"] == dict(core.resource_weights)
    assert spec["pluginWeights"] == dict(core.plugin_weights)
    assert spec["preemptionAlgorithm"] == core.preemption_algorithm
    assert spec["backoff"] == {
        "initialSeconds": core.backoff_initial_seconds,
        "maxSeconds": core.backoff_max_seconds,
    }
    assert spec["podMaxInUnschedulablePodsDuration"] == core.unschedulable_flush_seconds
    assert spec["featureGates"] == dict(core.feature_gates)


def test_unknown_fields_are_ignored(samples: dict[str, dict[str, Any]]) -> None:
    raw = samples["PodGroup"]
    raw["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled"}]}
    raw["spec"]["somethingNew"] = {"a": 1}
    raw["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    data = valid("PodGroup", raw).normalized()
    assert "somethingNew" not in data["spec"] and "status" not in data
    assert "creationTimestamp" not in data["metadata"]


def test_cluster_scoped_kinds_drop_namespace(samples: dict[str, dict[str, Any]]) -> None:
    raw = samples["PriorityClass"]
    raw["metadata"]["namespace"] = "ignored"
    data = valid("PriorityClass", raw).normalized()
    assert "namespace" not in data["metadata"]


@pytest.mark.parametrize(
    ("kind", "mutate", "path", "fragment"),
    [
        (
            "Pod",
            lambda r: r["spec"]["containers"][0]["resources"]["requests"].update(cpu="abc"),
            "spec.containers[0].resources.requests.cpu",
            "invalid quantity 'abc'",
        ),
        (
            "Pod",
            lambda r: r["spec"]["containers"][0]["resources"]["requests"].update({"nvidia.com/gpu": "-1"}),
            "spec.containers[0].resources.requests[nvidia.com/gpu]",
            "must not be negative",
        ),
        (
            "Pod",
            lambda r: r["spec"].update(priority="5"),
            "spec.priority",
            "expected an integer, got string '5'",
        ),
        ("Pod", lambda r: r["spec"].update(containers=[]), "spec.containers", "at least one container"),
        ("Pod", lambda r: r["spec"].pop("containers"), "spec.containers", "required value"),
        (
            "Pod",
            lambda r: r["spec"].update(preemptionPolicy="Sometimes"),
            "spec.preemptionPolicy",
            "unsupported value 'Sometimes'",
        ),
        (
            "Pod",
            lambda r: r["spec"]["tolerations"].append({"key": "a", "operator": "Exists", "value": "b"}),
            "spec.tolerations[2].operator",
            "value must be empty",
        ),
        (
            "Pod",
            lambda r: r["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"
            ][0]["matchExpressions"][0].update(values=[]),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].values",
            "must be specified",
        ),
        (
            "Pod",
            lambda r: r["spec"]["nodeSelector"].update(disk=True),
            "spec.nodeSelector.disk",
            "expected a string, got boolean true",
        ),
        ("Pod", lambda r: r["metadata"].update(name="Bad_Name"), "metadata.name", "RFC 1123"),
        ("Pod", lambda r: r["metadata"].pop("name"), "metadata.name", "required value"),
        (
            "Pod",
            lambda r: r["spec"]["containers"][1]["resources"]["limits"].update(cpu="500m"),
            "spec.containers[1].resources.requests.cpu",
            "must be less than or equal to cpu limit",
        ),
        (
            "PodGroup",
            lambda r: r["spec"]["schedulingPolicy"]["gang"].update(minCount=0),
            "spec.schedulingPolicy.gang.minCount",
            "must be >= 1",
        ),
        (
            "PodGroup",
            lambda r: r["spec"]["schedulingPolicy"].update(basic={}),
            "spec.schedulingPolicy",
            "exactly one of: `basic`, `gang`",
        ),
        (
            "PodGroup",
            lambda r: r["spec"].update(schedulingPolicy={}),
            "spec.schedulingPolicy",
            "exactly one of: `basic`, `gang`",
        ),
        (
            "PodGroup",
            lambda r: r["spec"]["schedulingConstraints"]["topology"].append({"key": "zone"}),
            "spec.schedulingConstraints.topology",
            "must have at most 1 item",
        ),
        (
            "PodGroup",
            lambda r: r["spec"].update(disruptionMode={"single": {}, "all": {}}),
            "spec.disruptionMode",
            "exactly one of: `single`, `all`",
        ),
        (
            "PodGroup",
            lambda r: r["spec"].update(priority=1_000_000_001),
            "spec.priority",
            "must be <= 1000000000",
        ),
        (
            "PodGroup",
            lambda r: r["spec"].pop("workloadRef"),
            "spec.parentCompositePodGroupName",
            "requires spec.workloadRef",
        ),
        (
            "PodGroup",
            lambda r: r["spec"]["workloadRef"].pop("templateName"),
            "spec.workloadRef.templateName",
            "required value",
        ),
        ("CompositePodGroup", lambda r: r["spec"].pop("workloadRef"), "spec.workloadRef", "required value"),
        (
            "CompositePodGroup",
            lambda r: r["spec"]["schedulingPolicy"]["gang"].update(minGroupCount=0),
            "spec.schedulingPolicy.gang.minGroupCount",
            "must be >= 1",
        ),
        (
            "Workload",
            lambda r: r["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"][0]["schedulingPolicy"][
                "gang"
            ].update(minCount=0),
            "spec.compositePodGroupTemplates[0].podGroupTemplates[0].schedulingPolicy.gang.minCount",
            "must be >= 1",
        ),
        ("PriorityClass", lambda r: r.update(value=2_000_000_000), "value", "must be <= 1000000000"),
        ("PriorityClass", lambda r: r["metadata"].update(name="system-foo"), "metadata.name", "reserved"),
        ("PriorityClass", lambda r: r.pop("value"), "value", "required value"),
        ("PodDisruptionBudget", lambda r: r["spec"].update(minAvailable=1), "spec", "cannot be both set"),
        (
            "PodDisruptionBudget",
            lambda r: r["spec"].update(maxUnavailable="half"),
            "spec.maxUnavailable",
            "percent",
        ),
        (
            "Node",
            lambda r: r["spec"]["taints"][0].update(effect="Sometimes"),
            "spec.taints[0].effect",
            "unsupported value",
        ),
        (
            "Node",
            lambda r: r["status"]["capacity"].update(memory="lots"),
            "status.capacity.memory",
            "invalid quantity 'lots'",
        ),
        (
            "ElasticQuota",
            lambda r: r["spec"]["min"].update(cpu=30),
            "spec.min.cpu",
            "min must be less than or equal to max",
        ),
        (
            "ElasticQuotaTree",
            lambda r: r["spec"]["root"]["children"][1].update(namespaces=["team-a"]),
            "spec.root.children[1].namespaces[0]",
            "belongs to at most one leaf",
        ),
        (
            "ElasticQuotaTree",
            lambda r: r["spec"]["root"]["children"][1]["min"].update(cpu=21),
            "spec.root.children",
            "sums to more than the min",
        ),
        (
            "SchedulerConfig",
            lambda r: r["spec"]["featureGates"].update(Foo=True),
            "spec.featureGates.Foo",
            "unrecognized feature gate",
        ),
        (
            "SchedulerConfig",
            lambda r: r["spec"].update(preemptionAlgorithm="Greedy"),
            "spec.preemptionAlgorithm",
            "unsupported value",
        ),
        (
            "SchedulerConfig",
            lambda r: r["spec"]["backoff"].update(initialSeconds="soon"),
            "spec.backoff.initialSeconds",
            "invalid duration",
        ),
        (
            "SchedulerConfig",
            lambda r: r["spec"]["backoff"].update(maxSeconds=0.1),
            "spec.backoff.maxSeconds",
            "must be >= backoff.initialSeconds",
        ),
    ],
)
def test_validation_errors_name_the_field(
    kind: str, mutate: Any, path: str, fragment: str, samples: dict[str, dict[str, Any]]
) -> None:
    raw = samples[kind]
    mutate(raw)
    problems = problems_of(kind, raw)
    assert any(p == path and fragment in m for p, m in problems), problems


def test_pod_effective_requests_from_normalized_dict(samples: dict[str, dict[str, Any]]) -> None:
    pod = valid("Pod", samples["Pod"])
    assert pod_effective_requests(pod.normalized()) == pod.effective_requests()


def test_union_field_errors_are_merged() -> None:
    raw = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "x"},
        "spec": {"minAvailable": 1.5},
    }
    assert problems_of("PodDisruptionBudget", raw) == [
        ("spec.minAvailable", "expected an integer or a string, got number 1.5")
    ]


def test_validate_scheduler_config_spec() -> None:
    spec, problems = validate_scheduler_config_spec(
        {"preemptionAlgorithm": "None", "backoff": {"maxSeconds": "1m"}}
    )
    assert problems == [] and spec is not None
    assert spec["preemptionAlgorithm"] == "None" and spec["backoff"] == {
        "initialSeconds": 1,
        "maxSeconds": 60,
    }
    spec, problems = validate_scheduler_config_spec({"featureGates": {"Nope": True}, "scoringStrategy": 3})
    assert spec is None
    assert [p for p, _ in problems] == ["scoringStrategy"]
    spec, problems = validate_scheduler_config_spec({"featureGates": {"Nope": True}})
    assert (
        problems == [("featureGates.Nope", problems[0][1])] and "unrecognized feature gate" in problems[0][1]
    )


def test_feature_gates_of_the_newest_workload_api() -> None:
    """Issue 16: gates beyond the five defaults are accepted but written only when set; the gates
    merged into GenericWorkload in 1.37 follow it and may not contradict it."""
    spec, problems = validate_scheduler_config_spec({})
    assert problems == [] and spec is not None
    assert "PodGroupSatisfiedCondition" not in spec["featureGates"]
    assert "SchedulerPreEnqueuePodStatus" not in spec["featureGates"]
    spec, problems = validate_scheduler_config_spec(
        {"featureGates": {"PodGroupSatisfiedCondition": True, "SchedulerPreEnqueuePodStatus": False}}
    )
    assert problems == [] and spec is not None
    assert spec["featureGates"]["PodGroupSatisfiedCondition"] is True
    assert spec["featureGates"]["SchedulerPreEnqueuePodStatus"] is False
    # GenericWorkload off: WorkloadAwarePreemption (merged into it) follows when left out
    spec, problems = validate_scheduler_config_spec({"featureGates": {"GenericWorkload": False}})
    assert problems == [] and spec is not None
    assert spec["featureGates"]["WorkloadAwarePreemption"] is False
    spec, problems = validate_scheduler_config_spec({"featureGates": {"GangScheduling": True}})
    assert problems == [] and spec is not None
    for gate in ("GangScheduling", "WorkloadAwarePreemption"):
        spec, problems = validate_scheduler_config_spec({"featureGates": {gate: False}})
        assert spec is None
        assert problems[0][0] == f"featureGates.{gate}"
        assert "merged into GenericWorkload since Kubernetes 1.37" in problems[0][1]


def test_scheduler_gate_defaults() -> None:
    from scheduler.edge.translate import config_from, config_hash
    from scheduler.model import SchedulerConfig as CoreConfig

    core = CoreConfig()
    assert core.gate("SchedulerPreEnqueuePodStatus") is True
    assert core.gate("PodGroupSatisfiedCondition") is False
    assert config_from({"spec": {"featureGates": {"PodGroupSatisfiedCondition": True}}}).gate(
        "PodGroupSatisfiedCondition"
    )
    # configurations that leave the new gates out keep their hash
    assert config_hash(config_from({"spec": {}})) == config_hash(core)


def test_workload_and_podgroup_at_v1_and_v1beta1() -> None:
    for version in ("scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1"):
        pg = valid(
            "PodGroup",
            {
                "apiVersion": version,
                "kind": "PodGroup",
                "metadata": {"name": "pg"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            },
        )
        assert pg.normalized()["apiVersion"] == version
        wl = valid(
            "Workload",
            {
                "apiVersion": version,
                "kind": "Workload",
                "metadata": {"name": "wl"},
                "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]},
            },
        )
        assert wl.normalized()["apiVersion"] == version
    from ledger.resources.kinds import WrongApiVersionError, check_api_version

    with pytest.raises(WrongApiVersionError, match="scheduling.k8s.io/v1beta1 or scheduling.k8s.io/v1"):
        check_api_version("PodGroup", "scheduling.k8s.io/v1alpha1")
