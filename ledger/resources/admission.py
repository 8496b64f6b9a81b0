"""Admission: pure checks run on valid objects before anything is appended.

``admit(objects, state)`` decides, object by object and in order, whether each one is
``created``, ``updated``, ``unchanged`` or ``rejected``; objects admitted earlier in the same
request are visible to later ones (a PriorityClass or Workload defined at the top of a file
can be used further down). If any object is rejected the whole request is refused
(``outcome.refused``): the caller appends nothing but one ``AdmissionRejected`` event built
from ``outcome.rejection_record()``.

What admission does (spec/workload-scheduling.md §2.5, §2.6, §9):

* Priority of Pod, PodGroup and CompositePodGroup: the named PriorityClass (built-ins
  ``system-cluster-critical`` and ``system-node-critical`` always exist), else the
  ``globalDefault`` class with the smallest value, else priority 0. An unknown class or a
  preset ``priority`` that differs from the class value is rejected. ``preemptionPolicy``
  comes from the class when unset (default ``PreemptLowerPriority``).
* Workload template trees: at most 8 templates per list, depth at most 4 (a CompositePodGroup
  template cannot sit at depth 4), exactly one of the two template lists, template names unique
  at any depth, no basic PodGroup template under a gang CompositePodGroup template, no Single
  child under an All parent.
* ``workloadRef`` of PodGroup/CompositePodGroup must name an existing Workload and template of
  the matching kind; a group's parent CompositePodGroup (when it exists) must reference the
  same Workload.
* Immutable fields on update (PodGroup/CompositePodGroup: all but ``gang.minCount`` /
  ``gang.minGroupCount``; Pod: the spec except removing scheduling gates, adding tolerations
  and changing images; PriorityClass: ``value`` and ``preemptionPolicy``; Workload: everything
  but the gang minimums of its templates). Fields the server fills in (priority,
  priorityClassName, preemptionPolicy, Pod nodeName, schedulerName, uid) are carried over from
  the stored object when the new manifest leaves them out, as ``kubectl apply`` would.
* One ElasticQuota per namespace, one ElasticQuotaTree per cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ledger.resources.kinds import get_kind
from ledger.resources.models import (
    BUILTIN_PRIORITY_CLASSES,
    PREEMPT_LOWER_PRIORITY,
    CompositePodGroup,
    ElasticQuota,
    ElasticQuotaTree,
    ObjectKey,
    Pod,
    PodGroup,
    PriorityClass,
    Resource,
    Workload,
    model_for,
)
from ledger.resources.models.scheduling import CompositePodGroupTemplate, PodGroupTemplate

__all__ = [
    "MAX_TEMPLATES",
    "MAX_TREE_DEPTH",
    "Action",
    "AdmissionOutcome",
    "AdmissionResult",
    "AdmissionState",
    "InMemoryState",
    "Rejection",
    "admit",
    "workload_problems",
]

MAX_TEMPLATES = 8
MAX_TREE_DEPTH = 4

Action = Literal["created", "updated", "unchanged", "rejected"]


class AdmissionState(Protocol):
    """Read access to the current (admitted) state, as normalized dicts.

    ``get`` is called for the object itself, Workloads, parent CompositePodGroups and
    PriorityClasses; ``list`` only for the small kinds ``PriorityClass``, ``ElasticQuota``
    and ``ElasticQuotaTree``. ``namespace`` is ``""`` for cluster-scoped kinds.
    """

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, kind: str) -> Iterable[Mapping[str, Any]]: ...


@dataclass
class InMemoryState:
    """An :class:`AdmissionState` over a dict of normalized objects (tests, simulation)."""

    objects: dict[ObjectKey, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> InMemoryState:
        state = cls()
        for obj in objects:
            state.put(obj)
        return state

    def put(self, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))] = obj

    def apply(self, outcome: AdmissionOutcome) -> None:
        """Store every created/updated object of an outcome that was not refused."""
        if not outcome.refused:
            for result in outcome.results:
                if result.normalized is not None and result.action in ("created", "updated"):
                    self.put(result.normalized)

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def list(self, kind: str) -> Iterable[Mapping[str, Any]]:
        return [obj for key, obj in self.objects.items() if key[0] == kind]


@dataclass(frozen=True, slots=True)
class Rejection:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass
class AdmissionResult:
    index: int  # 0-based position in the request
    kind: str
    namespace: str | None
    name: str
    action: Action
    object: Resource | None  # the admitted object (priority & co. filled in); None if rejected
    normalized: dict[str, Any] | None  # what to store; None if rejected
    previous: Mapping[str, Any] | None  # the stored object it replaces, if any
    reasons: list[Rejection] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    @property
    def line(self) -> str:
        """kubectl-style: ``podgroup.scheduling.k8s.io/job-1 created``."""
        return f"{get_kind(self.kind).display(self.name)} {self.action}"

    @property
    def message(self) -> str:
        return "; ".join(str(r) for r in self.reasons)

    def __str__(self) -> str:
        if self.action == "rejected":
            return f"error: {self.ref}: {self.message}"
        return self.line


@dataclass
class AdmissionOutcome:
    results: list[AdmissionResult]

    @property
    def refused(self) -> bool:
        """True when any object was rejected: the whole request applies nothing."""
        return any(r.action == "rejected" for r in self.results)

    @property
    def rejected(self) -> list[AdmissionResult]:
        return [r for r in self.results if r.action == "rejected"]

    @property
    def changes(self) -> list[AdmissionResult]:
        """Created/updated objects to append, in request order (empty when refused)."""
        if self.refused:
            return []
        return [r for r in self.results if r.action in ("created", "updated")]

    def lines(self) -> list[str]:
        return [str(r) for r in self.results]

    def rejection_record(self) -> dict[str, Any]:
        """Data for the single ``AdmissionRejected`` event of a refused request."""
        return {
            "objects": [{"kind": r.kind, "namespace": r.namespace, "name": r.name} for r in self.results],
            "rejected": [
                {
                    "kind": r.kind,
                    "namespace": r.namespace,
                    "name": r.name,
                    "reasons": [{"field": x.field, "message": x.message} for x in r.reasons],
                    "message": r.message,
                }
                for r in self.rejected
            ],
        }


# --------------------------------------------------------------------------- entry point


def admit(objects: Sequence[Resource], state: AdmissionState) -> AdmissionOutcome:
    """Admit a request's objects in order against ``state`` (pure; nothing is written)."""
    batch = _Batch(state)
    results: list[AdmissionResult] = []
    for index, obj in enumerate(objects):
        key = obj.key
        previous = batch.get(*key)
        admitted, reasons = _admit_one(obj, previous, batch)
        ns = obj.metadata.namespace
        if reasons:
            results.append(
                AdmissionResult(index, obj.KIND, ns, obj.name, "rejected", None, None, previous, reasons)
            )
            continue
        normalized = admitted.normalized()
        action: Action
        if previous is None:
            action = "created"
        elif _same(normalized, previous):
            action = "unchanged"
        else:
            action = "updated"
        results.append(AdmissionResult(index, obj.KIND, ns, obj.name, action, admitted, normalized, previous))
        batch.put(key, normalized)
    return AdmissionOutcome(results)


