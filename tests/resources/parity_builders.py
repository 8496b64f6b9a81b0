"""Builders of upstream's validation test objects (its ``mk*`` and ``set*`` helpers), for
``test_res_validation_parity.py``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Raw = dict[str, Any]
Tweak = Callable[[Raw], None]


# --------------------------------------------------------------------------- builders (upstream's mk* and set* helpers)


def _gang(n: int) -> Raw:
    return {"gang": {"minCount": n}}


def mk_valid_workload(*tweaks: Tweak) -> Raw:
    """``mkValidWorkload``: one gang(1) PodGroup template ``main``."""
    raw: Raw = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "valid-workload", "namespace": "default"},
        "spec": {"podGroupTemplates": [{"name": "main", "schedulingPolicy": _gang(1)}]},
    }
    for tweak in tweaks:
        tweak(raw)
    return raw


def mk_workload(*tweaks: Tweak) -> Raw:
    """``mkWorkload`` of validation_test.go: a controllerRef, a basic and a gang(2) template."""
    raw: Raw = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "workload", "namespace": "ns"},
        "spec": {
            "controllerRef": {"apiGroup": "group", "kind": "foo", "name": "baz"},
            "podGroupTemplates": [
                {
                    "name": "group1",
                    "schedulingPolicy": {"basic": {}},
                    "schedulingConstraints": {"topology": [{"key": "foo"}]},
                },
                {
                    "name": "group2",
                    "schedulingPolicy": _gang(2),
                    "schedulingConstraints": {"topology": [{"key": "foo"}]},
                },
            ],
        },
    }
    for tweak in tweaks:
        tweak(raw)
    return raw


def pgts(raw: Raw) -> list[Raw]:
    templates: list[Raw] = raw["spec"].setdefault("podGroupTemplates", [])
    return templates


def cpgts(raw: Raw) -> list[Raw]:
    templates: list[Raw] = raw["spec"].setdefault("compositePodGroupTemplates", [])
    return templates


def set_pg(i: int, **fields: Any) -> Tweak:
    return lambda raw: pgts(raw)[i].update(fields)


def add_pg(name: str) -> Tweak:
    return lambda raw: pgts(raw).append({"name": name, "schedulingPolicy": _gang(1)})


def many_pgs(n: int) -> Tweak:
    def tweak(raw: Raw) -> None:
        raw["spec"]["podGroupTemplates"] = [
            {"name": f"group-{i}", "schedulingPolicy": _gang(1)} for i in range(n)
        ]

    return tweak


def add_topology(i: int, key: str) -> Tweak:
    def tweak(raw: Raw) -> None:
        pgts(raw)[i].setdefault("schedulingConstraints", {}).setdefault("topology", []).append({"key": key})

    return tweak


def add_claims(*claims: Raw) -> Tweak:
    return lambda raw: pgts(raw)[0].setdefault("resourceClaims", []).extend(copy.deepcopy(claims))


def add_cpg(*names: str) -> Tweak:
    """``addCompositePodGroupTemplate``: drops the PodGroup templates; a gang(1) CompositePodGroup
    template ``main`` with a gang(1) child ``worker-main``, then one more per name."""

    def tweak(raw: Raw) -> None:
        raw["spec"].pop("podGroupTemplates", None)
        if not raw["spec"].get("compositePodGroupTemplates"):
            raw["spec"]["compositePodGroupTemplates"] = [
                {
                    "name": "main",
                    "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                    "podGroupTemplates": [{"name": "worker-main", "schedulingPolicy": _gang(1)}],
                }
            ]
        for name in names:
            n = len(cpgts(raw))
            cpgts(raw).append(
                {
                    "name": name,
                    "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                    "podGroupTemplates": [{"name": f"worker-{name}-{n}", "schedulingPolicy": _gang(1)}],
                }
            )

    return tweak


def set_cpg(i: int, **fields: Any) -> Tweak:
    def tweak(raw: Raw) -> None:
        add_cpg()(raw)
        cpgts(raw)[i].update(fields)

    return tweak


def add_nested_cpg(i: int, *names: str) -> Tweak:
    """``addNestedCompositePodGroupTemplate``: gang(1) children, each with a *basic* leaf."""

    def tweak(raw: Raw) -> None:
        add_cpg()(raw)
        children = cpgts(raw)[i].setdefault("compositePodGroupTemplates", [])
        for name in names:
            children.append(
                {
                    "name": name,
                    "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                    "podGroupTemplates": [
                        {"name": f"{name}-leaf-{len(children)}", "schedulingPolicy": {"basic": {}}}
                    ],
                }
            )

    return tweak


def many_nested_cpgs(i: int, n: int) -> Tweak:
    def tweak(raw: Raw) -> None:
        add_cpg()(raw)
        cpgts(raw)[i]["compositePodGroupTemplates"] = [
            {
                "name": f"sub-{k}",
                "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                "podGroupTemplates": [{"name": f"sub-{k}-leaf", "schedulingPolicy": {"basic": {}}}],
            }
            for k in range(n)
        ]

    return tweak


def add_nested_pg(i: int, *names: str) -> Tweak:
    def tweak(raw: Raw) -> None:
        add_cpg()(raw)
        cpgts(raw)[i]["podGroupTemplates"] += [{"name": name, "schedulingPolicy": _gang(1)} for name in names]

    return tweak


def many_nested_pgs(i: int, n: int) -> Tweak:
    def tweak(raw: Raw) -> None:
        add_cpg()(raw)
        cpgts(raw)[i]["podGroupTemplates"] = [
            {"name": f"pg-{k}", "schedulingPolicy": _gang(1)} for k in range(n)
        ]

    return tweak


def set_nested_pg(i: int, j: int, **fields: Any) -> Tweak:
    def tweak(raw: Raw) -> None:
        add_cpg()(raw)
        cpgts(raw)[i]["podGroupTemplates"][j].update(fields)

    return tweak


def clear_pgs(raw: Raw) -> None:
    raw["spec"].pop("podGroupTemplates", None)


def set_meta(**fields: Any) -> Tweak:
    return lambda raw: raw["metadata"].update(fields)


def set_spec(**fields: Any) -> Tweak:
    return lambda raw: raw["spec"].update(fields)


def set_controller_ref(group: str, kind: str, name: str) -> Tweak:
    return set_spec(controllerRef={"apiGroup": group, "kind": kind, "name": name})


def tree(depth: int) -> Tweak:
    """CompositePodGroup templates ``cpg1`` .. ``cpg<depth>`` nested, a PodGroup leaf at the bottom."""

    def tweak(raw: Raw) -> None:
        node: Raw = {
            "name": f"cpg{depth}",
            "schedulingPolicy": {"basic": {}},
            "podGroupTemplates": [{"name": "leaf", "schedulingPolicy": _gang(1)}],
        }
        for level in range(depth - 1, 0, -1):
            node = {
                "name": f"cpg{level}",
                "schedulingPolicy": {"basic": {}},
                "compositePodGroupTemplates": [node],
            }
        raw["spec"] = {"compositePodGroupTemplates": [node]}

    return tweak


def mk_cpg(*tweaks: Tweak) -> Raw:
    """``mkValidCompositePodGroup``: basic, workloadRef workload/template."""
    raw: Raw = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "CompositePodGroup",
        "metadata": {"name": "cpg", "namespace": "ns"},
        "spec": {
            "workloadRef": {"workloadName": "workload", "templateName": "template"},
            "schedulingPolicy": {"basic": {}},
        },
    }
    for tweak in tweaks:
        tweak(raw)
    return raw


def mk_pg(*tweaks: Tweak) -> Raw:
    """``mkPodGroup``: gang(5), topology ``foo``, workloadRef w/t1."""
    raw: Raw = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "workload", "namespace": "ns"},
        "spec": {
            "workloadRef": {"workloadName": "w", "templateName": "t1"},
            "schedulingPolicy": _gang(5),
            "schedulingConstraints": {"topology": [{"key": "foo"}]},
        },
    }
    for tweak in tweaks:
        tweak(raw)
    return raw


def pg_topology(*keys: str) -> Tweak:
    return set_spec(schedulingConstraints={"topology": [{"key": k} for k in keys]})


def pg_claims(*claims: Raw) -> Tweak:
    return set_spec(resourceClaims=list(claims))


def mk_job(scheduling: Raw) -> Raw:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "worker", "namespace": "default"},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "scheduling": scheduling,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}},
        },
    }


P0 = "spec.podGroupTemplates[0]"
