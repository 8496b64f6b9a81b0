"""Typed events: a registry of pydantic payload models, schema versions and upcasters.

Every stored event has a stable, hand-chosen ``type`` (past tense) and a ``schema_version``.
Only the *current* version of each payload has a model; older versions are turned into it at
read time by pure dict -> dict upcasters keyed by (type, from_version). Stored events are
never rewritten. A change of meaning gets a new event type, not a new version.

A version that adds fields the writer derives (so that an upcaster cannot always know them) also
registers a downcaster (type, to_version): the current payload as that older version's writer
would have stored it. ``replay --verify`` compares a recorded event of an older version with the
replayed decision downcast to it, so old logs still verify.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer
from pydantic_core import PydanticSerializationError

from ledger.errors import EventValidationError, UnknownEventType

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Registered:
    __slots__ = ("model", "version")

    def __init__(self, model: type[Payload], version: int) -> None:
        self.model = model
        self.version = version


REGISTRY: dict[str, _Registered] = {}
UPCASTERS: dict[tuple[str, int], Upcaster] = {}
DOWNCASTERS: dict[tuple[str, int], Upcaster] = {}  # (type, to_version): version+1 -> version


def register(type_name: str, model: type[Payload], version: int = 1) -> None:
    REGISTRY[type_name] = _Registered(model, version)


def upcaster(type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    def deco(fn: Upcaster) -> Upcaster:
        UPCASTERS[(type_name, from_version)] = fn
        return fn

    return deco


def downcaster(type_name: str, to_version: int) -> Callable[[Upcaster], Upcaster]:
    def deco(fn: Upcaster) -> Upcaster:
        DOWNCASTERS[(type_name, to_version)] = fn
        return fn

    return deco


def downcast(type_name: str, schema_version: int, data: dict[str, Any]) -> dict[str, Any] | None:
    """A current payload as a writer of ``schema_version`` would have stored it (pure; the input
    is not mutated); None when a version on the way has no downcaster."""
    reg = REGISTRY.get(type_name)
    if reg is None:
        return None
    version = reg.version
    while version > schema_version:
        fn = DOWNCASTERS.get((type_name, version - 1))
        if fn is None:
            return None
        data = fn(dict(data))
        version -= 1
    return data


def current_version(type_name: str) -> int:
    reg = REGISTRY.get(type_name)
    if reg is None:
        raise UnknownEventType(f"unknown event type {type_name!r}")
    return reg.version


def _describe(exc: ValidationError, type_name: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(payload)"
        parts.append(f"{loc}: {err['msg']}")
    return f"invalid {type_name} payload: " + "; ".join(parts)


def validate_payload(type_name: str, data: Any) -> dict[str, Any]:
    """Validate ``data`` against the current model of ``type_name``; returns the plain dict."""
    reg = REGISTRY.get(type_name)
    if reg is None:
        raise UnknownEventType(f"unknown event type {type_name!r}")
    if reg.model is ObjectPayload and type(data) is dict and len(data) == 1:
        # Hot path for input events: the whole schema is "one key, a JSON object"; the
        # canonical JSON encoder that follows rejects anything that is not JSON.
        obj = data.get("object")
        if type(obj) is dict:
            return data
    try:
        model = reg.model.model_validate(data)
    except ValidationError as exc:
        raise EventValidationError(_describe(exc, type_name)) from None
    try:
        out: dict[str, Any] = model.model_dump(mode="json")
    except PydanticSerializationError as exc:
        raise EventValidationError(f"invalid {type_name} payload: not JSON-serialisable: {exc}") from None
    return out


def upcast(type_name: str, schema_version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Bring a stored payload up to the current schema version (pure; the input is not mutated)."""
    reg = REGISTRY.get(type_name)
    if reg is None:
        return data
    version = schema_version
    while version < reg.version:
        fn = UPCASTERS.get((type_name, version))
        if fn is None:
            raise EventValidationError(f"no upcaster for {type_name} v{version}")
        data = fn(dict(data))
        version += 1
    return data


def load(type_name: str, schema_version: int, data: dict[str, Any]) -> Payload:
    """Upcast then validate a stored payload into its current model."""
    reg = REGISTRY.get(type_name)
    if reg is None:
        raise UnknownEventType(f"unknown event type {type_name!r}")
    return reg.model.model_validate(upcast(type_name, schema_version, data))


