"""Pydantic models of every resource kind, with the upstream (camelCase) field names.

Shape and types are checked by pydantic (strict: a string is not an int, unknown fields are
ignored as kubectl does); value rules that need a precise field path live in each model's
``check()`` and return ``(path, message)`` pairs.

Normalized form (``Resource.normalized()``) is what is stored in events:

* upstream field names; ``apiVersion``, ``kind``, ``metadata`` (``name``, ``namespace`` for
  namespaced kinds, then only non-empty ``labels``, ``annotations``, ``uid``, ``ownerReferences``);
* quantities are exact integers in base units under the upstream key: ``cpu`` in
  **milli-CPU** (``{"cpu": 500}`` = ``500m``), ``memory``/``ephemeral-storage`` in bytes,
  everything else (``pods``, ``nvidia.com/gpu``) as counts; resource maps are key-sorted;
* a field equal to its default is omitted (``tolerations: []``, ``unschedulable: false``,
  toleration ``operator: Equal``...), EXCEPT these defaults which are always written:
  ``metadata.namespace`` (``default``), PodGroup/CompositePodGroup ``spec.disruptionMode``
  (``{"single": {}}``), ``spec.preemptionPolicy`` (``PreemptLowerPriority``) of Pod, PodGroup,
  CompositePodGroup and PriorityClass, Pod ``spec.schedulerName`` (``default-scheduler``),
  Node ``status.allocatable`` (= ``capacity`` when not given), the whole SchedulerConfig spec;
* ``priority``/``priorityClassName`` appear once admission resolved them.

``Model.from_normalized(d).normalized() == d`` for every normalized dict ``d``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ledger.resources.errors import format_path
from ledger.resources.kinds import KindInfo, get_kind
from ledger.resources.quantity import parse_quantity, to_base_units

__all__ = [
    "BUILTIN_PRIORITY_CLASSES",
    "DEFAULT_FEATURE_GATES",
    "DEFAULT_PLUGIN_WEIGHTS",
    "DEFAULT_RESOURCE_WEIGHTS",
    "DEFAULT_SCHEDULER_NAME",
    "FEATURE_GATES",
    "MAX_USER_PRIORITY",
    "MODELS",
    "PREEMPT_LOWER_PRIORITY",
    "CompositePodGroup",
    "ElasticQuota",
    "ElasticQuotaTree",
    "Node",
    "ObjectKey",
    "Pod",
    "PodDisruptionBudget",
    "PodGroup",
    "PriorityClass",
    "Resource",
    "SchedulerConfig",
    "SchedulerConfigSpec",
    "Workload",
    "effective_requests",
    "from_normalized",
    "model_for",
    "pod_effective_requests",
    "validate_raw",
    "validate_scheduler_config_spec",
]

ObjectKey = tuple[str, str, str]  # (kind, namespace or "" for cluster-scoped kinds, name)
Problems = list[tuple[str, str]]  # (field path, message)

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
MAX_USER_PRIORITY = 1_000_000_000
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_TOPOLOGY_CONSTRAINTS = 1
MAX_RESOURCE_CLAIMS = 4
FEATURE_GATES = (
    "GenericWorkload",
    "TopologyAwareWorkloadScheduling",
    "CompositePodGroup",
    "PodGroupPreemptionPolicy",
    "WorkloadAwarePreemption",
)
DEFAULT_FEATURE_GATES: dict[str, bool] = dict.fromkeys(FEATURE_GATES, True)
DEFAULT_RESOURCE_WEIGHTS: dict[str, int] = {"cpu": 1, "memory": 1}
DEFAULT_PLUGIN_WEIGHTS: dict[str, int] = {
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodGroupPodsCount": 1,
    "TaintToleration": 3,
}
DEFAULT_BACKOFF_INITIAL_SECONDS = 1
DEFAULT_BACKOFF_MAX_SECONDS = 10
DEFAULT_UNSCHEDULABLE_FLUSH_SECONDS = 300

PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


# --------------------------------------------------------------------------- value helpers

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PERCENT = re.compile(r"^\d+%$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}


def dns_label_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS_LABEL.match(value):
        return (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return None


def dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS_SUBDOMAIN.match(value):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def qualified_name_problem(value: str) -> str | None:
    prefix, slash, name = value.rpartition("/")
    if slash:
        if not prefix:
            return "prefix part must be non-empty"
        problem = dns_subdomain_problem(prefix)
        if problem:
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if value and not _QUALIFIED_NAME.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return None


def _is_normalized(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("normalized"))


def _quantity_value(value: Any, info: ValidationInfo) -> Any:
    if _is_normalized(info):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"normalized quantities are non-negative integers, got {value!r}")
        return value
    return parse_quantity(value)


def _resource_list(value: dict[str, Any], info: ValidationInfo) -> dict[str, int]:
    if _is_normalized(info):
        return {k: int(value[k]) for k in sorted(value)}
    return {k: to_base_units(k, value[k]) for k in sorted(value)}


# One quantity: parsed exactly (Fraction) first, turned into integer base units by the
# ResourceList validator, which knows the resource name (cpu → milli).
_Quantity = Annotated[int, PlainValidator(_quantity_value)]
ResourceList = Annotated[dict[str, _Quantity], AfterValidator(_resource_list)]


def _seconds_value(value: Any, info: ValidationInfo) -> Any:
    """Seconds: a number or a Go duration string (``30s``, ``1m30s``, ``500ms``)."""
    if isinstance(value, bool):
        raise ValueError("expected a number of seconds or a duration such as 30s")
    if isinstance(value, int | float | Decimal):
        seconds = parse_quantity(value)
    elif isinstance(value, str) and not _is_normalized(info):
        text = value.strip()
        pos, total = 0, Fraction(0)
        for match in _DURATION_PART.finditer(text):
            if match.start() != pos:
                break
            total += Fraction(Decimal(match.group(1))) * _DURATION_UNITS[match.group(2)]
            pos = match.end()
        if pos != len(text) or not text:
            raise ValueError(f"invalid duration {value!r}: use seconds or a duration such as 30s, 5m, 1h30m")
        seconds = total
    else:
        raise ValueError("expected a number of seconds or a duration such as 30s")
    if seconds.denominator == 1:
        return int(seconds)
    return float(round(Decimal(seconds.numerator) / Decimal(seconds.denominator), 6))


Seconds = Annotated[int | float, PlainValidator(_seconds_value)]


def _int32(path: str, value: int | None, problems: Problems) -> None:
    if value is not None and not INT32_MIN <= value <= INT32_MAX:
        problems.append((path, f"must be a 32-bit integer ({INT32_MIN}..{INT32_MAX})"))


def _check_priority(path: str, value: int | None, problems: Problems) -> None:
    if value is not None:
        if value > MAX_USER_PRIORITY:
            problems.append((path, f"must be <= {MAX_USER_PRIORITY}"))
        else:
            _int32(path, value, problems)


def _name(path: str, value: str | None, problems: Problems, *, label: bool = False) -> None:
    if value is None:
        return
    if not value:
        problems.append((path, "must not be empty"))
        return
    problem = dns_label_problem(value) if label else dns_subdomain_problem(value)
    if problem:
        problems.append((path, f"invalid value {value!r}: {problem}"))


def _labels(path: str, labels: Mapping[str, str], problems: Problems) -> None:
    for key, val in labels.items():
        problem = qualified_name_problem(key)
        if problem:
            problems.append((f"{path}[{key}]", f"invalid label key {key!r}: {problem}"))
        problem = label_value_problem(val)
        if problem:
            problems.append((f"{path}[{key}]", f"invalid label value {val!r}: {problem}"))


# --------------------------------------------------------------------------- base classes


class K8sModel(BaseModel):
    """camelCase aliases, strict types, unknown fields ignored."""

    model_config = ConfigDict(
        extra="ignore",
        populate_by_name=True,
        alias_generator=to_camel,
        strict=True,
        validate_assignment=False,
    )

    def normalized(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_defaults=True, mode="json")


class Empty(K8sModel):
    """``{}`` — a union member that carries no data (``basic: {}``, ``single: {}``)."""


class OwnerReference(K8sModel):
    api_version: str
    kind: str
    name: str
    uid: str | None = None
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sModel):
    name: str
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sort(self) -> Self:
        self.labels = dict(sorted(self.labels.items()))
        self.annotations = dict(sorted(self.annotations.items()))
        return self

    def check(self, namespaced: bool) -> Problems:
        problems: Problems = []
        _name("metadata.name", self.name, problems)
        if namespaced and self.namespace is not None:
            _name("metadata.namespace", self.namespace, problems, label=True)
        _labels("metadata.labels", self.labels, problems)
        for i, ref in enumerate(self.owner_references):
            if not ref.name:
                problems.append((f"metadata.ownerReferences[{i}].name", "must not be empty"))
        if sum(1 for r in self.owner_references if r.controller) > 1:
            problems.append(
                ("metadata.ownerReferences", "only one reference can have controller set to true")
            )
        return problems


class Resource(K8sModel):
    """Base of every kind: ``apiVersion``, ``kind``, ``metadata``."""

    KIND: ClassVar[str] = ""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta

    @classmethod
    def info(cls) -> KindInfo:
        return get_kind(cls.KIND)

    @model_validator(mode="after")
    def _identity(self) -> Self:
        info = self.info()
        if not self.kind:
            self.kind = info.kind
        elif self.kind != info.kind:
            raise ValueError(f"kind {self.kind!r} does not match {info.kind}")
        if not self.api_version:
            self.api_version = info.api_version
        elif self.api_version not in info.api_versions:
            raise ValueError(f"{info.kind} is served as {info.api_version}, not {self.api_version!r}")
        if info.namespaced:
            if not self.metadata.namespace:
                self.metadata.namespace = "default"
        else:
            self.metadata.namespace = None
        return self

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def key(self) -> ObjectKey:
        return (self.KIND, self.metadata.namespace or "", self.metadata.name)

    @property
    def ref(self) -> str:
        """``PodGroup default/pg1`` / ``Node node-1``."""
        ns = self.metadata.namespace
        return f"{self.KIND} {ns}/{self.name}" if ns else f"{self.KIND} {self.name}"

    def check(self) -> Problems:
        """Value rules beyond types; ``[]`` when valid."""
        return self.metadata.check(self.info().namespaced)

    def normalized(self) -> dict[str, Any]:
        data = self.model_dump(by_alias=True, exclude_defaults=True, mode="json")
        data["apiVersion"] = self.api_version
        data["kind"] = self.kind
        meta = data["metadata"]
        if self.metadata.namespace is not None:
            meta["namespace"] = self.metadata.namespace
        # fixed key order: apiVersion, kind, metadata, then the rest as declared
        ordered = {
            "apiVersion": data.pop("apiVersion"),
            "kind": data.pop("kind"),
            "metadata": {"name": meta.pop("name"), **meta},
        }
        data.pop("metadata")
        ordered.update(data)
        return ordered

    @classmethod
    def from_normalized(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild from a stored normalized dict (quantities already in base units)."""
        return cls.model_validate(data, context={"normalized": True})

    @classmethod
    def from_raw(cls, data: Mapping[str, Any]) -> Self:
        """Validate user input (quantities as Kubernetes strings). Raises pydantic.ValidationError."""
        return cls.model_validate(data)


