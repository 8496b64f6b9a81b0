"""Failure summaries: a pod's fit error as a Status and the compact diagnosis of a group attempt."""

from __future__ import annotations

import json
from typing import Any

from scheduler.cycle.results import GroupAttempt
from scheduler.framework import Code, Diagnosis, Status
from scheduler.plugins import gang_scheduling


def reason_of(s: Status) -> str:
    """The condition reason of a failed status."""
    return "SchedulerError" if s.code == Code.ERROR else "Unschedulable"


def pod_failure(diag: Diagnosis) -> Status:
    """The status of a pod that fits no node: the fit error as message, attributed to the plugin
    that rejected most nodes; UnschedulableAndUnresolvable when every rejection was (then
    preemption cannot help) or when there are no nodes."""
    if diag.num_nodes == 0:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (diag.fit_error(),), "")
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if diag.unresolvable == diag.num_nodes else Code.UNSCHEDULABLE
    return Status(code, (diag.fit_error(),), diag.top_plugin())


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
