"""Shared manifests for the resource-layer tests (one rich example per kind)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

SAMPLES: dict[str, dict[str, Any]] = {
    "Node": {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "zone-a", "rack": "r1"}},
        "spec": {
            "unschedulable": True,
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": 110, "nvidia.com/gpu": 4},
            "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "110", "nvidia.com/gpu": "4"},
        },
    },
    "Pod": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p1",
            "namespace": "team-a",
            "uid": "1234",
            "labels": {"app": "train"},
            "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": True}],
        },
        "spec": {
            "containers": [
                {"name": "a", "image": "img", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {
                    "name": "b",
                    "resources": {"requests": {"cpu": 1}, "limits": {"cpu": 2, "nvidia.com/gpu": 1}},
                },
            ],
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "3", "memory": "100Mi"}}}],
            "overhead": {"cpu": "100m"},
            "nodeSelector": {"disk": "ssd"},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
                            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]},
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
                        }
                    ],
                }
            },
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "k", "operator": "Equal", "value": "v"},
            ],
            "priorityClassName": "high",
            "priority": 1000,
            "preemptionPolicy": "Never",
            "schedulerName": "my-scheduler",
            "schedulingGates": [{"name": "example.com/wait"}],
            "schedulingGroup": {"podGroupName": "pg1"},
        },
    },
    "PriorityClass": {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "high priority",
    },
    "Workload": {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "default"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
            "compositePodGroupTemplates": [
                {
                    "name": "root",
                    "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                    "schedulingConstraints": {"topology": [{"key": "rack"}]},
                    "disruptionMode": {"all": {}},
                    "priorityClassName": "high",
                    "podGroupTemplates": [
                        {
                            "name": "workers",
                            "schedulingPolicy": {"gang": {"minCount": 2}},
                            "disruptionMode": {"all": {}},
                        },
                        {
                            "name": "ps",
                            "schedulingPolicy": {"gang": {"minCount": 1}},
                            "disruptionMode": {"all": {}},
                        },
                    ],
                    "compositePodGroupTemplates": [
                        {
                            "name": "mid",
                            "schedulingPolicy": {"basic": {}},
                            "disruptionMode": {"all": {}},
                            "podGroupTemplates": [
                                {
                                    "name": "leaf",
                                    "schedulingPolicy": {"basic": {}},
                                    "disruptionMode": {"all": {}},
                                }
                            ],
                        },
                    ],
                }
            ],
        },
    },
    "PodGroup": {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg1", "namespace": "default"},
        "spec": {
            "parentCompositePodGroupName": "root-1",
            "workloadRef": {"workloadName": "wl", "templateName": "workers"},
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
            "disruptionMode": {"all": {}},
            "priorityClassName": "high",
            "priority": 1000,
            "preemptionPolicy": "PreemptLowerPriority",
        },
    },
    "CompositePodGroup": {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "root-1", "namespace": "default"},
        "spec": {
            "workloadRef": {"workloadName": "wl", "templateName": "root"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
            "disruptionMode": {"all": {}},
            "priorityClassName": "high",
        },
    },
    "PodDisruptionBudget": {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {
            "maxUnavailable": "25%",
            "selector": {
                "matchLabels": {"app": "train"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}],
            },
        },
    },
    "ElasticQuota": {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "quota-a", "namespace": "team-a"},
        "spec": {
            "min": {"cpu": 10, "memory": "20Gi", "nvidia.com/gpu": 1},
            "max": {"cpu": 20, "memory": "40Gi", "nvidia.com/gpu": 2},
        },
    },
    "ElasticQuotaTree": {
        "apiVersion": "scheduling.sigs.k8s.io/v1beta1",
        "kind": "ElasticQuotaTree",
        "metadata": {"name": "elasticquotatree", "namespace": "kube-system"},
        "spec": {
            "root": {
                "name": "root",
                "min": {"cpu": 40, "memory": "40Gi"},
                "max": {"cpu": 40, "memory": "40Gi"},
                "children": [
                    {
                        "name": "root.a",
                        "min": {"cpu": 20, "memory": "20Gi"},
                        "max": {"cpu": 40, "memory": "40Gi"},
                        "namespaces": ["team-a"],
                    },
                    {
                        "name": "root.b",
                        "min": {"cpu": 20, "memory": "20Gi"},
                        "max": {"cpu": 40, "memory": "40Gi"},
                        "namespaces": ["team-b"],
                    },
                ],
            }
        },
    },
    "SchedulerConfig": {
        "apiVersion": "podledger.io/v1alpha1",
        "kind": "SchedulerConfig",
        "metadata": {"name": "default"},
        "spec": {
            "scoringStrategy": "MostAllocated",
            "resourceWeights": {"cpu": 2, "memory": 1, "nvidia.com/gpu": 5},
            "pluginWeights": {"TaintToleration": 1},
            "preemptionAlgorithm": "ElasticQuota",
            "backoff": {"initialSeconds": "500ms", "maxSeconds": 30},
            "podMaxInUnschedulablePodsDuration": "5m",
            "featureGates": {"CompositePodGroup": False},
        },
    },
}


@pytest.fixture
def samples() -> dict[str, dict[str, Any]]:
    return copy.deepcopy(SAMPLES)
