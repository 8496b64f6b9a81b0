"""Failure summaries: a pod's fit error as a Status and the compact diagnosis of a group attempt."""

from __future__ import annotations

import json
from typing import Any

from scheduler.cycle.results import GroupAttempt, LeafOutcome
from scheduler.framework import Code, Diagnosis, Status
from scheduler.messages import REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE
from scheduler.plugins import gang_scheduling


def reason_of(s: Status) -> str:
    """The condition reason of a failed status."""
    return REASON_SCHEDULER_ERROR if s.code == Code.ERROR else REASON_UNSCHEDULABLE


def pod_failure(diag: Diagnosis) -> Status:
    """The status of a pod that fits no node: the fit error as message, attributed to the plugin
    that rejected most nodes; UnschedulableAndUnresolvable when every rejection was (then
    preemption cannot help) or when there are no nodes."""
    if diag.num_nodes == 0:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (diag.fit_error(),), "")
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if diag.unresolvable == diag.num_nodes else Code.UNSCHEDULABLE
    return Status(code, (diag.fit_error(),), diag.top_plugin())


def member_status(outcome: LeafOutcome | None, pod_key: str, completed: Status, final: Status) -> Status:
    """The status a member pod that does not bind gets (its PodScheduled=False message and its
    FailedScheduling event), as upstream's ``submitPodGroupResult`` hands each pod to the
    FailureHandler:

    * the leaf's status is an Error: the pod's own status if it errored, else the leaf's;
    * the pod's own result failed (it fitted no node): its own fit error, ``0/N nodes are
      available: ...`` (without the PostFilter's message, which only the group's status gets);
    * the pod was placed, then the group failed (reverted) or waits on preemption: the leaf's
      ``final`` status (with the PostFilter's message);
    * the pod was never evaluated (the loop stopped early, or no placement was tried): the leaf's
      ``completed`` status, the copy upstream takes before PostFilter runs.

    ``outcome``: the leaf's outcome in this attempt (None: the leaf was never evaluated)."""
    own = outcome.pod_status.get(pod_key) if outcome is not None else None
    if final.is_error:
        return own if own is not None and own.is_error else final
    if own is not None and not own.ok:
        return own
    if outcome is not None and any(pk == pod_key for pk, _ in (*outcome.assigned, *outcome.tried)):
        return final
    return completed


DIAGNOSIS_BUDGET = 1000  # bytes of compact JSON the lists are trimmed to (never a string)
MAX_REASONS = 4
MAX_LINES = 8


def compact_diagnosis(attempt: GroupAttempt, num_nodes: int, queued: int) -> dict[str, Any]:
    """A small summary of a failed attempt: per-plugin rejected-node counts and the top reasons of
    the first pod that fitted nowhere, the PlacementFeasible message, and one line per evaluated
    placement. No text is cut (issue 21): long lists keep their first items and count the others
    (``moreReasons``, ``placements.more``); the lists shrink until the JSON is within
    ``DIAGNOSIS_BUDGET`` bytes where the whole texts allow it."""
    d: dict[str, Any] = {"message": attempt.status.message, "nodes": num_nodes, "pods": queued}
    reasons: list[list[Any]] = []
    if attempt.diag is not None:
        diag = attempt.diag
        d["rejected"] = dict(sorted(diag.plugin_counts.items()))
        ranked = sorted(diag.reason_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        reasons = [[r, c] for r, c in ranked[:MAX_REASONS]]
        d["reasons"] = reasons
        if len(ranked) > len(reasons):
            d["moreReasons"] = len(ranked) - len(reasons)
    feasible = next(
        (
            o.status.message
            for o in attempt.outcomes.values()
            if o.status.plugin == gang_scheduling.NAME and o.status.message
        ),
        "",
    )
    if feasible and feasible not in d["message"]:
        d["feasible"] = feasible
    c = attempt.counters
    lines: list[str] = []
    pl: dict[str, Any] = {}
    if c.generated:
        lines = list(c.lines[:MAX_LINES])
        pl = {
            "generated": c.generated,
            "scored": c.scored,
            "results": lines,
            "more": c.line_count - len(lines),
        }
        d["placements"] = pl
    while len(json.dumps(d, separators=(",", ":"))) > DIAGNOSIS_BUDGET:
        if len(lines) > 1:
            lines.pop()
            pl["more"] += 1
        elif len(reasons) > 1:
            reasons.pop()
            d["moreReasons"] = d.get("moreReasons", 0) + 1
        else:
            break
    return d
