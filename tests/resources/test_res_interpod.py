"""Pod manifest fields of the pod-aware plugins: host ports, pod (anti-)affinity, topology
spread constraints; their validation messages and their translation to the core model."""

from __future__ import annotations

from typing import Any

from ledger.resources.models import validate_raw
from scheduler import model as m
from scheduler.edge.translate import config_from, config_hash, pod_from


def pod_raw(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns1", "labels": {"app": "web", "rev": "7"}},
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}], **spec},
    }


FULL = pod_raw(
    affinity={
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                    "matchLabelKeys": ["rev"],
                }
            ]
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "podAffinityTerm": {
                        "labelSelector": {
                            "matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]
                        },
                        "topologyKey": "zone",
                        "namespaceSelector": {},
                    },
                }
            ]
        },
    },
    topologySpreadConstraints=[
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "minDomains": 2,
            "nodeTaintsPolicy": "Honor",
            "matchLabelKeys": ["rev"],
        }
    ],
)


def test_fields_survive_normalization_and_translate() -> None:
    obj, problems = validate_raw("Pod", FULL)
    assert problems == [] and obj is not None
    data = obj.normalized()
    p = pod_from(data, 1, 0.0)
    assert p.host_ports == (m.HostPort(8080, "TCP", "0.0.0.0"),)
    (anti,) = p.anti_affinity_required
    assert anti.topology_key == "kubernetes.io/hostname"
    assert anti.selector == m.LabelSelector((("app", "web"),), (m.Requirement("rev", "In", ("7",)),))
    (pref,) = p.affinity_preferred
    assert pref.weight == 10 and pref.term.namespace_selector == m.LabelSelector()
    (c,) = p.spread_constraints
    assert (c.max_skew, c.topology_key, c.min_domains, c.node_affinity_policy, c.node_taints_policy) == (
        1,
        "zone",
        2,
        "Honor",
        "Honor",
    )
    assert c.selector is not None and m.Requirement("rev", "In", ("7",)) in c.selector.match_expressions


def test_pod_without_the_fields_normalizes_as_before() -> None:
    raw = pod_raw()
    raw["spec"]["containers"][0].pop("ports")
    obj, problems = validate_raw("Pod", raw)
    assert problems == [] and obj is not None
    spec = obj.normalized()["spec"]
    assert "affinity" not in spec and "topologySpreadConstraints" not in spec
    assert spec["containers"] == [{"name": "c"}]
    assert not pod_from(obj.normalized(), 1, 0.0).inter_pod


def test_validation_messages_name_the_field() -> None:
    bad = pod_raw(
        topologySpreadConstraints=[
            {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}
        ],
        affinity={
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]}
        },
    )
    obj, problems = validate_raw("Pod", bad)
    assert obj is None
    assert ("spec.topologySpreadConstraints[0].maxSkew", "must be greater than zero") in problems
    assert ("spec.topologySpreadConstraints[0].topologyKey", "can not be empty") in problems
    assert (
        "spec.topologySpreadConstraints[0].minDomains",
        "can only use minDomains if whenUnsatisfiable=DoNotSchedule",
    ) in problems
    assert (
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        "can not be empty",
    ) in problems


def test_percentage_of_nodes_to_score_config_keeps_the_default_hash() -> None:
    assert config_hash(config_from({"spec": {}})) == config_hash(m.SchedulerConfig())
    cfg = config_from({"spec": {"percentageOfNodesToScore": 0}})
    assert cfg.percentage_of_nodes_to_score == 0
    assert config_hash(cfg) != config_hash(m.SchedulerConfig())
