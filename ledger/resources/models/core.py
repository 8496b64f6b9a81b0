"""Core (``v1``) kinds: ``Node`` and ``Pod``, with node selectors, affinity and tolerations.

Also the pod request rule (``effective_requests``): what the scheduler must fit for a pod,
init containers, sidecars and overhead folded in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, model_validator

from ledger.resources.models.meta import K8sModel, LabelSelector, Resource, requirement_problems
from ledger.resources.models.values import (
    PREEMPT_LOWER_PRIORITY,
    PreemptionPolicy,
    Problems,
    ResourceList,
    add_into,
    check_int32,
    check_labels,
    check_name,
    key_path,
    label_value_problem,
    max_into,
    qualified_name_problem,
)

DEFAULT_SCHEDULER_NAME = "default-scheduler"

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


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


# --------------------------------------------------------------------------- node selectors


class NodeSelectorRequirement(K8sModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        problems = requirement_problems(path, self.key, self.operator, self.values)
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


class PodAffinityTerm(K8sModel):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        problems: Problems = []
        if not self.topology_key:
            problems.append((f"{path}.topologyKey", "can not be empty"))
        else:
            problem = qualified_name_problem(self.topology_key)
            if problem:
                problems.append((f"{path}.topologyKey", problem))
        problems += selector_problems(f"{path}.labelSelector", self.label_selector)
        problems += selector_problems(f"{path}.namespaceSelector", self.namespace_selector)
        for field, keys in (
            ("matchLabelKeys", self.match_label_keys),
            ("mismatchLabelKeys", self.mismatch_label_keys),
        ):
            for i, key in enumerate(keys):
                problem = qualified_name_problem(key)
                if problem:
                    problems.append((f"{path}.{field}[{i}]", problem))
        return problems


class WeightedPodAffinityTerm(K8sModel):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(K8sModel):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )

    def check(self, path: str) -> Problems:
        problems: Problems = []
        for i, t in enumerate(self.required_during_scheduling_ignored_during_execution):
            problems += t.check(f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]")
        for i, w in enumerate(self.preferred_during_scheduling_ignored_during_execution):
            wpath = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not 1 <= w.weight <= 100:
                problems.append((f"{wpath}.weight", "must be in the range 1-100"))
            problems += w.pod_affinity_term.check(f"{wpath}.podAffinityTerm")
        return problems


class Affinity(K8sModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(K8sModel):
    max_skew: int
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: list[str] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        """Upstream's validation messages for the fields podledger models."""
        problems: Problems = []
        if self.max_skew <= 0:
            problems.append((f"{path}.maxSkew", "must be greater than zero"))
        if not self.topology_key:
            problems.append((f"{path}.topologyKey", "can not be empty"))
        else:
            problem = qualified_name_problem(self.topology_key)
            if problem:
                problems.append((f"{path}.topologyKey", problem))
        if self.min_domains is not None:
            if self.min_domains <= 0:
                problems.append((f"{path}.minDomains", "must be greater than zero"))
            elif self.when_unsatisfiable != "DoNotSchedule":
                problems.append(
                    (f"{path}.minDomains", "can only use minDomains if whenUnsatisfiable=DoNotSchedule")
                )
        problems += selector_problems(f"{path}.labelSelector", self.label_selector)
        for i, key in enumerate(self.match_label_keys):
            problem = qualified_name_problem(key)
            if problem:
                problems.append((f"{path}.matchLabelKeys[{i}]", problem))
        return problems


def selector_problems(path: str, sel: LabelSelector | None) -> Problems:
    problems: Problems = []
    if sel is None:
        return problems
    check_labels(f"{path}.matchLabels", sel.match_labels, problems)
    for i, r in enumerate(sel.match_expressions):
        problems += requirement_problems(f"{path}.matchExpressions[{i}]", r.key, r.operator, r.values)
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


class ContainerPort(K8sModel):
    container_port: int
    host_port: int | None = None
    protocol: Literal["TCP", "UDP", "SCTP"] | None = None
    host_ip: str | None = None
    name: str | None = None


class Container(K8sModel):
    name: str
    image: str | None = None
    ports: list[ContainerPort] = Field(default_factory=list)
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
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)

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
        add_into(total, reqs)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for reqs, is_sidecar in init_containers:
        if is_sidecar:
            add_into(total, reqs)
            add_into(sidecars, reqs)
            max_into(init_peak, sidecars)
        else:
            during = dict(sidecars)
            add_into(during, reqs)
            max_into(init_peak, during)
    max_into(total, init_peak)
    if overhead:
        add_into(total, overhead)
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
                check_name(f"{path}.name", c.name, problems, label=True)
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
                                key_path(f"{path}.resources.requests", rname),
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
        check_labels("spec.nodeSelector", spec.node_selector, problems)
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
        if spec.affinity is not None:
            for field, aff in (
                ("podAffinity", spec.affinity.pod_affinity),
                ("podAntiAffinity", spec.affinity.pod_anti_affinity),
            ):
                if aff is not None:
                    problems += aff.check(f"spec.affinity.{field}")
        for i, tsc in enumerate(spec.topology_spread_constraints):
            problems += tsc.check(f"spec.topologySpreadConstraints[{i}]")
        for field, items in (("containers", spec.containers), ("initContainers", spec.init_containers)):
            for i, c in enumerate(items):
                for j, port in enumerate(c.ports):
                    ppath = f"spec.{field}[{i}].ports[{j}]"
                    if not 1 <= port.container_port <= 65535:
                        problems.append((f"{ppath}.containerPort", "must be between 1 and 65535, inclusive"))
                    if port.host_port is not None and not 0 <= port.host_port <= 65535:
                        problems.append((f"{ppath}.hostPort", "must be between 1 and 65535, inclusive"))
        check_int32("spec.priority", spec.priority, problems)
        check_name("spec.priorityClassName", spec.priority_class_name, problems)
        check_name("spec.nodeName", spec.node_name, problems)
        gates: set[str] = set()
        for i, gate in enumerate(spec.scheduling_gates):
            problem = qualified_name_problem(gate.name) if gate.name else "must not be empty"
            if problem:
                problems.append((f"spec.schedulingGates[{i}].name", problem))
            if gate.name in gates:
                problems.append((f"spec.schedulingGates[{i}].name", f"duplicate value {gate.name!r}"))
            gates.add(gate.name)
        if spec.scheduling_group is not None:
            check_name("spec.schedulingGroup.podGroupName", spec.scheduling_group.pod_group_name, problems)
        return problems
