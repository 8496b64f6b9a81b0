"""SchedulingGates PreEnqueue: a pod with ``spec.schedulingGates`` waits (and gates its group)."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework import SUCCESS, Status, unresolvable
from scheduler.messages import MSG_SCHEDULING_GATES, go_list
from scheduler.model import Pod
from scheduler.state import State

NAME = "SchedulingGates"


def pre_enqueue(pod: Pod) -> Status:
    if not pod.scheduling_gates:
        return SUCCESS
    return unresolvable(MSG_SCHEDULING_GATES % go_list(pod.scheduling_gates), NAME)


class SchedulingGates:
    """PreEnqueue plugin: the first gated pod of the entity gates it."""

    name = NAME

    def pre_enqueue(self, state: State, entity: str, pods: Sequence[Pod]) -> Status:
        for p in pods:
            s = pre_enqueue(p)
            if not s.ok:
                return s
        return SUCCESS

    def passes_plain(self, pod: Pod) -> bool:
        return not pod.scheduling_gates
