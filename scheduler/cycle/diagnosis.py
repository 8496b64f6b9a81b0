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


DIAGNOSIS_BUDGET = 1000  # bytes of compact JSON


def compact_diagnosis(attempt: GroupAttempt, num_nodes: int, queued: int) -> dict[str, Any]:
    """<= 1 KB summary of a failed attempt: per-plugin rejected-node counts and top reasons of the
    first pod that fitted nowhere, the PlacementFeasible message, and one line per evaluated
    placement (at most 8, then a count of the others)."""
    d: dict[str, Any] = {"message": attempt.status.message[:240], "nodes": num_nodes, "pods": queued}
    if attempt.diag is not None:
        diag = attempt.diag
        d["rejected"] = dict(sorted(diag.plugin_counts.items()))
        top = sorted(diag.reason_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
        d["reasons"] = [[r[:80], c] for r, c in top]
    feasible = next(
        (
            o.status.message
            for o in attempt.outcomes.values()
            if o.status.plugin == gang_scheduling.NAME and o.status.message
        ),
        "",
    )
    if feasible and feasible not in d["message"]:
        d["feasible"] = feasible[:160]
    c = attempt.counters
    if c.generated:
        lines = [ln[:90] for ln in c.lines[:8]]
        pl: dict[str, Any] = {
            "generated": c.generated,
            "scored": c.scored,
            "results": lines,
            "more": c.line_count - len(lines),
        }
        d["placements"] = pl
        while lines and len(json.dumps(d, separators=(",", ":"))) > DIAGNOSIS_BUDGET:
            lines.pop()
            pl["more"] += 1
    return d
