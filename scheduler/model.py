"""Pure data model of the scheduling core.

Frozen dataclasses only: no pydantic, no SQL, no clock. Quantities are exact integers:
``cpu`` in milli-CPU, ``memory`` and ``ephemeral-storage`` in bytes, ``pods`` and extended
resources (``nvidia.com/gpu``) as counts. Time is a float of seconds on the caller's clock
(virtual in simulation). ``seq`` is the log position at which an object was first observed;
it breaks every tie of equal priority and timestamp.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

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


@dataclass(frozen=True, slots=True)
class Requirement:
    """A node selector / label selector requirement."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements of one term are ANDed; terms of a list are ORed."""

    match_expressions: tuple[Requirement, ...] = ()


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

    @property
    def profile(self) -> str:
        return self.scheduler_name or DEFAULT_SCHEDULER

    def gate(self, name: str) -> bool:
        return bool(self.feature_gates.get(name, GATE_DEFAULTS.get(name, True)))


_POD_SLOTS: tuple[str, ...] = tuple(Pod.__slots__)


class _PodDraft:
    """A mutable twin of ``Pod``: the same slots in the same order, hence the same object layout,
    without the frozen ``__setattr__``. ``copy_pod`` fills one with plain attribute stores and
    then makes it a Pod by assigning ``__class__`` (Python allows it between classes of one
    layout); the result is an ordinary Pod."""

    __slots__ = _POD_SLOTS


def _pod_copier() -> Callable[..., Pod]:
    """``copy_pod``, generated once (as ``dataclasses`` generates ``__init__``): every field a
    keyword-only parameter defaulting to a marker, one plain store per field into a
    ``_PodDraft`` (the pod's value unless given), no loop and no name lookups. About three times
    as fast as storing through the frozen Pod's slot setters (the fold and every bind copy a
    pod)."""
    env: dict[str, object] = {"_new": object.__new__, "_Draft": _PodDraft, "Pod": Pod, "_KEEP": object()}
    params = ", ".join(f"{name}=_KEEP" for name in _POD_SLOTS)
    lines = [f"def copy_pod(pod, /, *, {params}):", "    new = _new(_Draft)"]
    lines += [f"    new.{name} = pod.{name} if {name} is _KEEP else {name}" for name in _POD_SLOTS]
    lines += ["    new.__class__ = Pod", "    return new"]
    exec("\n".join(lines), env)  # noqa: S102 - source built above from the field names only
    copy = env["copy_pod"]
    assert callable(copy)
    copy.__module__ = __name__
    copy.__doc__ = """``dataclasses.replace`` for the frozen, slotted Pod without re-running ``__init__``:
    ``copy_pod(pod, node_name="n")`` (a name that is not a field raises TypeError)."""
    return copy


copy_pod = _pod_copier()
