"""Pure data model of the scheduling core.

Frozen dataclasses only: no pydantic, no SQL, no clock. Quantities are exact integers:
``cpu`` in milli-CPU, ``memory`` and ``ephemeral-storage`` in bytes, ``pods`` and extended
resources (``nvidia.com/gpu``) as counts. Time is a float of seconds on the caller's clock
(virtual in simulation). ``seq`` is the log position at which an object was first observed;
it breaks every tie of equal priority and timestamp.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

SINGLE = "Single"
ALL = "All"
PREEMPT_LOWER = "PreemptLowerPriority"
NEVER = "Never"
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""  # empty key with operator Exists tolerates everything
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty matches every effect


def parse_int64(v: str) -> int | None:
    """strconv.ParseInt(v, 10, 64) semantics (optional sign, decimal digits only)."""
    s = v[1:] if v[:1] in ("+", "-") else v
    if not s or not s.isascii() or not s.isdigit():
        return None
    n = int(v)
    if n < -(2**63) or n >= 2**63:
        return None
    return n


# The operators of a metav1.LabelSelector requirement (pods, namespaces, PDBs): no Gt/Lt.
LABEL_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Requirement:
    """A node selector / label selector requirement."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Do ``labels`` satisfy the requirement? The one implementation of the operators (node
        affinity, pod and namespace label selectors, PDB selectors): NotIn and DoesNotExist match
        labels without the key; Gt/Lt parse both sides as int64 (``parse_int64``) and never
        match when either does not parse or ``values`` is not one value; an unknown operator
        matches nothing."""
        v = labels.get(self.key)
        op = self.operator
        if op == "In":
            return v is not None and v in self.values
        if op == "NotIn":
            return v is None or v not in self.values
        if op == "Exists":
            return v is not None
        if op == "DoesNotExist":
            return v is None
        if op == "Gt" or op == "Lt":
            if v is None or len(self.values) != 1:
                return False
            a, b = parse_int64(v), parse_int64(self.values[0])
            if a is None or b is None:
                return False
            return a > b if op == "Gt" else a < b
        return False


def label_selector_matches(
    match_labels: Iterable[tuple[str, str]],
    match_expressions: Iterable[Requirement],
    labels: Mapping[str, str],
) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): every ``match_labels`` pair and
    every requirement holds (an empty selector matches everything). A requirement with an
    operator a label selector does not have (Gt, Lt: refused by validation; upstream's
    conversion fails) matches nothing."""
    for k, v in match_labels:
        if labels.get(k) != v:
            return False
    for r in match_expressions:
        if r.operator not in LABEL_SELECTOR_OPERATORS or not r.matches(labels):
            return False
    return True


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements of one term are ANDed; terms of a list are ORed."""

    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """A term without requirements matches nothing."""
        if not self.match_expressions:
            return False
        return all(r.matches(labels) for r in self.match_expressions)


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector: ``match_labels`` and ``match_expressions`` ANDed (In, NotIn,
    Exists, DoesNotExist); an empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        return label_selector_matches(self.match_labels, self.match_expressions, labels)


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One pod (anti-)affinity term. ``selector`` None matches no pod; ``namespaces`` empty and
    ``namespace_selector`` None means the namespace of the pod that carries the term;
    ``namespace_selector`` empty means every namespace. ``matchLabelKeys``/``mismatchLabelKeys``
    are merged into ``selector`` when the pod is translated (as the API server does)."""

    topology_key: str
    selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """One ``topologySpreadConstraints`` entry (``matchLabelKeys`` merged into ``selector``)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str = "DoNotSchedule"  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"  # Honor | Ignore
    node_taints_policy: str = "Ignore"  # Honor | Ignore


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    host_ip: str = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    seq: int = 0


@dataclass(frozen=True, slots=True)
class GpuShare:
    """A device-level GPU request (Aliyun GPU-share convention, ``scheduler.gpushare``):
    ``count`` devices with ``milli`` (1..1000) each; ``count == 1 and milli < 1000`` shares one
    GPU. ``models`` are the allowed GPU models (empty: any); ``index`` the devices held once
    bound (empty while pending)."""

    milli: int
    count: int = 1
    models: tuple[str, ...] = ()
    index: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Pod:
    namespace: str
    name: str
    requests: Mapping[str, int] = field(default_factory=dict)  # effective requests (init/overhead folded in)
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[NodeSelectorTerm, ...] = ()
    preferred_terms: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    priority: int = 0
    preemption_policy: str = PREEMPT_LOWER
    scheduler_name: str = DEFAULT_SCHEDULER
    scheduling_gates: tuple[str, ...] = ()
    node_name: str | None = None  # set = bound (or created already bound)
    nominated_node: str | None = None
    pod_group: str | None = None  # spec.schedulingGroup.podGroupName (same namespace)
    has_controller: bool = False  # a controller ownerReference: recreated after preemption
    seq: int = 0
    created_at: float = 0.0
    start_time: float | None = None  # when it was bound; victims' tie-break
    # inter-pod fields (NodeName, NodePorts, InterPodAffinity, PodTopologySpread)
    spec_node_name: str | None = None  # spec.nodeName as requested (NodeName filter)
    host_ports: tuple[HostPort, ...] = ()
    affinity_required: tuple[PodAffinityTerm, ...] = ()
    affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_affinity_required: tuple[PodAffinityTerm, ...] = ()
    anti_affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    gpu: GpuShare | None = None  # device-level GPU request (alibabacloud.com/gpu-milli annotations)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_pod_affinity(self) -> bool:
        return bool(
            self.affinity_required
            or self.affinity_preferred
            or self.anti_affinity_required
            or self.anti_affinity_preferred
        )

    @property
    def inter_pod(self) -> bool:
        """Does a pod-aware plugin (NodePorts, InterPodAffinity, PodTopologySpread) read this pod?"""
        return bool(self.host_ports or self.spread_constraints) or self.has_pod_affinity


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_count: int | None = None  # None = basic policy (M = 1)
    topology_key: str | None = None
    disruption_mode: str = SINGLE
    priority: int = 0
    preemption_policy: str = PREEMPT_LOWER
    parent: str | None = None  # parentCompositePodGroupName (same namespace)
    workload: str | None = None
    template: str | None = None
    uid: str = ""
    seq: int = 0
    created_at: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_gang(self) -> bool:
        return self.min_count is not None

    @property
    def minimum(self) -> int:
        return self.min_count if self.min_count is not None else 1


@dataclass(frozen=True, slots=True)
class CompositePodGroup:
    namespace: str
    name: str
    min_group_count: int | None = None  # None = basic policy (M = 1)
    topology_key: str | None = None
    disruption_mode: str = SINGLE
    priority: int = 0
    preemption_policy: str = PREEMPT_LOWER
    parent: str | None = None
    workload: str | None = None
    template: str | None = None
    uid: str = ""
    seq: int = 0
    created_at: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_gang(self) -> bool:
        return self.min_group_count is not None

    @property
    def minimum(self) -> int:
        return self.min_group_count if self.min_group_count is not None else 1


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Requirement, ...] = ()
    min_available: int | str | None = None  # int or "50%"
    max_unavailable: int | str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, pod: Pod) -> bool:
        """Does the budget cover ``pod`` (same namespace, selector matches its labels)?"""
        return pod.namespace == self.namespace and label_selector_matches(
            self.match_labels.items(), self.match_expressions, pod.labels
        )


@dataclass(frozen=True, slots=True)
class QuotaNode:
    """One elastic quota: a flat ElasticQuota (one namespace) or a node of an ElasticQuotaTree."""

    name: str
    min: Mapping[str, int] = field(default_factory=dict)
    max: Mapping[str, int] | None = None  # None = unlimited
    namespaces: tuple[str, ...] = ()
    parent: str | None = None


# Defaults of the gates that are not in ``SchedulerConfig.feature_gates`` unless configured (the
# others default to on). GenericWorkload also stands for GangScheduling and
# WorkloadAwarePreemption, merged into it in Kubernetes 1.37 (KEP-4671).
GATE_DEFAULTS: Mapping[str, bool] = {
    "PodGroupSatisfiedCondition": False,
    "SchedulerPreEnqueuePodStatus": True,
}


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    scoring_strategy: str = "LeastAllocated"  # LeastAllocated | MostAllocated
    resource_weights: Mapping[str, int] = field(default_factory=lambda: {CPU: 1, MEMORY: 1})
    plugin_weights: Mapping[str, int] = field(
        default_factory=lambda: {
            "NodeResourcesFit": 1,
            "TaintToleration": 3,
            "NodeAffinity": 2,
            "PodGroupPodsCount": 1,
        }
    )
    preemption_algorithm: str = "Auto"  # Default | ElasticQuota | Auto | None
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 10.0
    unschedulable_flush_seconds: float = 300.0
    # percentageOfNodesToScore: 100 = score every feasible node (podledger's default); 0 = the
    # upstream adaptive formula; 1..99 = that percentage (at least 100 nodes)
    percentage_of_nodes_to_score: int = 100
    # percentageOfPlacementsToScore (KEP-5732): how many feasible placements a topology-aware
    # group evaluates before it chooses; 0 = upstream's adaptive default, 100 = every placement
    percentage_of_placements_to_score: int = 0
    feature_gates: Mapping[str, bool] = field(
        default_factory=lambda: {
            "GenericWorkload": True,
            "TopologyAwareWorkloadScheduling": True,
            "CompositePodGroup": True,
            "PodGroupPreemptionPolicy": True,
            "WorkloadAwarePreemption": True,
        }
    )

    # the profile name served (None: default-scheduler, and pod group members of other schedulers
    # are attempted and refused as before); set: pods of other schedulers are never queued
    scheduler_name: str | None = None
    controller_emulation: bool = True  # re-create preempted pods that have a controller
    also_serves: tuple[str, ...] = ()  # more profile names served (SchedulerConfig additionalSchedulerNames)

    @property
    def profile(self) -> str:
        return self.scheduler_name or DEFAULT_SCHEDULER

    def serves(self, scheduler_name: str) -> bool:
        """Whether pods naming ``scheduler_name`` are this scheduler's."""
        return scheduler_name == self.profile or scheduler_name in self.also_serves

    def gate(self, name: str) -> bool:
        return bool(self.feature_gates.get(name, GATE_DEFAULTS.get(name, True)))


