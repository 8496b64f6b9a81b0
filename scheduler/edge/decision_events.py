"""Scheduler decisions as ledger events: the one table from decision type to event type and
stream (``DECISION_EVENTS``), each decision's payload, and the event types the scheduler writes
(``DECISION_TYPES``, which ``replay --verify`` re-derives). Pure: no ledger access; the bridge
(``scheduler/edge/bridge.py``) appends what these functions build."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger import streams
from scheduler import decisions as d
from scheduler.cycle.why import summary_line

__all__ = [
    "CYCLE_COMPLETED",
    "DECISION_EVENTS",
    "DECISION_TYPES",
    "POD_RETRIED",
    "RETRIED",
    "EventRule",
    "decision_event",
    "decision_payload",
    "pod_bound_payload",
    "stream",
]


stream = streams.scheduler  # sched/<pod|podgroup|compositepodgroup>/ns/name


def _entity_route(dec: d.EntityRequeued) -> tuple[str, str]:
    kind, _, rest = dec.entity.partition("/")
    if kind == "pg":
        return "PodGroupRequeued", stream("podgroup", rest)
    if kind == "cpg":
        return "PodGroupRequeued", stream("compositepodgroup", rest)
    return ("PodRequeued" if "/" in dec.entity else "PodGroupRequeued"), stream("pod", dec.entity)


def _condition_route(dec: d.GroupConditionChanged) -> tuple[str, str]:
    prefix = "compositepodgroup" if dec.kind == "CompositePodGroup" else "podgroup"
    return f"{dec.kind}ConditionChanged", stream(prefix, dec.group)


@dataclass(frozen=True)
class EventRule:
    types: tuple[str, ...]  # every event type the decision can become
    route: Callable[[Any], tuple[str, str]]  # decision -> (event type, stream)


# The one table from decision type to event: event type(s) and stream.
DECISION_EVENTS: dict[type[d.Decision], EventRule] = {
    d.PodBound: EventRule(("PodBound",), lambda x: ("PodBound", stream("pod", x.pod))),
    d.PodNominated: EventRule(("PodNominated",), lambda x: ("PodNominated", stream("pod", x.pod))),
    d.PodUnschedulable: EventRule(
        ("PodUnschedulable",), lambda x: ("PodUnschedulable", stream("pod", x.pod))
    ),
    d.PodGated: EventRule(("PodGated",), lambda x: ("PodGated", stream("pod", x.pod))),
    d.GroupSatisfiedChanged: EventRule(
        ("PodGroupSatisfiedChanged",), lambda x: ("PodGroupSatisfiedChanged", stream("podgroup", x.group))
    ),
    d.GroupConditionChanged: EventRule(
        ("PodGroupConditionChanged", "CompositePodGroupConditionChanged"), _condition_route
    ),
    d.GroupScheduled: EventRule(
        ("PodGroupScheduled",), lambda x: ("PodGroupScheduled", stream("podgroup", x.group))
    ),
    d.GroupUnschedulable: EventRule(
        ("PodGroupUnschedulable",), lambda x: ("PodGroupUnschedulable", stream("podgroup", x.group))
    ),
    d.PodPreempted: EventRule(("PodPreempted",), lambda x: ("PodPreempted", stream("pod", x.victim))),
    d.EntityRequeued: EventRule(("PodRequeued", "PodGroupRequeued"), _entity_route),
}
RETRIED = "PodGroupRetried"  # a PodGroupUnschedulable identical to the group's last one
POD_RETRIED = "PodRetried"  # a plain pod's unschedulable retry that changed nothing (one event)
CYCLE_COMPLETED = "SchedulingCycleCompleted"
# Event types written by the scheduler (a run's events; `replay --verify` re-derives them).
DECISION_TYPES = frozenset(
    {t for rule in DECISION_EVENTS.values() for t in rule.types} | {RETRIED, POD_RETRIED, CYCLE_COMPLETED}
)


def decision_event(dec: d.Decision) -> tuple[str, str, dict[str, Any]]:
    """(stream, event type, payload) for one decision (payload: see ``decision_payload``)."""
    rule = DECISION_EVENTS.get(type(dec))
    if rule is None:
        raise TypeError(f"unknown decision {type(dec).__name__}")
    typ, stream_name = rule.route(dec)
    return stream_name, typ, decision_payload(dec)


def pod_bound_payload(
    pod: str,
    node: str,
    group: str | None,
    gpus: Sequence[int] | None = None,
    requests: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The one ``PodBound`` payload, whoever bound the pod (podledger's scheduler; a Binding
    through the Kubernetes API; a binding attach saw in a cluster): the pod, its node and
    group, its GPU devices (only for pods that have them), and its effective requests (the
    scheduler's bridge fills them in; None when the binder does not know them)."""
    data: dict[str, Any] = {"pod": pod, "node": node, "group": group}
    if gpus is not None:  # payloads of pods without GPU devices stay as they were
        data["gpus"] = list(gpus)
    data["requests"] = None if requests is None else dict(requests)
    return data


def decision_payload(dec: d.Decision) -> dict[str, Any]:
    """The payload of a decision's event: the decision's fields (``GroupConditionChanged`` drops
    ``kind``, which the event type carries), tuples as lists."""
    if isinstance(dec, d.PodBound):  # nearly every decision of a busy log: built without as_dict
        return pod_bound_payload(dec.pod, dec.node, dec.group, dec.gpus)
    data = d.as_dict(dec)
    if isinstance(dec, d.GroupConditionChanged):
        data.pop("kind")
    elif isinstance(dec, d.GroupScheduled):
        data["pods"] = list(dec.pods)
    elif isinstance(dec, (d.PodUnschedulable, d.GroupUnschedulable)):
        data["codes"] = list(dec.codes)
        if isinstance(dec, d.GroupUnschedulable):
            # the diagnosis in one line (issue 31): the PodGroup's podledger Event beside
            # upstream's condition (api/k8s/events.py); empty for a CompositePodGroup root
            data["summary"] = summary_line(dec.why)
    elif isinstance(dec, d.PodGated):
        if dec.report:
            data.pop("report")  # a payload field only when False
        else:  # nothing reported: no condition wording (payloads as they were)
            data.pop("reason")
            data.pop("condition_message")
    return data