class _Batch:
    """The state as seen by the next object: stored state overlaid with this request's objects.

    ``list`` results are loaded from the state once per kind and kept up to date as objects of
    the request are admitted, so a request of many pods costs one PriorityClass listing.
    """

    def __init__(self, state: AdmissionState) -> None:
        self.state = state
        self.overlay: dict[ObjectKey, Mapping[str, Any]] = {}
        self._lists: dict[str, dict[ObjectKey, Mapping[str, Any]]] = {}
        self._workloads: dict[tuple[str, str], Workload | None] = {}

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = (kind, namespace, name)
        if key in self.overlay:
            return self.overlay[key]
        return self.state.get(kind, namespace, name)

    def list(self, kind: str) -> list[Mapping[str, Any]]:
        if kind not in self._lists:
            seen: dict[ObjectKey, Mapping[str, Any]] = {}
            for obj in self.state.list(kind):
                meta = obj["metadata"]
                seen[(kind, str(meta.get("namespace") or ""), str(meta["name"]))] = obj
            for key, obj in self.overlay.items():
                if key[0] == kind:
                    seen[key] = obj
            self._lists[kind] = seen
        return list(self._lists[kind].values())

    def put(self, key: ObjectKey, obj: Mapping[str, Any]) -> None:
        self.overlay[key] = obj
        if key[0] in self._lists:
            self._lists[key[0]][key] = obj
        if key[0] == "Workload":
            self._workloads.pop((key[1], key[2]), None)

    def workload(self, namespace: str, name: str) -> Workload | None:
        key = (namespace, name)
        if key not in self._workloads:
            stored = self.get("Workload", namespace, name)
            self._workloads[key] = Workload.from_normalized(stored) if stored is not None else None
        return self._workloads[key]

    def priority_class(self, name: str) -> Mapping[str, Any] | None:
        if name in BUILTIN_PRIORITY_CLASSES:
            return BUILTIN_PRIORITY_CLASSES[name]
        return self.get("PriorityClass", "", name)

    def default_priority_class(self) -> Mapping[str, Any] | None:
        defaults = [pc for pc in self.list("PriorityClass") if pc.get("globalDefault")]
        if not defaults:
            return None
        return min(defaults, key=lambda pc: (int(pc["value"]), str(pc["metadata"]["name"])))


