"""Conditions in Kubernetes' words: a gated pod's PodScheduled (KEP-5501, ``gated_condition``),
and the group conditions PodGroupInitiallyScheduled / CompositePodGroupInitiallyScheduled.

After a group attempt every evaluated leaf PodGroup, then every CompositePodGroup of the tree
(pre-order), gets its completed status as a condition: ``True/Scheduled``, ``False/Unschedulable``
or ``False/SchedulerError`` with the status message; a CompositePodGroup whose hierarchy has an
invalid layout (cycle, depth over 4) gets ``False/Invalid``. A condition that is already True never
regresses, and an unchanged condition emits nothing.
"""

from __future__ import annotations

from scheduler import messages as m
from scheduler.cycle import GroupAttempt
from scheduler.cycle.validation import is_layout_violation
from scheduler.decisions import Decision, GroupConditionChanged
from scheduler.framework import Status
from scheduler.model import Pod
from scheduler.plugins import scheduling_gates
from scheduler.state import CPG, PG, State

PG_COND = m.PG_CONDITION
CPG_COND = m.CPG_CONDITION
KIND_PG = "PodGroup"
KIND_CPG = "CompositePodGroup"


def gated_condition(pod: Pod, s: Status) -> tuple[str, str]:
    """(reason, message) of the PodScheduled=False condition of a pod that PreEnqueue rejected
    (KEP-5501): NotReadyForScheduling with the plugin's message. The SchedulingGates plugin's
    message is the kube-apiserver's, and a pod with its own gates keeps the apiserver's reason
    SchedulingGated (the scheduler does not re-patch an identical message); a member gated by a
    sibling's gates gets NotReadyForScheduling."""
    if s.plugin == scheduling_gates.NAME:
        reason = m.REASON_SCHEDULING_GATED if pod.scheduling_gates else m.REASON_NOT_READY
        return reason, m.MSG_SCHEDULING_GATED
    return m.REASON_NOT_READY, s.message


def group_conditions(state: State, attempt: GroupAttempt, statuses: dict[str, Status]) -> list[Decision]:
    """The condition changes of one group attempt (leaves first, then CompositePodGroups)."""
    out: list[Decision] = []
    for leaf in attempt.leaves:
        if leaf in state.pod_groups:
            s = statuses.get(f"{PG}:{leaf}")
            if s is not None:
                d = set_condition(state, KIND_PG, leaf, PG_COND, s)
                if d is not None:
                    out.append(d)
    if state.cpg_on:
        for ck in attempt.cpgs:
            if ck in state.composites:
                s = statuses.get(f"{CPG}:{ck}")
                if s is not None:
                    d = set_condition(state, KIND_CPG, ck, CPG_COND, s)
                    if d is not None:
                        out.append(d)
    return out


def set_condition(state: State, kind: str, key: str, ctype: str, s: Status) -> Decision | None:
    if s.ok:
        new = ("True", m.REASON_SCHEDULED, "")
    elif kind == KIND_CPG and is_layout_violation(s):
        new = ("False", m.REASON_INVALID, s.message)
    elif s.is_error:
        new = ("False", m.REASON_SCHEDULER_ERROR, s.message)
    else:
        new = ("False", m.REASON_UNSCHEDULABLE, s.message)
    conds = state.conditions.setdefault((kind, key), {})
    cur = conds.get(ctype)
    if cur is not None and (cur[0] == "True" and new[0] != "True" or cur == new):
        return None
    conds[ctype] = new
    return GroupConditionChanged(kind, key, ctype, *new)
