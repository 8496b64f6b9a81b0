"""Decision objects: the only output of a scheduling cycle.

The bridge turns each decision into one event (type = the class name unless noted), so the
field names here become the event payloads. Everything is plain data (str/int/float/bool,
tuples, dicts of those) so that it serialises canonically and replays byte for byte.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Decision:
    pass


@dataclass(frozen=True, slots=True)
class PodBound(Decision):
    pod: str  # "ns/name"
    node: str
    group: str | None = None  # "ns/name" of its PodGroup
    gpus: tuple[int, ...] | None = None  # devices of a GPU-share pod (payload field only when set)


@dataclass(frozen=True, slots=True)
class PodNominated(Decision):
    pod: str
    node: str | None  # None clears the nomination


@dataclass(frozen=True, slots=True)
class PodUnschedulable(Decision):
    """Pod condition PodScheduled=False with reason Unschedulable or SchedulerError."""

    pod: str
    reason: str
    message: str
    codes: tuple[str, ...] = ()  # reason codes (scheduler.reason_codes), never empty when recorded


@dataclass(frozen=True, slots=True)
class PodGated(Decision):
    """PreEnqueue refused the entity: the pod waits and was never attempted.

    ``report``: the pod's PodScheduled condition shows the rejection (KEP-5501; gate
    SchedulerPreEnqueuePodStatus). A payload field only when False. ``reason`` and
    ``condition_message``: that condition's reason and message in Kubernetes' words
    (``scheduler.conditions.gated_condition``); payload fields only when reported.
    """

    pod: str
    plugin: str
    message: str
    report: bool = True
    reason: str = ""
    condition_message: str = ""


@dataclass(frozen=True, slots=True)
class GroupConditionChanged(Decision):
    """PodGroupInitiallyScheduled / CompositePodGroupInitiallyScheduled (never regresses from True).

    Event type: PodGroupConditionChanged or CompositePodGroupConditionChanged (by ``kind``).
    """

    kind: str  # PodGroup | CompositePodGroup
    group: str
    type: str
    status: str  # "True" | "False"
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class GroupSatisfiedChanged(Decision):
    """Event type: PodGroupSatisfiedChanged. The live condition PodGroupSatisfied of a PodGroup
    (KEP-6413, gate PodGroupSatisfiedCondition): True/MinCountSatisfied or False/BelowMinCount,
    message "N of M members scheduled"; emitted whenever it changes (see scheduler.satisfied)."""

    group: str
    status: str  # "True" | "False"
    reason: str  # MinCountSatisfied | BelowMinCount
    message: str
    scheduled: int  # scheduled (bound) members
    min_count: int  # the group's minCount (1 for a Basic group)


@dataclass(frozen=True, slots=True)
class GroupScheduled(Decision):
    """Event type: PodGroupScheduled. Root Success; ``pods`` are the newly bound members."""

    group: str
    pods: tuple[str, ...]
    placement: str | None = None


@dataclass(frozen=True, slots=True)
class GroupUnschedulable(Decision):
    """Event type: PodGroupUnschedulable with a compact diagnosis (<= 1 KB at 5,000 nodes)."""

    group: str
    reason: str  # Unschedulable | SchedulerError
    message: str
    diagnosis: dict[str, Any] = field(default_factory=dict)
    codes: tuple[str, ...] = ()  # reason codes (scheduler.reason_codes), never empty when recorded
    why: dict[str, Any] = field(default_factory=dict)  # structured diagnosis (scheduler.cycle.why)
    # what the scheduler saw: per-node exclusions, compressed (scheduler.cycle.exclusions)
    exclusions: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PodPreempted(Decision):
    victim: str
    preemptor: str  # "ns/name" of the preemptor pod, PodGroup or CompositePodGroup root
    preemptor_kind: str  # pod | podgroup | compositepodgroup
    node: str
    rule: str  # e.g. "WorkloadAwarePreemption", "DefaultPreemption", "ElasticQuota:borrowed"
    unit: str  # victim unit key: the pod, or the highest All ancestor ("PodGroup:ns/name")
    disruption_mode: str  # Single | All
    victim_priority: int
    preemptor_priority: int
    pdb_violation: bool = False
    message: str = ""  # upstream event text: "Preempted by podgroup <uid> on node cluster"
    condition_message: str = ""  # DisruptionTarget message
    # the preemptor's elastic quota at that moment: {name, used, min, max, request[, victim]}
    # (None when the preemptor is in no quota); see scheduler/preemption.py
    quota: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class EntityRequeued(Decision):
    """Event type: PodGroupRequeued (or PodRequeued for a plain pod)."""

    entity: str  # queue key: "ns/pod" or "pg/ns/name" / "cpg/ns/name"
    queue: str  # active | backoff | unschedulable
    attempts: int
    backoff_until: float | None = None


@dataclass(frozen=True, slots=True)
class CycleResult:
    cycle: int
    entity: str
    now: float
    result: str  # scheduled | unschedulable | waiting-on-preemption | error | gated | skipped
    decisions: tuple[Decision, ...]
    # placement evaluation counts of a group attempt ({"placements_generated", "placements_scored"},
    # empty when no placement was generated); the SchedulingCycleCompleted payload keeps its
    # (always empty) "durations_ms" field
    placement_counts: dict[str, int] = field(default_factory=dict)


# decision type -> (field names, a getter of every field's value in one call)
_FIELDS: dict[type, tuple[tuple[str, ...], Callable[[Any], Any]]] = {}
_SCALARS = frozenset({str, int, float, bool, type(None), tuple})  # immutable: taken as is


def as_dict(dec: Decision) -> dict[str, Any]:
    """``dataclasses.asdict`` for a decision (its fields are scalars, tuples of scalars and
    JSON-like dicts), without asdict's recursive walk over every scalar: dicts and lists are
    deep-copied, everything else is immutable and taken as is."""
    got = _FIELDS.get(type(dec))
    if got is None:
        names = tuple(f.name for f in fields(dec))
        if len(names) > 1:
            got = (names, operator.attrgetter(*names))
        else:  # attrgetter of one name returns the value, not a tuple
            got = (names, lambda x, names=names: tuple(getattr(x, n) for n in names))
        _FIELDS[type(dec)] = got
    names, values = got
    vals = values(dec)
    data = dict(zip(names, vals, strict=True))
    if _SCALARS.issuperset(map(type, vals)):
        return data
    for n, v in data.items():
        if type(v) in _SCALARS:
            continue
        if isinstance(v, (dict, list)):
            data[n] = copy.deepcopy(v)
        elif is_dataclass(v):
            data[n] = asdict(v)  # type: ignore[arg-type]
    return data
