"""``scheduling.k8s.io`` kinds: PriorityClass, Workload, PodGroup and CompositePodGroup.

The shape rules of docs/semantics.md §2.1-§2.3 (unions, int32 bounds, at most one
topology constraint, at most 4 resource claims...). Rules that need other objects (priority
resolution, template trees, workloadRef, immutability) belong to admission.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import Field, model_validator

from ledger.resources.models.meta import Empty, K8sModel, Resource
from ledger.resources.models.values import (
    MAX_USER_PRIORITY,
    PREEMPT_LOWER_PRIORITY,
    PreemptionPolicy,
    Problems,
    check_int32,
    check_name,
    check_priority,
    dns_subdomain_problem,
    exactly_one_of,
    path_segment_problem,
    qualified_name_problem,
)

MAX_TOPOLOGY_CONSTRAINTS = 1
MAX_RESOURCE_CLAIMS = 4


# --------------------------------------------------------------------------- PriorityClass


class PriorityClass(Resource):
    KIND: ClassVar[str] = "PriorityClass"
    value: int
    global_default: bool = False
    preemption_policy: PreemptionPolicy | None = None
    description: str = ""

    def normalized(self) -> dict[str, Any]:
        data = super().normalized()
        data.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
        return data

    def check(self) -> Problems:
        problems = super().check()
        if self.name.startswith("system-"):
            problems.append(("metadata.name", "priority class names with 'system-' prefix are reserved"))
        if self.value > MAX_USER_PRIORITY:
            problems.append(
                ("value", f"must be <= {MAX_USER_PRIORITY} (the highest user-definable priority)")
            )
        else:
            check_int32("value", self.value, problems)
        return problems


BUILTIN_PRIORITY_CLASSES: dict[str, dict[str, Any]] = {
    name: {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
        "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
    }
    for name, value, description in (
        (
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node "
            "if necessary.",
        ),
        (
            "system-node-critical",
            2_000_001_000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
    )
}


# --------------------------------------------------------------------------- group fields


def _policy_problems(path: str, basic: Empty | None, minimum_field: str, minimum: int | None) -> Problems:
    """``schedulingPolicy``: exactly one of ``basic`` / ``gang``; the gang minimum is an int32 >= 1.

    ``minimum`` is the gang's ``minCount`` / ``minGroupCount``, ``None`` when there is no gang.
    """
    problems = exactly_one_of(path, {"basic": basic is not None, "gang": minimum is not None})
    if problems or minimum is None:
        return problems
    if minimum < 1:
        return [(f"{path}.gang.{minimum_field}", "must be >= 1")]
    check_int32(f"{path}.gang.{minimum_field}", minimum, problems)
    return problems


class GangPolicy(K8sModel):
    min_count: int


class PodGroupSchedulingPolicy(K8sModel):
    basic: Empty | None = None
    gang: GangPolicy | None = None

    @property
    def is_gang(self) -> bool:
        return self.gang is not None

    def check(self, path: str) -> Problems:
        return _policy_problems(path, self.basic, "minCount", self.gang.min_count if self.gang else None)


class CompositeGangPolicy(K8sModel):
    min_group_count: int


class CompositePodGroupSchedulingPolicy(K8sModel):
    basic: Empty | None = None
    gang: CompositeGangPolicy | None = None

    @property
    def is_gang(self) -> bool:
        return self.gang is not None

    def check(self, path: str) -> Problems:
        minimum = self.gang.min_group_count if self.gang else None
        return _policy_problems(path, self.basic, "minGroupCount", minimum)


class TopologyConstraint(K8sModel):
    key: str


class SchedulingConstraints(K8sModel):
    topology: list[TopologyConstraint] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        problems: Problems = []
        if len(self.topology) > MAX_TOPOLOGY_CONSTRAINTS:
            problems.append(
                (
                    f"{path}.topology",
                    f"too many: {len(self.topology)}: must have at most {MAX_TOPOLOGY_CONSTRAINTS} item",
                )
            )
        for i, item in enumerate(self.topology):
            problem = qualified_name_problem(item.key) if item.key else "must not be empty"
            if problem:
                problems.append((f"{path}.topology[{i}].key", problem))
        return problems

    @property
    def topology_key(self) -> str | None:
        return self.topology[0].key if self.topology else None


class DisruptionMode(K8sModel):
    single: Empty | None = None
    all: Empty | None = None

    @property
    def mode(self) -> Literal["Single", "All"]:
        return "All" if self.all is not None else "Single"

    def check(self, path: str) -> Problems:
        return exactly_one_of(path, {"single": self.single is not None, "all": self.all is not None})


def _default_disruption_mode() -> DisruptionMode:
    return DisruptionMode(single=Empty())


class WorkloadRef(K8sModel):
    workload_name: str
    template_name: str

    def check(self, path: str) -> Problems:
        problems: Problems = []
        check_name(f"{path}.workloadName", self.workload_name, problems)
        check_name(f"{path}.templateName", self.template_name, problems, label=True)
        return problems


class _GroupBase(K8sModel):
    """Methods shared by PodGroup/CompositePodGroup specs and their Workload templates.

    Fields are declared on each subclass (to keep the upstream field order in dumps); the
    annotations below only inform the type checker.
    """

    if TYPE_CHECKING:
        scheduling_policy: PodGroupSchedulingPolicy | CompositePodGroupSchedulingPolicy
        scheduling_constraints: SchedulingConstraints | None
        disruption_mode: DisruptionMode | None
        priority_class_name: str | None
        priority: int | None
        preemption_policy: PreemptionPolicy | None

    @model_validator(mode="after")
    def _empty_class_name(self) -> Self:
        if self.priority_class_name == "":
            self.priority_class_name = None
        return self

    def check_group(self, path: str) -> Problems:
        """The rules of the fields every group spec and template has (policy to priority)."""
        problems = self.scheduling_policy.check(f"{path}.schedulingPolicy")
        if self.scheduling_constraints is not None:
            problems += self.scheduling_constraints.check(f"{path}.schedulingConstraints")
        if self.disruption_mode is not None:
            problems += self.disruption_mode.check(f"{path}.disruptionMode")
        check_name(f"{path}.priorityClassName", self.priority_class_name, problems)
        check_priority(f"{path}.priority", self.priority, problems)
        return problems

    @property
    def topology_key(self) -> str | None:
        c = self.scheduling_constraints
        return c.topology_key if c else None

    @property
    def disruption(self) -> Literal["Single", "All"]:
        """``"Single"`` or ``"All"`` (absent = Single)."""
        return self.disruption_mode.mode if self.disruption_mode else "Single"


def claims_problems(path: str, claims: list[dict[str, Any]]) -> Problems:
    """``resourceClaims`` (upstream's declarative rules of ``PodGroupResourceClaim``): at most 4,
    each with a unique ``name`` (a DNS label) and exactly one of ``resourceClaimName`` /
    ``resourceClaimTemplateName`` (DNS subdomains); a repeated name is a duplicate at its index."""
    lpath = f"{path}.resourceClaims"
    if len(claims) > MAX_RESOURCE_CLAIMS:
        return [(lpath, f"must have at most {MAX_RESOURCE_CLAIMS} items")]
    problems: Problems = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        cpath = f"{lpath}[{i}]"
        name = claim.get("name")
        if not isinstance(name, str) or not name:
            problems.append((f"{cpath}.name", "required value"))
        else:
            check_name(f"{cpath}.name", name, problems, label=True)
            if name in seen:
                problems.append((cpath, f'Duplicate value: "{name}"'))
            seen.add(name)
        sources = {key: claim.get(key) for key in ("resourceClaimName", "resourceClaimTemplateName")}
        problems += exactly_one_of(cpath, {key: value is not None for key, value in sources.items()})
        for key, value in sources.items():
            if value is not None:
                problem = dns_subdomain_problem(value) if isinstance(value, str) else "must be a string"
                if problem:
                    problems.append((f"{cpath}.{key}", f"invalid value {value!r}: {problem}"))
    return problems


# --------------------------------------------------------------------------- Workload


class PodGroupTemplate(_GroupBase):
    name: str
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: list[dict[str, Any]] = Field(default_factory=list)
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: PreemptionPolicy | None = None

    def check(self, path: str) -> Problems:
        problems: Problems = []
        check_name(f"{path}.name", self.name, problems, label=True)
        return problems + self.check_group(path) + claims_problems(path, self.resource_claims)


class CompositePodGroupTemplate(_GroupBase):
    name: str
    scheduling_policy: CompositePodGroupSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: PreemptionPolicy | None = None
    pod_group_templates: list[PodGroupTemplate] = Field(default_factory=list)
    composite_pod_group_templates: list[CompositePodGroupTemplate] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        """This template's own fields; its children are checked by ``Workload.check``."""
        problems: Problems = []
        check_name(f"{path}.name", self.name, problems, label=True)
        return problems + self.check_group(path)


CompositePodGroupTemplate.model_rebuild()

Template = PodGroupTemplate | CompositePodGroupTemplate


class ControllerRef(K8sModel):
    api_group: str = ""
    kind: str
    name: str

    def check(self, path: str) -> Problems:
        """``apiGroup`` a DNS subdomain when set; ``kind`` and ``name`` required path segments."""
        problems: Problems = []
        if self.api_group:
            check_name(f"{path}.apiGroup", self.api_group, problems)
        for key, value in (("kind", self.kind), ("name", self.name)):
            problem = path_segment_problem(value) if value else "required value"
            if problem:
                problems.append((f"{path}.{key}", problem))
        return problems


class WorkloadSpec(K8sModel):
    controller_ref: ControllerRef | None = None
    pod_group_templates: list[PodGroupTemplate] = Field(default_factory=list)
    composite_pod_group_templates: list[CompositePodGroupTemplate] = Field(default_factory=list)


class Workload(Resource):
    KIND: ClassVar[str] = "Workload"
    spec: WorkloadSpec

    def check(self) -> Problems:
        problems = super().check()
        if self.spec.controller_ref is not None:
            problems += self.spec.controller_ref.check("spec.controllerRef")
        for path, _, template, _ in self.templates():
            problems += template.check(path)
        return problems

    def templates(self) -> list[tuple[str, int, Template, CompositePodGroupTemplate | None]]:
        """Every template at any depth, depth first: ``(path, depth, template, parent)``; roots have depth 1."""

        def walk(
            path: str,
            depth: int,
            parent: CompositePodGroupTemplate | None,
            pgs: list[PodGroupTemplate],
            cpgs: list[CompositePodGroupTemplate],
        ) -> Iterable[tuple[str, int, Template, CompositePodGroupTemplate | None]]:
            for i, t in enumerate(pgs):
                yield f"{path}.podGroupTemplates[{i}]", depth, t, parent
            for i, c in enumerate(cpgs):
                cpath = f"{path}.compositePodGroupTemplates[{i}]"
                yield cpath, depth, c, parent
                yield from walk(cpath, depth + 1, c, c.pod_group_templates, c.composite_pod_group_templates)

        return list(
            walk("spec", 1, None, self.spec.pod_group_templates, self.spec.composite_pod_group_templates)
        )

    def find_template(self, name: str) -> Template | None:
        for _, _, t, _ in self.templates():
            if t.name == name:
                return t
        return None


# --------------------------------------------------------------------------- PodGroup and CompositePodGroup


class _GroupSpec(_GroupBase):
    """What PodGroupSpec and CompositePodGroupSpec share beyond the template fields."""

    if TYPE_CHECKING:
        parent_composite_pod_group_name: str | None
        workload_ref: WorkloadRef | None

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.disruption_mode is None:
            self.disruption_mode = _default_disruption_mode()
        if self.parent_composite_pod_group_name == "":
            self.parent_composite_pod_group_name = None
        return self

    def check_spec(self) -> Problems:
        """``check_group`` plus the references: ``workloadRef`` and the parent's name."""
        problems = self.check_group("spec")
        if self.workload_ref is not None:
            problems += self.workload_ref.check("spec.workloadRef")
        if self.parent_composite_pod_group_name is not None:
            check_name("spec.parentCompositePodGroupName", self.parent_composite_pod_group_name, problems)
        return problems


class _Group(Resource):
    """PodGroup and CompositePodGroup: the stored spec always says its ``preemptionPolicy``."""

    if TYPE_CHECKING:
        spec: PodGroupSpec | CompositePodGroupSpec

    def normalized(self) -> dict[str, Any]:
        data = super().normalized()
        data["spec"].setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
        return data


class PodGroupSpec(_GroupSpec):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadRef | None = None
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: list[dict[str, Any]] = Field(default_factory=list)
    disruption_mode: DisruptionMode | None = None  # filled with {single: {}} after validation
    priority_class_name: str | None = None
    priority: int | None = None  # set by admission
    preemption_policy: PreemptionPolicy | None = None  # set by admission

    @property
    def min_count(self) -> int | None:
        gang = self.scheduling_policy.gang
        return gang.min_count if gang else None


class PodGroup(_Group):
    KIND: ClassVar[str] = "PodGroup"
    spec: PodGroupSpec

    def check(self) -> Problems:
        spec = self.spec
        problems = super().check() + spec.check_spec()
        if spec.parent_composite_pod_group_name is not None and spec.workload_ref is None:
            problems.append(("spec.parentCompositePodGroupName", "requires spec.workloadRef to be set"))
        return problems + claims_problems("spec", spec.resource_claims)


class CompositePodGroupSpec(_GroupSpec):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadRef
    scheduling_policy: CompositePodGroupSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None  # filled with {single: {}} after validation
    priority_class_name: str | None = None
    priority: int | None = None  # set by admission
    preemption_policy: PreemptionPolicy | None = None  # set by admission

    @property
    def min_group_count(self) -> int | None:
        gang = self.scheduling_policy.gang
        return gang.min_group_count if gang else None


class CompositePodGroup(_Group):
    KIND: ClassVar[str] = "CompositePodGroup"
    spec: CompositePodGroupSpec

    def check(self) -> Problems:
        problems = super().check() + self.spec.check_spec()
        if self.spec.parent_composite_pod_group_name == self.name:
            problems.append(("spec.parentCompositePodGroupName", "must not name the group itself"))
        return problems