# --------------------------------------------------------------------------- Node


class Taint(K8sModel):
    key: str
    value: str = ""
    effect: TaintEffect


class NodeSpec(K8sModel):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False


class NodeStatus(K8sModel):
    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList | None = None


class Node(Resource):
    KIND: ClassVar[str] = "Node"
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @model_validator(mode="after")
    def _allocatable(self) -> Self:
        if self.status.allocatable is None:
            self.status = self.status.model_copy(update={"allocatable": dict(self.status.capacity)})
        return self

    @property
    def allocatable(self) -> dict[str, int]:
        return dict(self.status.allocatable or {})

    def check(self) -> Problems:
        problems = super().check()
        for i, taint in enumerate(self.spec.taints):
            problem = qualified_name_problem(taint.key)
            if problem:
                problems.append((f"spec.taints[{i}].key", f"invalid value {taint.key!r}: {problem}"))
            problem = label_value_problem(taint.value)
            if problem:
                problems.append((f"spec.taints[{i}].value", f"invalid value {taint.value!r}: {problem}"))
        seen = set()
        for i, taint in enumerate(self.spec.taints):
            if (taint.key, taint.effect) in seen:
                problems.append(
                    (
                        f"spec.taints[{i}]",
                        f"taints must be unique by key and effect pair: {taint.key}:{taint.effect}",
                    )
                )
            seen.add((taint.key, taint.effect))
        return problems


