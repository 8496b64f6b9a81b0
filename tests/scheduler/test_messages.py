"""Upstream's words, checked entry by entry (``scheduler/messages.py``).

The expected texts are facts read in upstream's source (kubernetes/kubernetes, the file each
entry of ``messages.SOURCES`` names), written with Go's verbs as upstream writes them; ``_py``
turns ``%q``/``%v`` into the ``%s`` the module uses. A string that drifts from upstream, a string
without its source, or a source without its string fails here.
"""

from __future__ import annotations

import pytest

from scheduler import messages as m
from scheduler.cycle.diagnosis import reason_of
from scheduler.framework import Code, Status, fit_error_message
from scheduler.plugins import gang_scheduling, scheduling_gates
from tests.scheduler.sched_helpers import pod

# name -> upstream's text (Go format verbs)
UPSTREAM: dict[str, str] = {
    "NO_NODE_AVAILABLE_MSG": "0/%v nodes are available",
    "ERR_NO_NODES_AVAILABLE": "no nodes available to schedule pods",
    "ERR_NODE_UNSCHEDULABLE": "node(s) were unschedulable",
    "ERR_NODE_NAME": "node(s) didn't match the requested node name",
    "ERR_NODE_PORTS": "node(s) didn't have free ports for the requested pod ports",
    "ERR_NODE_AFFINITY": "node(s) didn't match Pod's node affinity/selector",
    "ERR_UNTOLERATED_TAINT": "node(s) had untolerated taint {%s: %s}",
    "ERR_INSUFFICIENT": "Insufficient %v",
    "ERR_TOO_MANY_PODS": "Too many pods",
    "ERR_SPREAD_CONSTRAINTS": "node(s) didn't match pod topology spread constraints",
    "ERR_SPREAD_LABEL": "node(s) didn't match pod topology spread constraints (missing required label)",
    "ERR_POD_AFFINITY": "node(s) didn't match pod affinity rules",
    "ERR_POD_ANTI_AFFINITY": "node(s) didn't match pod anti-affinity rules",
    "ERR_EXISTING_ANTI_AFFINITY": "node(s) didn't satisfy existing pods anti-affinity rules",
    "MSG_SCHEDULING_GATES": "waiting for scheduling gates: %v",
    "MSG_GROUP_NOT_FOUND": "waiting for pods's pod group %q to appear in scheduling queue",
    "MSG_MIN_COUNT": "waiting for minCount pods from a gang to appear in scheduling queue",
    "MSG_TREE_QUORUM": "waiting for composite pod group %q tree to meet quorum",
    "MSG_CANNOT": "minCount (%d) cannot be satisfied: %d scheduled, %d remaining",
    "MSG_NOT_YET": "minCount (%d) is not yet satisfied: %d scheduled, %d remaining",
    "MSG_NO_PODS_SCHEDULABLE": "no pods were schedulable",
    "MSG_PLACEMENTS": "0/%d placements are available, first placement status: %s",
    "MSG_NOMINATED_NO_POD": "nominated placement is feasible but no pending pod was scheduled",
    "MSG_CHILD_ERROR": "composite pod group evaluation failed due to child error: %w",
    "ERR_MULTIPLE_DOMAINS": "more than 1 domain found for pod group",
    "ERR_NONE_ASSIGNED": "no pods from pod group are assigned to any of the candidate placements",
    "MSG_NOT_FOUND": "%s not found in workload forest",
    "MSG_CYCLE": "cycle detected in composite pod group hierarchy: %s",
    "MSG_DEPTH": "hierarchy depth of %d exceeds maximum allowed depth of %d (path: %s)",
    "MSG_GROUP_PRIORITY": "all pod groups in a hierarchy should have the same priority as the root pod group's"
    " priority, got %d (%q) and %d (%q)",
    "MSG_GROUP_POLICY": "all pod groups in a hierarchy should have the same preemption policy as the root pod"
    " group's preemption policy, got %v (%q) and %v (%q)",
    "MSG_POD_SCHEDULER": "all pods in a pod group hierarchy should have the same .spec.schedulerName set,"
    " got: %q (%q) and %q (%q)",
    "MSG_POD_PRIORITY": "all pods in a pod group hierarchy should have the same priority as the root pod group's"
    " priority, got %d (%q) and %d (%q)",
    "MSG_POD_POLICY": "all pods in a pod group hierarchy should have the same preemption policy as the root pod"
    " group's preemption policy, got %v (%q) and %v (%q)",
    "MSG_POD_POLICY_NOGATE": "all pods in a pod group hierarchy should have the same preemption policy,"
    " got %v (%q) and %v (%q)",
    "MSG_PROFILE": "profile not found for scheduler name %q",
    "PG_PREFIX": "pod group preemption: ",
    "POD_PREFIX": "preemption: ",
    "MSG_NEVER": "not eligible due to preemptionPolicy=Never.",
    "MSG_ONGOING": "ongoing preemption on nominated nodes",
    "MSG_NO_VICTIMS": "No preemption victims found for incoming preemptor",
    "MSG_FOUND": "found a placement for podgroup, preempting %d victims",
    "MSG_NOT_HELPFUL": "Preemption is not helpful for scheduling",
    "MSG_NO_VICTIMS_POD": "No preemption victims found for incoming pod",
    "MSG_CONDITION": "%v: preempting to accommodate a higher priority %v",
    "MSG_PREEMPTED_GROUP": "Preempted by %v %v on node cluster",
    "MSG_PREEMPTED_POD": "Preempted by pod %v on node %v",
    "POD_SCHEDULED": "PodScheduled",
    "REASON_UNSCHEDULABLE": "Unschedulable",
    "REASON_SCHEDULER_ERROR": "SchedulerError",
    "REASON_SCHEDULED": "Scheduled",
    "REASON_INVALID": "Invalid",
    "REASON_SCHEDULING_GATED": "SchedulingGated",
    "REASON_NOT_READY": "NotReadyForScheduling",
    "MSG_SCHEDULING_GATED": "Scheduling is blocked due to non-empty scheduling gates",
    "PG_CONDITION": "PodGroupInitiallyScheduled",
    "CPG_CONDITION": "CompositePodGroupInitiallyScheduled",
    "DISRUPTION_TARGET": "DisruptionTarget",
    "REASON_PREEMPTION": "PreemptionByScheduler",
    "EVENT_FAILED_SCHEDULING": "FailedScheduling",
    "EVENT_SCHEDULED": "Scheduled",
    "EVENT_PREEMPTED": "Preempted",
    "MSG_ASSIGNED": "Successfully assigned %v/%v to %v",
}


