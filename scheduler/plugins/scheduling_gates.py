"""SchedulingGates PreEnqueue: a pod with ``spec.schedulingGates`` waits (and gates its group)."""

from __future__ import annotations

from scheduler.framework import SUCCESS, Status, unresolvable
from scheduler.model import Pod

NAME = "SchedulingGates"


def pre_enqueue(pod: Pod) -> Status:
    if not pod.scheduling_gates:
        return SUCCESS
    return unresolvable("waiting for scheduling gates: [" + " ".join(pod.scheduling_gates) + "]", NAME)