class _Keep(enum.Enum):
    """The default of ``copy_pod``'s parameters: keep the pod's value."""

    KEEP = enum.auto()


_KEEP: Final = _Keep.KEEP


class _PodDraft:
    """A mutable twin of ``Pod``: the same slots in the same order, hence the same object layout,
    without the frozen ``__setattr__``. ``copy_pod`` fills one with plain attribute stores and
    then makes it a Pod by assigning ``__class__`` (Python allows it between classes of one
    layout); the result is an ordinary Pod."""

    __slots__ = tuple(Pod.__slots__)


_new_draft: Callable[[type[_PodDraft]], Any] = object.__new__


def copy_pod(
    pod: Pod,
    /,
    *,
    namespace: str | _Keep = _KEEP,
    name: str | _Keep = _KEEP,
    requests: Mapping[str, int] | _Keep = _KEEP,
    uid: str | _Keep = _KEEP,
    labels: Mapping[str, str] | _Keep = _KEEP,
    node_selector: Mapping[str, str] | _Keep = _KEEP,
    required_terms: tuple[NodeSelectorTerm, ...] | _Keep = _KEEP,
    preferred_terms: tuple[PreferredTerm, ...] | _Keep = _KEEP,
    tolerations: tuple[Toleration, ...] | _Keep = _KEEP,
    priority: int | _Keep = _KEEP,
    preemption_policy: str | _Keep = _KEEP,
    scheduler_name: str | _Keep = _KEEP,
    scheduling_gates: tuple[str, ...] | _Keep = _KEEP,
    node_name: str | None | _Keep = _KEEP,
    nominated_node: str | None | _Keep = _KEEP,
    pod_group: str | None | _Keep = _KEEP,
    has_controller: bool | _Keep = _KEEP,
    seq: int | _Keep = _KEEP,
    created_at: float | _Keep = _KEEP,
    start_time: float | None | _Keep = _KEEP,
    spec_node_name: str | None | _Keep = _KEEP,
    host_ports: tuple[HostPort, ...] | _Keep = _KEEP,
    affinity_required: tuple[PodAffinityTerm, ...] | _Keep = _KEEP,
    affinity_preferred: tuple[WeightedPodAffinityTerm, ...] | _Keep = _KEEP,
    anti_affinity_required: tuple[PodAffinityTerm, ...] | _Keep = _KEEP,
    anti_affinity_preferred: tuple[WeightedPodAffinityTerm, ...] | _Keep = _KEEP,
    spread_constraints: tuple[TopologySpreadConstraint, ...] | _Keep = _KEEP,
    gpu: GpuShare | None | _Keep = _KEEP,
) -> Pod:
    """``dataclasses.replace`` for the frozen, slotted Pod without re-running ``__init__``:
    ``copy_pod(pod, node_name="n")``; every field a keyword-only parameter, the pod's value
    unless given. One plain store per field into a ``_PodDraft``, no loop over the fields:
    about three times as fast as storing through the frozen Pod's slot setters (the fold and
    every bind copy a pod). A new field of Pod is a new parameter and a new line here
    (``tests/scheduler/test_fold_paths.py`` checks both)."""
    new = _new_draft(_PodDraft)
    new.namespace = pod.namespace if namespace is _KEEP else namespace
    new.name = pod.name if name is _KEEP else name
    new.requests = pod.requests if requests is _KEEP else requests
    new.uid = pod.uid if uid is _KEEP else uid
    new.labels = pod.labels if labels is _KEEP else labels
    new.node_selector = pod.node_selector if node_selector is _KEEP else node_selector
    new.required_terms = pod.required_terms if required_terms is _KEEP else required_terms
    new.preferred_terms = pod.preferred_terms if preferred_terms is _KEEP else preferred_terms
    new.tolerations = pod.tolerations if tolerations is _KEEP else tolerations
    new.priority = pod.priority if priority is _KEEP else priority
    new.preemption_policy = pod.preemption_policy if preemption_policy is _KEEP else preemption_policy
    new.scheduler_name = pod.scheduler_name if scheduler_name is _KEEP else scheduler_name
    new.scheduling_gates = pod.scheduling_gates if scheduling_gates is _KEEP else scheduling_gates
    new.node_name = pod.node_name if node_name is _KEEP else node_name
    new.nominated_node = pod.nominated_node if nominated_node is _KEEP else nominated_node
    new.pod_group = pod.pod_group if pod_group is _KEEP else pod_group
    new.has_controller = pod.has_controller if has_controller is _KEEP else has_controller
    new.seq = pod.seq if seq is _KEEP else seq
    new.created_at = pod.created_at if created_at is _KEEP else created_at
    new.start_time = pod.start_time if start_time is _KEEP else start_time
    new.spec_node_name = pod.spec_node_name if spec_node_name is _KEEP else spec_node_name
    new.host_ports = pod.host_ports if host_ports is _KEEP else host_ports
    new.affinity_required = pod.affinity_required if affinity_required is _KEEP else affinity_required
    new.affinity_preferred = pod.affinity_preferred if affinity_preferred is _KEEP else affinity_preferred
    new.anti_affinity_required = (
        pod.anti_affinity_required if anti_affinity_required is _KEEP else anti_affinity_required
    )
    new.anti_affinity_preferred = (
        pod.anti_affinity_preferred if anti_affinity_preferred is _KEEP else anti_affinity_preferred
    )
    new.spread_constraints = pod.spread_constraints if spread_constraints is _KEEP else spread_constraints
    new.gpu = pod.gpu if gpu is _KEEP else gpu
    new.__class__ = Pod
    copied: Pod = new
    return copied
