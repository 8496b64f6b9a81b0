"""Runtime validation of a group attempt's hierarchy (docs/semantics.md §5.1): forest structure, one priority
and preemption policy, one scheduler name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler.framework import SUCCESS, Status, error
from scheduler.messages import (
    MSG_CYCLE,
    MSG_DEPTH,
    MSG_GROUP_POLICY,
    MSG_GROUP_PRIORITY,
    MSG_NOT_FOUND,
    MSG_POD_POLICY,
    MSG_POD_POLICY_NOGATE,
    MSG_POD_PRIORITY,
    MSG_POD_SCHEDULER,
    MSG_PROFILE,
    go_quote,
)
from scheduler.model import PREEMPT_LOWER, CompositePodGroup, Pod, PodGroup
from scheduler.state import CPG, MAX_DEPTH, PG, State, name_of

VALIDATION = "PodGroupValidation"
# Layout violations: a CompositePodGroup's condition says ``Invalid`` for them (newest v1alpha3
# API: "kube-scheduler detected an invalid group layout during runtime validation", e.g. a cycle or
# a depth over 4); PodGroups, whose API has no such reason, keep ``SchedulerError``.
LAYOUT_VIOLATIONS = (MSG_CYCLE.split(":")[0], MSG_DEPTH.split(" %d")[0])


def is_layout_violation(s: Status) -> bool:
    return s.is_error and s.message.startswith(LAYOUT_VIOLATIONS)


def q(s: str) -> str:
    return go_quote(s)


def validate(
    state: State,
    root_kind: str,
    root: str,
    leaves: Sequence[str],
    cpgs: Sequence[str],
    queued: Mapping[str, Sequence[Pod]],
) -> Status:
    """Success, or the first hierarchy problem as an Error of plugin ``PodGroupValidation``. As
    upstream's validatePodGroup words them, the offending group or pod comes first, the root (or
    the first pod) second."""
    # structure (runtime validation of the workload forest)
    for lk in leaves:
        pg = state.pod_groups[lk]
        ch = state.chain(pg)
        if ch.problem == "missing":
            return error(MSG_NOT_FOUND % name_of(ch.root), VALIDATION)
        if ch.problem == "cycle":
            return error(MSG_CYCLE % " -> ".join(name_of(k) for k in ch.cycle), VALIDATION)
        if len(ch.path) > MAX_DEPTH:
            path = " -> ".join(name_of(k) for k in reversed(ch.path))
            return error(MSG_DEPTH % (len(ch.path), MAX_DEPTH, path), VALIDATION)
    if root_kind == CPG and root not in state.composites:
        return error(MSG_NOT_FOUND % name_of(root), VALIDATION)
    root_obj: PodGroup | CompositePodGroup = (
        state.pod_groups[root] if root_kind == PG else state.composites[root]
    )
    prio, pol = root_obj.priority, root_obj.preemption_policy or PREEMPT_LOWER
    policy_gate = state.gate("PodGroupPreemptionPolicy")
    groups: list[PodGroup | CompositePodGroup] = [state.composites[k] for k in cpgs if k in state.composites]
    groups += [state.pod_groups[k] for k in leaves]
    for g in groups:
        if g.priority != prio:
            return error(MSG_GROUP_PRIORITY % (g.priority, q(g.name), prio, q(root_obj.name)), VALIDATION)
        if policy_gate and (g.preemption_policy or PREEMPT_LOWER) != pol:
            return error(
                MSG_GROUP_POLICY % (g.preemption_policy, q(g.name), pol, q(root_obj.name)), VALIDATION
            )
    pods: list[Pod] = []
    for lk in leaves:
        pods.extend(queued.get(lk, ()))
    for lk in leaves:
        for pk in sorted(state.snap.group_pods.get(lk, {})):
            p = state.pods.get(pk)
            if p is not None:
                pods.append(p)
    if not pods:
        return SUCCESS
    first = pods[0]
    for p in pods:
        if p.scheduler_name != first.scheduler_name:
            return error(
                MSG_POD_SCHEDULER % (q(p.scheduler_name), q(p.name), q(first.scheduler_name), q(first.name)),
                VALIDATION,
            )
        if p.priority != prio:
            return error(MSG_POD_PRIORITY % (p.priority, q(p.name), prio, q(root_obj.name)), VALIDATION)
        ppol = p.preemption_policy or PREEMPT_LOWER
        if policy_gate:
            if ppol != pol:
                return error(MSG_POD_POLICY % (ppol, q(p.name), pol, q(root_obj.name)), VALIDATION)
        elif ppol != (first.preemption_policy or PREEMPT_LOWER):
            return error(
                MSG_POD_POLICY_NOGATE
                % (ppol, q(p.name), first.preemption_policy or PREEMPT_LOWER, q(first.name)),
                VALIDATION,
            )
    if not state.config.serves(first.scheduler_name):
        return error(MSG_PROFILE % q(first.scheduler_name), VALIDATION)
    return SUCCESS