def _py(go: str) -> str:
    for verb in ("%q", "%v", "%w"):
        go = go.replace(verb, "%s")
    return go


def _constants() -> dict[str, object]:
    return {k: v for k, v in vars(m).items() if k.isupper() and not k.startswith("_") and k != "SOURCES"}


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_each_string_is_upstreams(name: str) -> None:
    assert getattr(m, name) == _py(UPSTREAM[name]), name
    assert m.SOURCES[name], f"{name} has no upstream source"


def test_every_constant_has_a_source_and_a_table_row() -> None:
    consts = _constants()
    assert set(m.SOURCES) == set(consts), "messages.SOURCES and the module's constants differ"
    assert set(UPSTREAM) | {"EVENT_NOTE_LIMIT"} == set(consts), "the table and the module differ"


# (what produces it, upstream's rendered text: the assertions of upstream's own unit tests)
RENDERED = [
    # gangscheduling_test.go
    (lambda: gang_scheduling.group_not_found("pg1").message, 'waiting for pods\'s pod group "pg1" to appear in scheduling queue'),
    (lambda: gang_scheduling.tree_quorum_not_met("root").message, 'waiting for composite pod group "root" tree to meet quorum'),
    (lambda: gang_scheduling.placement_feasible(3, 1, 1).message, "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"),
    (lambda: gang_scheduling.placement_feasible(3, 1, 2).message, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining"),
    # scheduling_gates_test.go
    (lambda: scheduling_gates.pre_enqueue(pod("p", gates=("foo", "bar"))).message, "waiting for scheduling gates: [foo bar]"),
    # framework/types_test.go (FitError.Error)
    (lambda: fit_error_message(2, {"node(s) didn't match pod topology spread constraints": 2}),
     "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."),
    (lambda: fit_error_message(0, {}), "no nodes available to schedule pods"),
    (lambda: reason_of(Status(Code.ERROR, ("x",))), "SchedulerError"),
    (lambda: reason_of(Status(Code.UNSCHEDULABLE, ("x",))), "Unschedulable"),
]  # fmt: skip


@pytest.mark.parametrize(("produce", "want"), RENDERED)
def test_rendered_as_upstream(produce: object, want: str) -> None:
    assert callable(produce)
    assert produce() == want


def test_event_note_truncated_as_upstream() -> None:
    assert m.truncate_note("x" * 1024) == "x" * 1024
    cut = m.truncate_note("x" * 2000)
    assert len(cut.encode()) == 1024 and cut.endswith("x ...")
    # a cut inside a multi-byte character drops it (upstream cuts bytes)
    assert m.truncate_note("é" * 600).endswith(" ...")
    assert len(m.truncate_note("é" * 600).encode()) <= 1024