def _same(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Identical as far as the user's manifest goes (a stored ``status`` is ignored except for Nodes)."""
    if new.get("kind") == "Node":
        return dict(new) == dict(old)
    return {k: v for k, v in new.items() if k != "status"} == {k: v for k, v in old.items() if k != "status"}


def _admit_one(
    obj: Resource, previous: Mapping[str, Any] | None, batch: _Batch
) -> tuple[Resource, list[Rejection]]:
    old = model_for(obj.KIND).from_normalized(previous) if previous is not None else None
    if old is not None and obj.metadata.uid is None and old.metadata.uid is not None:
        obj = obj.model_copy(update={"metadata": obj.metadata.model_copy(update={"uid": old.metadata.uid})})
    reasons: list[Rejection] = []
    if old is not None and obj.metadata.uid != old.metadata.uid:
        reasons.append(Rejection("metadata.uid", "field is immutable"))

    if isinstance(obj, Pod):
        obj, more = _admit_pod(obj, old if isinstance(old, Pod) else None, batch)
    elif isinstance(obj, PodGroup | CompositePodGroup):
        obj, more = _admit_group(obj, old if isinstance(old, PodGroup | CompositePodGroup) else None, batch)
    elif isinstance(obj, PriorityClass):
        more = _admit_priority_class(obj, old if isinstance(old, PriorityClass) else None)
    elif isinstance(obj, Workload):
        more = _admit_workload(obj, old if isinstance(old, Workload) else None)
    elif isinstance(obj, ElasticQuota):
        more = _admit_elastic_quota(obj, old, batch)
    elif isinstance(obj, ElasticQuotaTree):
        more = _admit_quota_tree(obj, old, batch)
    else:  # Node, PodDisruptionBudget, SchedulerConfig: every field mutable, nothing to resolve
        more = []
    return obj, reasons + more


# --------------------------------------------------------------------------- priority


_SPEC_WORDS = {
    "Pod": "pod spec",
    "PodGroup": "pod group spec",
    "CompositePodGroup": "composite pod group spec",
}


def _resolve_priority(
    kind: str, class_name: str | None, priority: int | None, policy: str | None, batch: _Batch
) -> tuple[str | None, int, str, list[Rejection]]:
    """Priority admission for a new object: ``(priorityClassName, priority, preemptionPolicy, reasons)``."""
    pc: Mapping[str, Any] | None
    if class_name:
        pc = batch.priority_class(class_name)
        if pc is None:
            return (
                class_name,
                priority or 0,
                policy or PREEMPT_LOWER_PRIORITY,
                [Rejection("spec.priorityClassName", f'no PriorityClass with name "{class_name}" was found')],
            )
    else:
        pc = batch.default_priority_class()
        class_name = str(pc["metadata"]["name"]) if pc is not None else None
    value = int(pc["value"]) if pc is not None else 0
    reasons: list[Rejection] = []
    if priority is not None and priority != value:
        source = f'the PriorityClass "{class_name}"' if class_name else "no PriorityClass (default 0)"
        reasons.append(
            Rejection(
                "spec.priority",
                f"the integer value of priority ({priority}) must not be provided in {_SPEC_WORDS[kind]}; "
                f"priority admission controller computed {value} from {source}",
            )
        )
    if policy is None:
        policy = (
            str(pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)
            if pc is not None
            else PREEMPT_LOWER_PRIORITY
        )
    return class_name, value, policy, reasons


# --------------------------------------------------------------------------- Pod


_POD_SERVER_FIELDS = ("priority_class_name", "priority", "preemption_policy", "node_name", "scheduler_name")


def _admit_pod(pod: Pod, old: Pod | None, batch: _Batch) -> tuple[Pod, list[Rejection]]:
    spec = pod.spec
    if old is not None:
        carried = {f: getattr(old.spec, f) for f in _POD_SERVER_FIELDS if getattr(spec, f) is None}
        pod = pod.model_copy(update={"spec": spec.model_copy(update=carried)})
        return pod, _pod_immutable(pod, old)
    name, value, policy, reasons = _resolve_priority(
        "Pod", spec.priority_class_name, spec.priority, spec.preemption_policy, batch
    )
    pod = pod.model_copy(
        update={
            "spec": spec.model_copy(
                update={"priority_class_name": name, "priority": value, "preemption_policy": policy}
            )
        }
    )
    return pod, reasons


def _strip_images(containers: Any) -> Any:
    if not isinstance(containers, list):
        return containers
    return [{k: v for k, v in c.items() if k != "image"} for c in containers]


def _pod_immutable(pod: Pod, old: Pod) -> list[Rejection]:
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


# --------------------------------------------------------------------------- PodGroup / CPG


def _admit_group(
    group: PodGroup | CompositePodGroup, old: PodGroup | CompositePodGroup | None, batch: _Batch
) -> tuple[PodGroup | CompositePodGroup, list[Rejection]]:
    spec = group.spec
    if old is not None:
        carried = {
            f: getattr(old.spec, f)
            for f in ("priority_class_name", "priority", "preemption_policy")
            if getattr(spec, f) is None
        }
        group = group.model_copy(update={"spec": spec.model_copy(update=carried)})
        return group, _group_immutable(group, old)
    name, value, policy, reasons = _resolve_priority(
        group.KIND, spec.priority_class_name, spec.priority, spec.preemption_policy, batch
    )
    group = group.model_copy(
        update={
            "spec": spec.model_copy(
                update={"priority_class_name": name, "priority": value, "preemption_policy": policy}
            )
        }
    )
    reasons += _check_workload_ref(group, batch)
    return group, reasons


def _check_workload_ref(group: PodGroup | CompositePodGroup, batch: _Batch) -> list[Rejection]:
    ref = group.spec.workload_ref
    if ref is None:
        return []
    ns = group.metadata.namespace or "default"
    workload = batch.workload(ns, ref.workload_name)
    if workload is None:
        return [
            Rejection(
                "spec.workloadRef.workloadName",
                f'forbidden: Workload "{ref.workload_name}" not found in namespace "{ns}"',
            )
        ]
    template = workload.find_template(ref.template_name)
    wanted = "PodGroup" if isinstance(group, PodGroup) else "CompositePodGroup"
    if template is None:
        return [
            Rejection(
                "spec.workloadRef.templateName",
                f'forbidden: Workload {ns}/{ref.workload_name} has no template named "{ref.template_name}"',
            )
        ]
    is_pg_template = isinstance(template, PodGroupTemplate)
    if is_pg_template != isinstance(group, PodGroup):
        actual = "PodGroup" if is_pg_template else "CompositePodGroup"
        return [
            Rejection(
                "spec.workloadRef.templateName",
                f'forbidden: template "{ref.template_name}" of Workload {ns}/{ref.workload_name} '
                f"is a {actual} template, not a {wanted} template",
            )
        ]
    parent_name = group.spec.parent_composite_pod_group_name
    if parent_name:
        parent = batch.get("CompositePodGroup", ns, parent_name)
        if parent is not None:
            parent_wl = parent["spec"]["workloadRef"]["workloadName"]
            if parent_wl != ref.workload_name:
                return [
                    Rejection(
                        "spec.parentCompositePodGroupName",
                        f"forbidden: all groups in a hierarchy must reference the same Workload: parent "
                        f'CompositePodGroup {ns}/{parent_name} references Workload "{parent_wl}", this '
                        f'{wanted} references "{ref.workload_name}"',
                    )
                ]
    return []


_GROUP_IMMUTABLE = (
    "parentCompositePodGroupName",
    "workloadRef",
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
)


def _group_immutable(
    group: PodGroup | CompositePodGroup, old: PodGroup | CompositePodGroup
) -> list[Rejection]:
    new_spec = group.normalized()["spec"]
    old_spec = old.normalized()["spec"]
    reasons: list[Rejection] = []
    for key in _GROUP_IMMUTABLE:
        if new_spec.get(key) != old_spec.get(key):
            reasons.append(Rejection(f"spec.{key}", "field is immutable"))
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


def _admit_priority_class(pc: PriorityClass, old: PriorityClass | None) -> list[Rejection]:
    if old is None:
        return []
    reasons: list[Rejection] = []
    if pc.value != old.value:
        reasons.append(Rejection("value", f"field is immutable (was {old.value}, got {pc.value})"))
    new_policy = pc.preemption_policy or PREEMPT_LOWER_PRIORITY
    old_policy = old.preemption_policy or PREEMPT_LOWER_PRIORITY
    if new_policy != old_policy:
        reasons.append(Rejection("preemptionPolicy", "field is immutable"))
    return reasons


# --------------------------------------------------------------------------- Workload


def workload_problems(workload: Workload) -> list[Rejection]:
    """Template-tree rules of a Workload (spec §2.5)."""
    reasons: list[Rejection] = []
    spec = workload.spec

    def check_lists(
        path: str, pgs: Sequence[PodGroupTemplate], cpgs: Sequence[CompositePodGroupTemplate], *, root: bool
    ) -> None:
        if root and bool(pgs) == bool(cpgs):
            reasons.append(
                Rejection(
                    path or "spec",
                    "must specify exactly one of: `podGroupTemplates`, `compositePodGroupTemplates`",
                )
            )
        if not root and not pgs and not cpgs:
            reasons.append(
                Rejection(
                    path,
                    "a CompositePodGroup template must specify at least one of: "
                    "`podGroupTemplates`, `compositePodGroupTemplates`",
                )
            )
        for field_name, items in (("podGroupTemplates", pgs), ("compositePodGroupTemplates", cpgs)):
            if len(items) > MAX_TEMPLATES:
                reasons.append(
                    Rejection(
                        f"{path}.{field_name}",
                        f"too many: {len(items)}: must have at most {MAX_TEMPLATES} items",
                    )
                )

    check_lists("spec", spec.pod_group_templates, spec.composite_pod_group_templates, root=True)
    seen: dict[str, str] = {}
    for path, depth, template, parent in workload.templates():
        if template.name in seen:
            reasons.append(
                Rejection(
                    f"{path}.name",
                    f'duplicate template name "{template.name}" (already used '
                    f"at {seen[template.name]}; template names must be unique within the "
                    "Workload)",
                )
            )
        else:
            seen[template.name] = path
        if depth > MAX_TREE_DEPTH:
            reasons.append(
                Rejection(
                    path, f"hierarchy depth of {depth} exceeds maximum allowed depth of {MAX_TREE_DEPTH}"
                )
            )
        if isinstance(template, CompositePodGroupTemplate):
            if depth == MAX_TREE_DEPTH:
                reasons.append(
                    Rejection(
                        path,
                        f"a CompositePodGroup template cannot sit at depth "
                        f"{MAX_TREE_DEPTH}: it must have children and the maximum depth is "
                        f"{MAX_TREE_DEPTH}",
                    )
                )
            check_lists(
                path, template.pod_group_templates, template.composite_pod_group_templates, root=False
            )
        if parent is not None:
            if (
                isinstance(template, PodGroupTemplate)
                and parent.scheduling_policy.is_gang
                and template.scheduling_policy.basic is not None
            ):
                reasons.append(
                    Rejection(
                        f"{path}.schedulingPolicy",
                        f"a basic PodGroup template cannot be a child of the gang "
                        f'CompositePodGroup template "{parent.name}"',
                    )
                )
            if parent.disruption == "All" and template.disruption == "Single":
                reasons.append(
                    Rejection(
                        f"{path}.disruptionMode",
                        f"disruptionMode single is not allowed under the CompositePodGroup "
                        f'template "{parent.name}" whose disruptionMode is all',
                    )
                )
    return reasons


def _strip_minimums(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "gang" and isinstance(v, dict):
                out[k] = {g: x for g, x in v.items() if g not in ("minCount", "minGroupCount")}
            else:
                out[k] = _strip_minimums(v)
        return out
    if isinstance(value, list):
        return [_strip_minimums(v) for v in value]
    return value


def _admit_workload(workload: Workload, old: Workload | None) -> list[Rejection]:
    reasons = workload_problems(workload)
    if old is not None:
        new_spec, old_spec = workload.normalized()["spec"], old.normalized()["spec"]
        if new_spec.get("controllerRef") != old_spec.get("controllerRef"):
            reasons.append(Rejection("spec.controllerRef", "field is immutable"))
        for key in ("podGroupTemplates", "compositePodGroupTemplates"):
            if _strip_minimums(new_spec.get(key)) != _strip_minimums(old_spec.get(key)):
                reasons.append(
                    Rejection(
                        f"spec.{key}",
                        "field is immutable: templates cannot be added, removed "
                        "or changed (only gang.minCount / gang.minGroupCount may change)",
                    )
                )
    return reasons


# --------------------------------------------------------------------------- quotas


def _admit_elastic_quota(eq: ElasticQuota, old: Resource | None, batch: _Batch) -> list[Rejection]:
    if old is not None:
        return []
    for other in batch.list("ElasticQuota"):
        meta = other["metadata"]
        if meta.get("namespace") == eq.metadata.namespace and meta["name"] != eq.name:
            return [
                Rejection(
                    "metadata.namespace",
                    f'namespace "{eq.metadata.namespace}" already has the ElasticQuota "{meta["name"]}"; '
                    "only one ElasticQuota per namespace is allowed",
                )
            ]
    return []


def _admit_quota_tree(tree: ElasticQuotaTree, old: Resource | None, batch: _Batch) -> list[Rejection]:
    if old is not None:
        return []
    for other in batch.list("ElasticQuotaTree"):
        meta = other["metadata"]
        return [
            Rejection(
                "metadata.name",
                f"the ElasticQuotaTree {meta.get('namespace')}/{meta['name']} already exists; "
                "only one ElasticQuotaTree per cluster is allowed",
            )
        ]
    return []