# ---------------------------------------------------------------------------------------------
# Input events: one family per resource kind. The object is the normalized manifest
# (upstream field names, quantities as exact integers), as produced by ledger.resources.


class ObjectPayload(Payload):
    model_config = ConfigDict(extra="forbid", frozen=True)
    object: dict[str, Any]


class ObjectDeleted(Payload):
    kind: str
    namespace: str = ""
    name: str


INPUT_KINDS = {
    "Node": "Node",
    "Pod": "Pod",
    "PriorityClass": "PriorityClass",
    "Workload": "Workload",
    "PodGroup": "PodGroup",
    "CompositePodGroup": "CompositePodGroup",
    "PodDisruptionBudget": "Pdb",
    "ElasticQuota": "Quota",
    "ElasticQuotaTree": "QuotaTree",
    "SchedulerConfig": "SchedulerConfig",
    "Job": "Job",
    "JobSet": "JobSet",
}

for _kind, _prefix in INPUT_KINDS.items():
    register(f"{_prefix}Created", ObjectPayload)
    register(f"{_prefix}Updated", ObjectPayload)
    register(f"{_prefix}Deleted", ObjectDeleted)


# input event type -> (kind, action): "PdbCreated" -> ("PodDisruptionBudget", "Created")
INPUT_ROUTES: dict[str, tuple[str, str]] = {
    f"{prefix}{action}": (kind, action)
    for kind, prefix in INPUT_KINDS.items()
    for action in ("Created", "Updated", "Deleted")
}


def input_event_type(kind: str, action: str) -> str:
    """``("PodDisruptionBudget", "Created")`` -> ``"PdbCreated"``."""
    return f"{INPUT_KINDS[kind]}{action}"


class RejectedObject(Payload):
    kind: str
    namespace: str | None = None
    name: str
    reasons: list[dict[str, str]] = Field(default_factory=list)
    message: str


class AdmissionRejected(Payload):
    """A refused request: who asked (actor), what (objects) and why (rejected)."""

    actor: str = "cli"
    source: str = ""
    objects: list[dict[str, Any]] = Field(default_factory=list)
    rejected: list[RejectedObject] = Field(min_length=1)


register("AdmissionRejected", AdmissionRejected)


class Note(Payload):
    """A free-form annotation appended by tools and demos (e.g. ``podledger demo``)."""

    text: str
    attributes: dict[str, Any] = Field(default_factory=dict)


register("NoteRecorded", Note)


# ---------------------------------------------------------------------------------------------
# Decision events, written by the scheduler worker (see scheduler/decisions.py).


class SchedulingCycleStarted(Payload):
    cycle: int
    entity: str
    snapshot_position: int


class SchedulingCycleCompleted(Payload):
    cycle: int
    entity: str
    result: str
    durations_ms: dict[str, float] = Field(default_factory=dict)


