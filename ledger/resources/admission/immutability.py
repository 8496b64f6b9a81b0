"""Updates of a stored object: server-filled fields carried over, immutable fields unchanged.

Fields the server fills in (``metadata.uid``; Pod ``priorityClassName``, ``priority``,
``preemptionPolicy``, ``nodeName``, ``schedulerName``; the three priority fields of PodGroup and
CompositePodGroup) are taken from the stored object when the new manifest leaves them out, as
``kubectl apply`` would. Then (docs/semantics.md §2.1-§2.3, "immutable"):

* ``metadata.uid`` never changes;
* Pod: the spec, except removing scheduling gates, adding tolerations and changing images;
* PodGroup / CompositePodGroup: the spec, except ``gang.minCount`` / ``gang.minGroupCount``
  (basic and gang cannot be swapped);
* PriorityClass: ``value`` and ``preemptionPolicy``;
* Workload: ``controllerRef`` and every template field, except a gang's minimum (templates
  cannot be added or removed; each change is reported at its own path, as upstream does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ledger.resources.admission.outcome import Rejection
from ledger.resources.models import (
    PREEMPT_LOWER_PRIORITY,
    CompositePodGroup,
    Pod,
    PodGroup,
    PriorityClass,
    Resource,
    Workload,
)

_PRIORITY_FIELDS = ("priority_class_name", "priority", "preemption_policy")
_SERVER_FIELDS = {
    "Pod": (*_PRIORITY_FIELDS, "node_name", "scheduler_name"),
    "PodGroup": _PRIORITY_FIELDS,
    "CompositePodGroup": _PRIORITY_FIELDS,
}

# the fields a Workload template and a group share (besides schedulingPolicy)
_TEMPLATE_IMMUTABLE = (
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
)
_GROUP_IMMUTABLE = ("parentCompositePodGroupName", "workloadRef", *_TEMPLATE_IMMUTABLE)


def carry_server_fields(obj: Resource, old: Resource) -> Resource:
    """``obj`` with the server-filled fields it leaves out taken from the stored ``old``."""
    if obj.metadata.uid is None and old.metadata.uid is not None:
        obj = obj.model_copy(update={"metadata": obj.metadata.model_copy(update={"uid": old.metadata.uid})})
    if isinstance(obj, Pod | PodGroup | CompositePodGroup) and isinstance(
        old, Pod | PodGroup | CompositePodGroup
    ):
        spec = obj.spec
        carried = {f: getattr(old.spec, f) for f in _SERVER_FIELDS[obj.KIND] if getattr(spec, f) is None}
        obj = obj.model_copy(update={"spec": spec.model_copy(update=carried)})
    return obj


def uid_problems(obj: Resource, old: Resource) -> list[Rejection]:
    if obj.metadata.uid != old.metadata.uid:
        return [Rejection("metadata.uid", "field is immutable")]
    return []


def immutable_problems(obj: Resource, old: Resource) -> list[Rejection]:
    """The changed immutable fields of ``obj`` (after ``carry_server_fields``) against ``old``."""
    if isinstance(obj, Pod) and isinstance(old, Pod):
        return _pod_problems(obj, old)
    if isinstance(obj, PodGroup | CompositePodGroup) and isinstance(old, PodGroup | CompositePodGroup):
        return _group_problems(obj, old)
    if isinstance(obj, PriorityClass) and isinstance(old, PriorityClass):
        return _priority_class_problems(obj, old)
    if isinstance(obj, Workload) and isinstance(old, Workload):
        return _workload_problems(obj, old)
    return []  # Node, PodDisruptionBudget, quotas, SchedulerConfig: every field mutable


def _changed(
    keys: Iterable[str], new_spec: Mapping[str, Any], old_spec: Mapping[str, Any]
) -> list[Rejection]:
    return [
        Rejection(f"spec.{key}", "field is immutable")
        for key in keys
        if new_spec.get(key) != old_spec.get(key)
    ]


# --------------------------------------------------------------------------- Pod


def _strip_images(containers: Any) -> Any:
    if not isinstance(containers, list):
        return containers
    return [{k: v for k, v in c.items() if k != "image"} for c in containers]


def _pod_problems(pod: Pod, old: Pod) -> list[Rejection]:
    new_spec = pod.normalized()["spec"]
    old_spec = old.normalized()["spec"]
    reasons: list[Rejection] = []
    old_gates = [g["name"] for g in old_spec.get("schedulingGates", [])]
    new_gates = [g["name"] for g in new_spec.get("schedulingGates", [])]
    added = [g for g in new_gates if g not in old_gates]
    if added:
        reasons.append(
            Rejection(
                "spec.schedulingGates",
                f'only deletion is allowed, but found new scheduling gate "{added[0]}"',
            )
        )
    old_tolerations = old_spec.get("tolerations", [])
    new_tolerations = new_spec.get("tolerations", [])
    if any(t not in new_tolerations for t in old_tolerations):
        reasons.append(
            Rejection(
                "spec.tolerations",
                "existing toleration can not be modified except "
                "tolerationSeconds; tolerations may only be added",
            )
        )
    for key in sorted(set(new_spec) | set(old_spec)):
        if key in ("schedulingGates", "tolerations"):
            continue
        before, after = old_spec.get(key), new_spec.get(key)
        if key in ("containers", "initContainers"):
            before, after = _strip_images(before), _strip_images(after)
        if before != after:
            reasons.append(
                Rejection(
                    f"spec.{key}",
                    "field is immutable (pod updates may only remove "
                    "schedulingGates, add tolerations or change container images)",
                )
            )
    return reasons


# --------------------------------------------------------------------------- PodGroup / CompositePodGroup


def _group_problems(
    group: PodGroup | CompositePodGroup, old: PodGroup | CompositePodGroup
) -> list[Rejection]:
    reasons = _changed(_GROUP_IMMUTABLE, group.normalized()["spec"], old.normalized()["spec"])
    new_policy = "gang" if group.spec.scheduling_policy.is_gang else "basic"
    old_policy = "gang" if old.spec.scheduling_policy.is_gang else "basic"
    if new_policy != old_policy:
        minimum = "minCount" if isinstance(group, PodGroup) else "minGroupCount"
        reasons.append(
            Rejection(
                "spec.schedulingPolicy",
                f"field is immutable: cannot change from {old_policy} to {new_policy} "
                f"(only gang.{minimum} may change)",
            )
        )
    return reasons


# --------------------------------------------------------------------------- PriorityClass


def _priority_class_problems(pc: PriorityClass, old: PriorityClass) -> list[Rejection]:
    reasons: list[Rejection] = []
    if pc.value != old.value:
        reasons.append(Rejection("value", f"field is immutable (was {old.value}, got {pc.value})"))
    new_policy = pc.preemption_policy or PREEMPT_LOWER_PRIORITY
    old_policy = old.preemption_policy or PREEMPT_LOWER_PRIORITY
    if new_policy != old_policy:
        reasons.append(Rejection("preemptionPolicy", "field is immutable"))
    return reasons


# --------------------------------------------------------------------------- Workload


def _workload_problems(workload: Workload, old: Workload) -> list[Rejection]:
    """Upstream's Workload update rules (declarative ``immutable`` / ``update`` tags): the
    ``controllerRef`` and every template field are immutable except a gang's minimum; templates
    are matched by name, an added one is refused at its index, a removed one at its list."""
    new_spec, old_spec = workload.normalized()["spec"], old.normalized()["spec"]
    return _changed(("controllerRef",), new_spec, old_spec) + _templates_changed("spec", new_spec, old_spec)


def _templates_changed(path: str, new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Rejection]:
    reasons: list[Rejection] = []
    for key in ("podGroupTemplates", "compositePodGroupTemplates"):
        news, olds = new.get(key) or [], old.get(key) or []
        by_name = {t["name"]: t for t in olds}
        for i, template in enumerate(news):
            tpath = f"{path}.{key}[{i}]"
            before = by_name.get(template["name"])
            if before is None:
                reasons.append(Rejection(tpath, "field is immutable: a template cannot be added"))
                continue
            reasons += [
                Rejection(f"{tpath}.{f}", "field is immutable")
                for f in _TEMPLATE_IMMUTABLE
                if template.get(f) != before.get(f)
            ]
            reasons += _policy_changed(f"{tpath}.schedulingPolicy", template, before)
            reasons += _templates_changed(tpath, template, before)
        if {t["name"] for t in olds} - {t["name"] for t in news}:
            reasons.append(Rejection(f"{path}.{key}", "field is immutable: a template cannot be removed"))
    return reasons


def _policy_changed(path: str, new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Rejection]:
    """A template's ``basic`` / ``gang`` cannot be set or cleared (the gang's minimum may change)."""
    new_policy, old_policy = new.get("schedulingPolicy") or {}, old.get("schedulingPolicy") or {}
    return [
        Rejection(f"{path}.{variant}", "field is immutable: basic and gang cannot be swapped")
        for variant in ("basic", "gang")
        if (variant in new_policy) != (variant in old_policy)
    ]
