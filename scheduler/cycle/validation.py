"""Runtime validation of a group attempt's hierarchy (spec §5.1): forest structure, one priority
and preemption policy, one scheduler name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler.framework import SUCCESS, Status, error, go_quote
from scheduler.model import PREEMPT_LOWER, CompositePodGroup, Pod, PodGroup
from scheduler.state import CPG, MAX_DEPTH, PG, State, name_of

MSG_NOT_FOUND = "%s not found in workload forest"
MSG_CYCLE = "cycle detected in composite pod group hierarchy: %s"
MSG_DEPTH = "hierarchy depth of %d exceeds maximum allowed depth of %d (path: %s)"
MSG_GROUP_PRIORITY = "all pod groups in a hierarchy should have the same priority as the root pod group's priority, got %d (%s) and %d (%s)"
MSG_GROUP_POLICY = (
    "all pod groups in a hierarchy should have the same preemption policy as the root pod group's preemption policy, "
    "got %s (%s) and %s (%s)"
)
MSG_POD_SCHEDULER = (
    "all pods in a pod group hierarchy should have the same .spec.schedulerName set, got: %s (%s) and %s (%s)"
)
MSG_POD_PRIORITY = "all pods in a pod group hierarchy should have the same priority as the root pod group's priority, got %d (%s) and %d (%s)"
MSG_POD_POLICY = (
    "all pods in a pod group hierarchy should have the same preemption policy as the root pod group's preemption policy, "
    "got %s (%s) and %s (%s)"
)
MSG_POD_POLICY_NOGATE = (
    "all pods in a pod group hierarchy should have the same preemption policy, got %s (%s) and %s (%s)"
)
MSG_PROFILE = "profile not found for scheduler name %s"

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
    """Success, or the first hierarchy problem as an Error of plugin ``PodGroupValidation``."""
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
            return error(MSG_GROUP_PRIORITY % (prio, q(root_obj.name), g.priority, q(g.name)), VALIDATION)
        if policy_gate and (g.preemption_policy or PREEMPT_LOWER) != pol:
            return error(
                MSG_GROUP_POLICY % (pol, q(root_obj.name), g.preemption_policy, q(g.name)), VALIDATION
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
                MSG_POD_SCHEDULER % (q(first.scheduler_name), q(first.name), q(p.scheduler_name), q(p.name)),
                VALIDATION,
            )
        if p.priority != prio:
            return error(MSG_POD_PRIORITY % (prio, q(root_obj.name), p.priority, q(p.name)), VALIDATION)
        ppol = p.preemption_policy or PREEMPT_LOWER
        if policy_gate:
            if ppol != pol:
                return error(MSG_POD_POLICY % (pol, q(root_obj.name), ppol, q(p.name)), VALIDATION)
        elif ppol != (first.preemption_policy or PREEMPT_LOWER):
            return error(
                MSG_POD_POLICY_NOGATE
                % (first.preemption_policy or PREEMPT_LOWER, q(first.name), ppol, q(p.name)),
                VALIDATION,
            )
    if first.scheduler_name != state.config.profile:
        return error(MSG_PROFILE % q(first.scheduler_name), VALIDATION)
    return SUCCESS