class PodBound(Payload):
    pod: str
    node: str
    group: str | None = None
    requests: dict[str, int] | None = None  # the bound pod's effective requests (for reports)
    gpus: list[int] | None = None  # devices of a GPU-share pod (scheduler.gpushare); absent if None

    @model_serializer(mode="wrap")
    def _omit_no_gpus(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("gpus") is None:
            data.pop("gpus", None)  # payloads of pods without GPU devices stay as they were
        return data


@upcaster("PodBound", 1)
def _pod_bound_v1(data: dict[str, Any]) -> dict[str, Any]:
    # v1 (before PodGroups) had no group; a v1 bind was always a plain pod.
    data.setdefault("group", None)
    return data


class PodNominated(Payload):
    pod: str
    node: str | None


class PodUnschedulable(Payload):
    pod: str
    reason: str
    message: str
    codes: list[str] = Field(default_factory=list)  # reason codes (absent before issue 21)


class PodGated(Payload):
    """v2: the scheduler words the pod's PodScheduled=False condition (``reason``,
    ``condition_message``; KEP-5501) and the projection copies them. v1 payloads had neither:
    the projection worded the condition itself."""

    pod: str
    plugin: str
    message: str
    report: bool = True  # False: PodScheduled not updated (gate SchedulerPreEnqueuePodStatus off)
    reason: str | None = None  # set whenever reported (None: a v1 payload the upcaster cannot word)
    condition_message: str | None = None

    @model_serializer(mode="wrap")
    def _omit_reported(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("report") is True:
            data.pop("report", None)  # a payload field only when False: older payloads stay as they were
        return _without_none(data, ("reason", "condition_message"))


# The words of a v1 PodGated's condition, as v1's projection chose them (KEP-5501); v2 payloads
# carry their own. The reason of a SchedulingGates rejection depended on whether the pod had gates
# of its own, which the payload does not say: the upcaster leaves it unset (the projection reads
# the pod's spec for it, as v1's projection did).
_V1_NOT_READY = "NotReadyForScheduling"
_V1_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


@upcaster("PodGated", 1)
def _pod_gated_v1(data: dict[str, Any]) -> dict[str, Any]:
    if not data.get("report", True):
        return data
    if data.get("plugin") == "SchedulingGates":
        data["condition_message"] = _V1_GATED_MESSAGE
    else:
        data["reason"] = _V1_NOT_READY
        data["condition_message"] = data.get("message", "")
    return data


@downcaster("PodGated", 1)
def _pod_gated_to_v1(data: dict[str, Any]) -> dict[str, Any]:
    data.pop("reason", None)
    data.pop("condition_message", None)
    return data


class GroupSatisfiedChanged(Payload):
    group: str
    status: str
    reason: str
    message: str
    scheduled: int
    min_count: int


class GroupConditionChanged(Payload):
    group: str
    type: str
    status: str
    reason: str
    message: str


class GroupScheduled(Payload):
    group: str
    pods: list[str]
    placement: str | None = None


class GroupUnschedulable(Payload):
    group: str
    reason: str
    message: str
    diagnosis: dict[str, Any] = Field(default_factory=dict)
    codes: list[str] = Field(default_factory=list)  # reason codes (absent before issue 21)
    why: dict[str, Any] = Field(default_factory=dict)  # structured diagnosis (absent before issue 21)
    # what the scheduler saw (issue 31): per-node exclusions, compressed (absent before it)
    exclusions: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""  # the diagnosis in one line, podledger's Event on the PodGroup (issue 31)


class GroupRetried(Payload):
    """A group attempt whose diagnosis equals the one stored at ``diagnosis_position``.

    With ``attempts`` (issue 14) it is the whole cycle: nothing else changed (the members'
    verdicts neither), so no PodGroupRequeued, PodUnschedulable or SchedulingCycleCompleted
    follows; ``attempts`` is the group's UnschedulableCount and ``backoff`` the seconds until
    its next try. Without ``attempts`` (older logs, or a cycle that changed something else),
    ``fingerprint`` is set and the cycle's other events follow as usual."""

    group: str
    diagnosis_position: int
    fingerprint: str | None = None
    attempts: int | None = None
    backoff: float | None = None

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: Any) -> Any:
        return _without_none(handler(self), ("fingerprint", "attempts", "backoff"))


class PodRetried(Payload):
    """A plain pod's unschedulable attempt that changed nothing (issue 14): the same verdict as
    its PodUnschedulable at ``diagnosis_position``, requeued to the unschedulable queue. It is
    the whole cycle (no PodUnschedulable, PodRequeued or SchedulingCycleCompleted follows)."""

    pod: str
    diagnosis_position: int
    attempts: int
    backoff: float | None = None

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: Any) -> Any:
        return _without_none(handler(self), ("backoff",))


def _without_none(data: Any, keys: tuple[str, ...]) -> Any:
    """The payload without the optional ``keys`` that are None (small events stay small)."""
    if isinstance(data, dict):
        for k in keys:
            if data.get(k) is None:
                data.pop(k, None)
    return data


class PodPreempted(Payload):
    victim: str
    preemptor: str
    preemptor_kind: str
    node: str
    rule: str
    unit: str
    disruption_mode: str
    victim_priority: int
    preemptor_priority: int
    pdb_violation: bool = False
    message: str = ""
    condition_message: str = ""
    requests: dict[str, int] | None = None
    quota: dict[str, Any] | None = None  # preemptor's elastic quota then: name, used, min, max, request


class EntityRequeued(Payload):
    entity: str
    queue: str
    attempts: int
    backoff_until: float | None = None


class SchedulerStarted(Payload):
    snapshot_position: int
    actor: str = "scheduler"
    config_hash: str = ""