# --------------------------------------------------------------------------- selectors


class NodeSelectorRequirement(K8sModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        problems: Problems = []
        if not self.key:
            problems.append((f"{path}.key", "must not be empty"))
        if self.operator in ("In", "NotIn") and not self.values:
            problems.append((f"{path}.values", f"must be specified when `operator` is '{self.operator}'"))
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            problems.append((f"{path}.values", f"may not be specified when `operator` is '{self.operator}'"))
        if self.operator in ("Gt", "Lt"):
            if len(self.values) != 1:
                problems.append(
                    (f"{path}.values", f"must be specified single value when `operator` is '{self.operator}'")
                )
            elif not re.fullmatch(r"-?\d+", self.values[0]):
                problems.append((f"{path}.values[0]", f"must be an integer, got {self.values[0]!r}"))
        return problems


class NodeSelectorTerm(K8sModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        problems: Problems = []
        for i, req in enumerate(self.match_expressions):
            problems += req.check(f"{path}.matchExpressions[{i}]")
        for i, req in enumerate(self.match_fields):
            problems += req.check(f"{path}.matchFields[{i}]")
            if req.key != "metadata.name":
                problems.append((f"{path}.matchFields[{i}].key", "only metadata.name is supported"))
        return problems


class NodeSelector(K8sModel):
    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(K8sModel):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(K8sModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class Affinity(K8sModel):
    node_affinity: NodeAffinity | None = None


class LabelSelectorRequirement(K8sModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(K8sModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        problems: Problems = []
        _labels(f"{path}.matchLabels", self.match_labels, problems)
        for i, req in enumerate(self.match_expressions):
            p = f"{path}.matchExpressions[{i}]"
            if not req.key:
                problems.append((f"{p}.key", "must not be empty"))
            if req.operator in ("In", "NotIn") and not req.values:
                problems.append((f"{p}.values", f"must be specified when `operator` is '{req.operator}'"))
            if req.operator in ("Exists", "DoesNotExist") and req.values:
                problems.append((f"{p}.values", f"may not be specified when `operator` is '{req.operator}'"))
        return problems


# --------------------------------------------------------------------------- Pod


class ResourceRequirements(K8sModel):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)

    @model_validator(mode="after")
    def _requests_default_to_limits(self) -> Self:
        missing = {k: v for k, v in self.limits.items() if k not in self.requests}
        if missing:
            self.requests = dict(sorted({**self.requests, **missing}.items()))
        return self


class Container(K8sModel):
    name: str
    image: str | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: Literal["Always"] | None = None  # init containers only: a sidecar


class Toleration(K8sModel):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    toleration_seconds: int | None = None


class SchedulingGate(K8sModel):
    name: str


class SchedulingGroup(K8sModel):
    pod_group_name: str


class PodSpec(K8sModel):
    containers: list[Container]
    init_containers: list[Container] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: PreemptionPolicy | None = None
    scheduler_name: str | None = None
    scheduling_gates: list[SchedulingGate] = Field(default_factory=list)
    node_name: str | None = None
    scheduling_group: SchedulingGroup | None = None

    @model_validator(mode="after")
    def _canonical(self) -> Self:
        self.node_selector = dict(sorted(self.node_selector.items()))
        if self.priority_class_name == "":
            self.priority_class_name = None
        if self.node_name == "":
            self.node_name = None
        if self.scheduler_name == "":
            self.scheduler_name = None
        return self


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        total[k] = total.get(k, 0) + v


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > total.get(k, 0):
            total[k] = v


def effective_requests(
    containers: Iterable[Mapping[str, int]],
    init_containers: Iterable[tuple[Mapping[str, int], bool]] = (),
    overhead: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Kubernetes' pod request rule, in base units.

    ``max(sum(containers) + sum(sidecars), max over init containers of (its requests + the
    sidecars started before it)) + overhead``; ``init_containers`` are ``(requests,
    is_sidecar)`` in order (a sidecar is an init container with ``restartPolicy: Always``).
    Without sidecars this is ``max(sum over containers, max over init containers) + overhead``.
    """
    total: dict[str, int] = {}
    for reqs in containers:
        _add(total, reqs)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for reqs, is_sidecar in init_containers:
        if is_sidecar:
            _add(total, reqs)
            _add(sidecars, reqs)
            _max_into(init_peak, sidecars)
        else:
            during = dict(sidecars)
            _add(during, reqs)
            _max_into(init_peak, during)
    _max_into(total, init_peak)
    if overhead:
        _add(total, overhead)
    return dict(sorted(total.items()))


def pod_effective_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """``effective_requests`` straight from a normalized Pod dict (no model needed)."""
    spec = pod["spec"]
    return effective_requests(
        (c.get("resources", {}).get("requests", {}) for c in spec.get("containers", [])),
        (
            (c.get("resources", {}).get("requests", {}), c.get("restartPolicy") == "Always")
            for c in spec.get("initContainers", [])
        ),
        spec.get("overhead"),
    )


class Pod(Resource):
    KIND: ClassVar[str] = "Pod"
    spec: PodSpec

    def effective_requests(self) -> dict[str, int]:
        """Requests the scheduler must fit: init containers, sidecars and overhead folded in."""
        spec = self.spec
        return effective_requests(
            (c.resources.requests for c in spec.containers),
            ((c.resources.requests, c.restart_policy == "Always") for c in spec.init_containers),
            spec.overhead,
        )

    @property
    def has_controller(self) -> bool:
        return any(ref.controller for ref in self.metadata.owner_references)

    @property
    def pod_group_name(self) -> str | None:
        group = self.spec.scheduling_group
        return group.pod_group_name if group else None

    def normalized(self) -> dict[str, Any]:
        data = super().normalized()
        spec = data["spec"]
        spec.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
        spec.setdefault("schedulerName", DEFAULT_SCHEDULER_NAME)
        return data

    def check(self) -> Problems:
        problems = super().check()
        spec = self.spec
        if not spec.containers:
            problems.append(("spec.containers", "required value: at least one container"))
        seen: set[str] = set()
        for field, items in (("containers", spec.containers), ("initContainers", spec.init_containers)):
            for i, c in enumerate(items):
                path = f"spec.{field}[{i}]"
                _name(f"{path}.name", c.name, problems, label=True)
                if c.name in seen:
                    problems.append((f"{path}.name", f"duplicate value {c.name!r}"))
                seen.add(c.name)
                if field == "containers" and c.restart_policy is not None:
                    problems.append((f"{path}.restartPolicy", "may only be set on init containers"))
                res = c.resources
                for rname, limit in res.limits.items():
                    if res.requests.get(rname, 0) > limit:
                        problems.append(
                            (
                                f"{path}.resources.requests[{rname}]"
                                if not rname.isidentifier()
                                else f"{path}.resources.requests.{rname}",
                                f"must be less than or equal to {rname} limit",
                            )
                        )
        for i, tol in enumerate(spec.tolerations):
            path = f"spec.tolerations[{i}]"
            if tol.operator == "Exists" and tol.value:
                problems.append((f"{path}.operator", "value must be empty when `operator` is 'Exists'"))
            if not tol.key and tol.operator != "Exists":
                problems.append(
                    (
                        f"{path}.operator",
                        "operator must be Exists when `key` is empty, which "
                        'means "match all values and all keys"',
                    )
                )
            if tol.key:
                problem = qualified_name_problem(tol.key)
                if problem:
                    problems.append((f"{path}.key", f"invalid value {tol.key!r}: {problem}"))
            if tol.toleration_seconds is not None and tol.effect != "NoExecute":
                problems.append(
                    (f"{path}.effect", "effect must be 'NoExecute' when `tolerationSeconds` is set")
                )
        _labels("spec.nodeSelector", spec.node_selector, problems)
        node_affinity = spec.affinity.node_affinity if spec.affinity else None
        if node_affinity:
            base = "spec.affinity.nodeAffinity"
            required = node_affinity.required_during_scheduling_ignored_during_execution
            if required is not None:
                rpath = f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
                if not required.node_selector_terms:
                    problems.append((rpath, "must have at least one node selector term"))
                for i, term in enumerate(required.node_selector_terms):
                    problems += term.check(f"{rpath}[{i}]")
            for i, pref in enumerate(node_affinity.preferred_during_scheduling_ignored_during_execution):
                ppath = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
                if not 1 <= pref.weight <= 100:
                    problems.append((f"{ppath}.weight", "must be in the range 1-100"))
                problems += pref.preference.check(f"{ppath}.preference")
        _int32("spec.priority", spec.priority, problems)
        _name("spec.priorityClassName", spec.priority_class_name, problems)
        _name("spec.nodeName", spec.node_name, problems)
        gates: set[str] = set()
        for i, gate in enumerate(spec.scheduling_gates):
            problem = qualified_name_problem(gate.name) if gate.name else "must not be empty"
            if problem:
                problems.append((f"spec.schedulingGates[{i}].name", problem))
            if gate.name in gates:
                problems.append((f"spec.schedulingGates[{i}].name", f"duplicate value {gate.name!r}"))
            gates.add(gate.name)
        if spec.scheduling_group is not None:
            _name("spec.schedulingGroup.podGroupName", spec.scheduling_group.pod_group_name, problems)
        return problems


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
            _int32("value", self.value, problems)
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


# --------------------------------------------------------------------------- groups and Workload


class GangPolicy(K8sModel):
    min_count: int


class PodGroupSchedulingPolicy(K8sModel):
    basic: Empty | None = None
    gang: GangPolicy | None = None

    @property
    def is_gang(self) -> bool:
        return self.gang is not None

    def check(self, path: str) -> Problems:
        if (self.basic is None) == (self.gang is None):
            return [(path, "must specify exactly one of: `basic`, `gang`")]
        if self.gang is not None and self.gang.min_count < 1:
            return [(f"{path}.gang.minCount", "must be >= 1")]
        if self.gang is not None:
            problems: Problems = []
            _int32(f"{path}.gang.minCount", self.gang.min_count, problems)
            return problems
        return []


class CompositeGangPolicy(K8sModel):
    min_group_count: int


class CompositePodGroupSchedulingPolicy(K8sModel):
    basic: Empty | None = None
    gang: CompositeGangPolicy | None = None

    @property
    def is_gang(self) -> bool:
        return self.gang is not None

    def check(self, path: str) -> Problems:
        if (self.basic is None) == (self.gang is None):
            return [(path, "must specify exactly one of: `basic`, `gang`")]
        if self.gang is not None and self.gang.min_group_count < 1:
            return [(f"{path}.gang.minGroupCount", "must be >= 1")]
        if self.gang is not None:
            problems: Problems = []
            _int32(f"{path}.gang.minGroupCount", self.gang.min_group_count, problems)
            return problems
        return []


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
        if (self.single is None) == (self.all is None):
            return [(path, "must specify exactly one of: `single`, `all`")]
        return []


def _default_disruption_mode() -> DisruptionMode:
    return DisruptionMode(single=Empty())


class WorkloadRef(K8sModel):
    workload_name: str
    template_name: str

    def check(self, path: str) -> Problems:
        problems: Problems = []
        _name(f"{path}.workloadName", self.workload_name, problems)
        _name(f"{path}.templateName", self.template_name, problems, label=True)
        return problems


class _GroupBase(K8sModel):
    """Methods shared by PodGroup/CompositePodGroup specs and their Workload templates.

    Fields are declared on each subclass (to keep the upstream field order in dumps); the
    annotations below only inform the type checker.
    """

    if TYPE_CHECKING:
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

    def _check_common(self, path: str) -> Problems:
        problems: Problems = []
        if self.scheduling_constraints is not None:
            problems += self.scheduling_constraints.check(f"{path}.schedulingConstraints")
        if self.disruption_mode is not None:
            problems += self.disruption_mode.check(f"{path}.disruptionMode")
        _name(f"{path}.priorityClassName", self.priority_class_name, problems)
        _check_priority(f"{path}.priority", self.priority, problems)
        return problems

    @property
    def topology_key(self) -> str | None:
        c = self.scheduling_constraints
        return c.topology_key if c else None

    @property
    def disruption(self) -> Literal["Single", "All"]:
        """``"Single"`` or ``"All"`` (absent = Single)."""
        return self.disruption_mode.mode if self.disruption_mode else "Single"


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
        _name(f"{path}.name", self.name, problems, label=True)
        problems += self.scheduling_policy.check(f"{path}.schedulingPolicy")
        problems += self._check_common(path)
        if len(self.resource_claims) > MAX_RESOURCE_CLAIMS:
            problems.append((f"{path}.resourceClaims", f"must have at most {MAX_RESOURCE_CLAIMS} items"))
        return problems


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
        problems: Problems = []
        _name(f"{path}.name", self.name, problems, label=True)
        problems += self.scheduling_policy.check(f"{path}.schedulingPolicy")
        problems += self._check_common(path)
        for i, t in enumerate(self.pod_group_templates):
            problems += t.check(f"{path}.podGroupTemplates[{i}]")
        for i, c in enumerate(self.composite_pod_group_templates):
            problems += c.check(f"{path}.compositePodGroupTemplates[{i}]")
        return problems


CompositePodGroupTemplate.model_rebuild()


class ControllerRef(K8sModel):
    api_group: str = ""
    kind: str
    name: str


class WorkloadSpec(K8sModel):
    controller_ref: ControllerRef | None = None
    pod_group_templates: list[PodGroupTemplate] = Field(default_factory=list)
    composite_pod_group_templates: list[CompositePodGroupTemplate] = Field(default_factory=list)


class Workload(Resource):
    KIND: ClassVar[str] = "Workload"
    spec: WorkloadSpec

    def check(self) -> Problems:
        problems = super().check()
        ref = self.spec.controller_ref
        if ref is not None:
            if not ref.kind:
                problems.append(("spec.controllerRef.kind", "required value"))
            if not ref.name:
                problems.append(("spec.controllerRef.name", "required value"))
        for i, t in enumerate(self.spec.pod_group_templates):
            problems += t.check(f"spec.podGroupTemplates[{i}]")
        for i, c in enumerate(self.spec.composite_pod_group_templates):
            problems += c.check(f"spec.compositePodGroupTemplates[{i}]")
        return problems

    def templates(
        self,
    ) -> Iterable[
        tuple[str, int, PodGroupTemplate | CompositePodGroupTemplate, CompositePodGroupTemplate | None]
    ]:
        """Every template at any depth: ``(path, depth, template, parent)``; roots have depth 1."""

        def walk(
            path: str,
            depth: int,
            parent: CompositePodGroupTemplate | None,
            pgs: list[PodGroupTemplate],
            cpgs: list[CompositePodGroupTemplate],
        ) -> Iterable[
            tuple[str, int, PodGroupTemplate | CompositePodGroupTemplate, CompositePodGroupTemplate | None]
        ]:
            for i, t in enumerate(pgs):
                yield f"{path}.podGroupTemplates[{i}]", depth, t, parent
            for i, c in enumerate(cpgs):
                cpath = f"{path}.compositePodGroupTemplates[{i}]"
                yield cpath, depth, c, parent
                yield from walk(cpath, depth + 1, c, c.pod_group_templates, c.composite_pod_group_templates)

        return list(
            walk("spec", 1, None, self.spec.pod_group_templates, self.spec.composite_pod_group_templates)
        )

    def find_template(self, name: str) -> PodGroupTemplate | CompositePodGroupTemplate | None:
        for _, _, t, _ in self.templates():
            if t.name == name:
                return t
        return None


class PodGroupSpec(_GroupBase):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadRef | None = None
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: list[dict[str, Any]] = Field(default_factory=list)
    disruption_mode: DisruptionMode | None = None  # filled with {single: {}} after validation
    priority_class_name: str | None = None
    priority: int | None = None  # set by admission
    preemption_policy: PreemptionPolicy | None = None  # set by admission

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.disruption_mode is None:
            self.disruption_mode = _default_disruption_mode()
        if self.parent_composite_pod_group_name == "":
            self.parent_composite_pod_group_name = None
        return self

    @property
    def min_count(self) -> int | None:
        gang = self.scheduling_policy.gang
        return gang.min_count if gang else None


class PodGroup(Resource):
    KIND: ClassVar[str] = "PodGroup"
    spec: PodGroupSpec

    def normalized(self) -> dict[str, Any]:
        data = super().normalized()
        data["spec"].setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
        return data

    def check(self) -> Problems:
        problems = super().check()
        spec = self.spec
        problems += spec.scheduling_policy.check("spec.schedulingPolicy")
        problems += spec._check_common("spec")
        if spec.workload_ref is not None:
            problems += spec.workload_ref.check("spec.workloadRef")
        if spec.parent_composite_pod_group_name is not None:
            _name("spec.parentCompositePodGroupName", spec.parent_composite_pod_group_name, problems)
            if spec.workload_ref is None:
                problems.append(("spec.parentCompositePodGroupName", "requires spec.workloadRef to be set"))
        if len(spec.resource_claims) > MAX_RESOURCE_CLAIMS:
            problems.append(("spec.resourceClaims", f"must have at most {MAX_RESOURCE_CLAIMS} items"))
        return problems


class CompositePodGroupSpec(_GroupBase):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadRef
    scheduling_policy: CompositePodGroupSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None  # filled with {single: {}} after validation
    priority_class_name: str | None = None
    priority: int | None = None  # set by admission
    preemption_policy: PreemptionPolicy | None = None  # set by admission

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.disruption_mode is None:
            self.disruption_mode = _default_disruption_mode()
        if self.parent_composite_pod_group_name == "":
            self.parent_composite_pod_group_name = None
        return self

    @property
    def min_group_count(self) -> int | None:
        gang = self.scheduling_policy.gang
        return gang.min_group_count if gang else None


class CompositePodGroup(Resource):
    KIND: ClassVar[str] = "CompositePodGroup"
    spec: CompositePodGroupSpec

    def normalized(self) -> dict[str, Any]:
        data = super().normalized()
        data["spec"].setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
        return data

    def check(self) -> Problems:
        problems = super().check()
        spec = self.spec
        problems += spec.scheduling_policy.check("spec.schedulingPolicy")
        problems += spec._check_common("spec")
        problems += spec.workload_ref.check("spec.workloadRef")
        if spec.parent_composite_pod_group_name is not None:
            _name("spec.parentCompositePodGroupName", spec.parent_composite_pod_group_name, problems)
            if spec.parent_composite_pod_group_name == self.name:
                problems.append(("spec.parentCompositePodGroupName", "must not name the group itself"))
        return problems


# --------------------------------------------------------------------------- PodDisruptionBudget


class PodDisruptionBudgetSpec(K8sModel):
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = None


class PodDisruptionBudget(Resource):
    KIND: ClassVar[str] = "PodDisruptionBudget"
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)

    def check(self) -> Problems:
        problems = super().check()
        spec = self.spec
        if spec.min_available is not None and spec.max_unavailable is not None:
            problems.append(("spec", "minAvailable and maxUnavailable cannot be both set"))
        for field, value in (("minAvailable", spec.min_available), ("maxUnavailable", spec.max_unavailable)):
            if isinstance(value, int) and value < 0:
                problems.append((f"spec.{field}", "must be greater than or equal to 0"))
            if isinstance(value, str):
                if not _PERCENT.match(value):
                    problems.append(
                        (
                            f"spec.{field}",
                            f"a valid percent string must be a numeric string "
                            f"followed by an ending '%' (e.g. '1%',  or '93%'), got {value!r}",
                        )
                    )
                elif int(value[:-1]) > 100:
                    problems.append((f"spec.{field}", "must not be greater than 100%"))
        if spec.selector is not None:
            problems += spec.selector.check("spec.selector")
        return problems


# --------------------------------------------------------------------------- quotas


def _check_min_max(path: str, mins: Mapping[str, int], maxs: Mapping[str, int] | None) -> Problems:
    problems: Problems = []
    if maxs is None:
        return problems
    for rname, value in mins.items():
        if rname in maxs and value > maxs[rname]:
            problems.append(
                (
                    f"{path}.min.{rname}" if rname.isidentifier() else f"{path}.min[{rname}]",
                    f"min must be less than or equal to max ({rname})",
                )
            )
    return problems


class ElasticQuotaSpec(K8sModel):
    min: ResourceList = Field(default_factory=dict)
    max: ResourceList | None = None  # None = unlimited


class ElasticQuota(Resource):
    KIND: ClassVar[str] = "ElasticQuota"
    spec: ElasticQuotaSpec = Field(default_factory=ElasticQuotaSpec)

    def check(self) -> Problems:
        return super().check() + _check_min_max("spec", self.spec.min, self.spec.max)


class QuotaTreeNode(K8sModel):
    name: str
    min: ResourceList = Field(default_factory=dict)
    max: ResourceList | None = None
    children: list[QuotaTreeNode] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)

    def walk(
        self, path: str = "spec.root", parent: QuotaTreeNode | None = None
    ) -> Iterable[tuple[str, QuotaTreeNode, QuotaTreeNode | None]]:
        yield path, self, parent
        for i, child in enumerate(self.children):
            yield from child.walk(f"{path}.children[{i}]", self)


QuotaTreeNode.model_rebuild()


class ElasticQuotaTreeSpec(K8sModel):
    root: QuotaTreeNode


class ElasticQuotaTree(Resource):
    KIND: ClassVar[str] = "ElasticQuotaTree"
    spec: ElasticQuotaTreeSpec

    def check(self) -> Problems:
        problems = super().check()
        names: set[str] = set()
        namespaces: dict[str, str] = {}
        for path, node, _ in self.spec.root.walk():
            if not node.name:
                problems.append((f"{path}.name", "must not be empty"))
            elif node.name in names:
                problems.append((f"{path}.name", f"duplicate quota name {node.name!r}"))
            names.add(node.name)
            problems += _check_min_max(path, node.min, node.max)
            if node.namespaces and node.children:
                problems.append(
                    (f"{path}.namespaces", "only leaf quotas (without children) may list namespaces")
                )
            for j, ns in enumerate(node.namespaces):
                _name(f"{path}.namespaces[{j}]", ns, problems, label=True)
                if ns in namespaces:
                    problems.append(
                        (
                            f"{path}.namespaces[{j}]",
                            f"namespace {ns!r} already belongs to quota "
                            f"{namespaces[ns]!r}; a namespace belongs to at most one leaf",
                        )
                    )
                namespaces.setdefault(ns, node.name)
            if node.children:
                sums: dict[str, int] = {}
                for child in node.children:
                    _add(sums, child.min)
                for rname, total in sorted(sums.items()):
                    if total > node.min.get(rname, 0):
                        problems.append(
                            (
                                f"{path}.children",
                                f"the children's min {rname} sums to more than the min of {node.name!r}",
                            )
                        )
                if node.max is not None:
                    for i, child in enumerate(node.children):
                        for rname, limit in node.max.items():
                            if child.max is not None and child.max.get(rname, 0) > limit:
                                problems.append(
                                    (
                                        f"{path}.children[{i}].max",
                                        f"max {rname} of {child.name!r} "
                                        f"exceeds the max of its parent {node.name!r}",
                                    )
                                )
        return problems


# --------------------------------------------------------------------------- SchedulerConfig


class Backoff(K8sModel):
    initial_seconds: Seconds | None = None
    max_seconds: Seconds | None = None


class SchedulerConfigSpec(K8sModel):
    """Every field is filled with its default after validation: the normalized spec is complete."""

    scoring_strategy: Literal["LeastAllocated", "MostAllocated"] | None = None
    resource_weights: dict[str, int] | None = None  # replaces the default {cpu: 1, memory: 1}
    plugin_weights: dict[str, int] | None = None  # merged over the default weights
    preemption_algorithm: Literal["Default", "ElasticQuota", "Auto", "None"] | None = None
    backoff: Backoff | None = None
    pod_max_in_unschedulable_pods_duration: Seconds | None = None
    feature_gates: dict[str, bool] | None = None  # merged over every gate on

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.scoring_strategy is None:
            self.scoring_strategy = "LeastAllocated"
        self.resource_weights = dict(sorted((self.resource_weights or DEFAULT_RESOURCE_WEIGHTS).items()))
        self.plugin_weights = dict(sorted({**DEFAULT_PLUGIN_WEIGHTS, **(self.plugin_weights or {})}.items()))
        if self.preemption_algorithm is None:
            self.preemption_algorithm = "Auto"
        backoff = self.backoff or Backoff()
        self.backoff = Backoff(
            initial_seconds=DEFAULT_BACKOFF_INITIAL_SECONDS
            if backoff.initial_seconds is None
            else backoff.initial_seconds,
            max_seconds=DEFAULT_BACKOFF_MAX_SECONDS if backoff.max_seconds is None else backoff.max_seconds,
        )
        if self.pod_max_in_unschedulable_pods_duration is None:
            self.pod_max_in_unschedulable_pods_duration = DEFAULT_UNSCHEDULABLE_FLUSH_SECONDS
        gates = {**DEFAULT_FEATURE_GATES, **(self.feature_gates or {})}
        self.feature_gates = {g: gates[g] for g in sorted(gates)}
        return self

    def check(self, path: str = "spec") -> Problems:
        problems: Problems = []
        for gate in self.feature_gates or {}:
            if gate not in DEFAULT_FEATURE_GATES:
                problems.append(
                    (
                        f"{path}.featureGates.{gate}",
                        f"unrecognized feature gate {gate!r} (known: {', '.join(FEATURE_GATES)})",
                    )
                )
        for field, weights in (
            ("resourceWeights", self.resource_weights),
            ("pluginWeights", self.plugin_weights),
        ):
            for key, weight in (weights or {}).items():
                if not 0 <= weight <= 100:
                    problems.append(
                        (
                            f"{path}.{field}[{key}]" if not key.isidentifier() else f"{path}.{field}.{key}",
                            "must be in the range 0-100",
                        )
                    )
        b = self.backoff
        if b is not None and b.initial_seconds is not None and b.max_seconds is not None:
            if b.initial_seconds < 0:
                problems.append((f"{path}.backoff.initialSeconds", "must be >= 0"))
            if b.max_seconds < b.initial_seconds:
                problems.append((f"{path}.backoff.maxSeconds", "must be >= backoff.initialSeconds"))
        flush = self.pod_max_in_unschedulable_pods_duration
        if flush is not None and flush < 0:
            problems.append((f"{path}.podMaxInUnschedulablePodsDuration", "must be >= 0"))
        return problems


class SchedulerConfig(Resource):
    KIND: ClassVar[str] = "SchedulerConfig"
    spec: SchedulerConfigSpec = Field(default_factory=SchedulerConfigSpec)

    @model_validator(mode="after")
    def _full_spec(self) -> Self:
        if self.spec.scoring_strategy is None:  # built by the default factory: not validated
            self.spec = SchedulerConfigSpec.model_validate({})
        return self

    def normalized(self) -> dict[str, Any]:
        data = super().normalized()
        data["spec"] = self.spec.normalized()
        return data

    def check(self) -> Problems:
        return super().check() + self.spec.check("spec")


# --------------------------------------------------------------------------- registry


MODELS: dict[str, type[Resource]] = {
    cls.KIND: cls
    for cls in (
        Node,
        Pod,
        PriorityClass,
        Workload,
        PodGroup,
        CompositePodGroup,
        PodDisruptionBudget,
        ElasticQuota,
        ElasticQuotaTree,
        SchedulerConfig,
    )
}


def model_for(kind: str) -> type[Resource]:
    """The model class of a canonical kind name (``"PodGroup"``)."""
    get_kind(kind)  # raises UnknownKindError for unknown kinds
    return MODELS[kind]


def from_normalized(data: Mapping[str, Any]) -> Resource:
    """Rebuild any stored normalized object (dispatching on its ``kind``)."""
    return model_for(str(data["kind"])).from_normalized(data)


def validate_raw(kind: str, raw: Mapping[str, Any]) -> tuple[Resource | None, Problems]:
    """Validate user input for ``kind``: ``(object, [])`` or ``(None, [(field path, message), ...])``."""
    cls = model_for(kind)
    try:
        obj = cls.from_raw(raw)
    except ValidationError as exc:
        return None, _merge_union_errors(exc.errors())
    problems = obj.check()
    if problems:
        return None, problems
    return obj, []


_UNION_TAGS = {"int": "an integer", "str": "a string", "float": "a number", "bool": "a boolean"}


def validate_scheduler_config_spec(raw: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Problems]:
    """Validate a bare SchedulerConfig ``spec`` (e.g. a Scenario's ``spec.config``).

    Returns the complete normalized spec (defaults filled) or ``(None, problems)`` with paths
    relative to the spec (``backoff.maxSeconds``).
    """
    try:
        spec = SchedulerConfigSpec.model_validate(raw)
    except ValidationError as exc:
        return None, _merge_union_errors(exc.errors())
    problems = [(path.removeprefix("spec."), msg) for path, msg in spec.check("spec")]
    return (None, problems) if problems else (spec.normalized(), [])


def _merge_union_errors(errors: Iterable[Mapping[str, Any]]) -> Problems:
    """One message per field for ``int | str`` style unions (pydantic reports one per member)."""
    problems: Problems = []
    merged: dict[str, int] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if loc and isinstance(loc[-1], str) and loc[-1] in _UNION_TAGS and err["type"].endswith("_type"):
            path = format_path(loc[:-1])
            if path in merged:
                i = merged[path]
                problems[i] = (path, problems[i][1].replace(", got", f" or {_UNION_TAGS[loc[-1]]}, got", 1))
            else:
                merged[path] = len(problems)
                problems.append((path, f"expected {_UNION_TAGS[loc[-1]]}, got {_describe(err.get('input'))}"))
            continue
        problems.append((format_path(loc), _message(err)))
    return problems


def _message(err: Mapping[str, Any]) -> str:
    etype = err["type"]
    given = err.get("input")
    if etype == "missing":
        return "required value"
    if etype in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {_describe(given)}"
    if etype in ("string_type", "string_sub_type"):
        return f"expected a string, got {_describe(given)}"
    if etype in ("bool_type", "bool_parsing"):
        return f"expected a boolean, got {_describe(given)}"
    if etype in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected an object, got {_describe(given)}"
    if etype in ("list_type", "tuple_type"):
        return f"expected a list, got {_describe(given)}"
    if etype in ("float_type", "float_parsing"):
        return f"expected a number, got {_describe(given)}"
    if etype == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"unsupported value {given!r}: supported values: {expected}"
    if etype == "value_error":
        msg = str(err["msg"])
        return msg.removeprefix("Value error, ")
    if etype == "union_tag_invalid" or etype.startswith("union"):
        return str(err["msg"])
    return str(err["msg"])


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float | Decimal):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