register("SchedulerStarted", SchedulerStarted)
register("SchedulingCycleStarted", SchedulingCycleStarted)
register("SchedulingCycleCompleted", SchedulingCycleCompleted)
register("PodBound", PodBound, version=2)
register("PodNominated", PodNominated)
register("PodUnschedulable", PodUnschedulable)
register("PodGated", PodGated, version=2)
register("PodGroupSatisfiedChanged", GroupSatisfiedChanged)
register("PodGroupConditionChanged", GroupConditionChanged)
register("CompositePodGroupConditionChanged", GroupConditionChanged)
register("PodGroupScheduled", GroupScheduled)
register("PodGroupUnschedulable", GroupUnschedulable)
register("PodGroupRetried", GroupRetried)
register("PodRetried", PodRetried)
register("PodPreempted", PodPreempted)
register("PodGroupRequeued", EntityRequeued)
register("PodRequeued", EntityRequeued)


# ---------------------------------------------------------------------------------------------
# Observations of a live cluster (``podledger attach``, api/attach/).


class PodBindingObserved(Payload):
    """A binding a live cluster's own scheduler made, recorded by ``attach --mode shadow`` beside
    podledger's own decision for the same pod. It is not folded into the state: in shadow mode
    the ledger's state is podledger's model of the cluster, and this is what the cluster did."""

    pod: str
    node: str
    group: str | None = None
    scheduler: str
    cluster: str


register("PodBindingObserved", PodBindingObserved)


class RemoteObjectInvalid(Payload):
    """Something a live cluster sent that ``attach`` could not record (an object over the
    ledger's 1 MiB event limit, one podledger's validation refuses, a watch line that is not a
    watch event or is over the line limit): what it was and why, so the mirror's gap is in the
    log; ``attach`` skips it and goes on. ``name`` is empty for a line with no object."""

    cluster: str
    kind: str
    namespace: str | None = None
    name: str = ""
    uid: str = ""
    resource_version: str = ""
    reason: str
    size: int | None = None


register("RemoteObjectInvalid", RemoteObjectInvalid)


class ClusterEventObserved(Payload):
    """A scheduling Event of a live cluster (``Scheduled``, ``FailedScheduling``, ``Preempted``,
    from events.k8s.io/v1 or core/v1), recorded by ``attach`` once per (Event, count): the
    cluster's own words and times (``first_time``/``last_time``, RFC 3339, as the cluster gave
    them; the event's effective time is ``last_time``). Not folded into the state."""

    cluster: str
    kind: str  # of the object the Event is about (regarding / involvedObject)
    object: str  # namespace/name (name for a cluster-scoped object)
    uid: str = ""
    event: str  # the Event's namespace/name
    type: str = ""  # Normal | Warning
    reason: str
    message: str = ""
    count: int = 1
    first_time: str = ""
    last_time: str = ""
    reporting_controller: str = ""
    reporting_instance: str = ""


register("ClusterEventObserved", ClusterEventObserved)


class PodBindingSent(Payload):
    """``attach --mode schedule`` sent podledger's decision (the PodBound at ``decision_position``)
    to the cluster through the pods/binding subresource: the outcome of that one call."""

    pod: str
    node: str
    cluster: str
    decision_position: int
    attempt: int
    outcome: str  # "bound" | "gone" (404: the pod was deleted meanwhile) | "failed"
    code: int | None = None
    message: str = ""


register("PodBindingSent", PodBindingSent)


class PodEvictionSent(Payload):
    """``attach --mode schedule`` asked the cluster to evict a victim of podledger's preemption
    (the PodPreempted at ``decision_position``) through the Eviction API: the outcome of that one
    call (``evicted``; ``gone``: the pod no longer existed; ``refused``: 429, a disruption budget
    would be violated; ``failed``: any other error)."""

    pod: str
    preemptor: str
    cluster: str
    decision_position: int
    attempt: int
    outcome: str
    code: int | None = None
    message: str = ""


register("PodEvictionSent", PodEvictionSent)


class GroupConditionSent(Payload):
    """``attach --mode schedule`` wrote podledger's group condition (the PodGroupConditionChanged
    or CompositePodGroupConditionChanged at ``decision_position``) to the cluster's status
    subresource: the outcome of that one attempt (``patched``; ``unchanged``: the cluster already
    had it; ``kept``: the cluster's condition is True and never regresses; ``gone``: 404;
    ``failed``: any other error)."""

    group: str
    type: str
    status: str
    reason: str
    cluster: str
    decision_position: int
    attempt: int
    outcome: str
    code: int | None = None
    message: str = ""


register("PodGroupConditionSent", GroupConditionSent)
register("CompositePodGroupConditionSent", GroupConditionSent)
