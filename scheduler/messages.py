"""Upstream's words: every reason and message string podledger's scheduler shares with
kube-scheduler and the Kubernetes API, in one place, each with the upstream source it is taken
from (``SOURCES``; paths in kubernetes/kubernetes unless they name another repository).

Go format verbs are written as Python %-formats: ``%d`` stays, ``%s``/``%v`` become ``%s``, and a
Go ``%q`` (a Go-quoted string) is a ``%s`` whose argument goes through ``go_quote``. Messages are
facts copied as they are, misspellings included: GangScheduling's missing-group message says
``pods's`` (asserted so by upstream's own unit test). ``tests/scheduler/test_messages.py`` checks
every entry against upstream's text, table by table.

Strings podledger adds of its own (elastic quotas, the ``PodGroupValidation`` plugin name,
explain's prose) are not here: they live with the rule that makes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

_FW = "pkg/scheduler/framework"
_PLUGINS = "pkg/scheduler/framework/plugins"
_PG = "pkg/scheduler/schedule_one_podgroup.go"
_ALG = "pkg/scheduler/algorithm_podgroup.go"
_API_CORE = "staging/src/k8s.io/api/core/v1/types.go"
_API_SCHED = "staging/src/k8s.io/api/scheduling/v1beta1/types.go"
_GANG = f"{_PLUGINS}/gangscheduling/gangscheduling.go"


def go_quote(s: str) -> str:
    """Go's ``%q`` for the ASCII names used in messages."""
    return json.dumps(s, ensure_ascii=True)


def go_list(items: Sequence[str]) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b]``."""
    return "[" + " ".join(items) + "]"


# ------------------------------------------------------------------ fit errors (one pod)
NO_NODE_AVAILABLE_MSG = "0/%s nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"

# ------------------------------------------------------------------ Filter plugin reasons
ERR_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_NODE_NAME = "node(s) didn't match the requested node name"
ERR_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
ERR_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_UNTOLERATED_TAINT = "node(s) had untolerated taint {%s: %s}"
ERR_INSUFFICIENT = "Insufficient %s"
ERR_TOO_MANY_PODS = "Too many pods"
ERR_SPREAD_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_SPREAD_LABEL = ERR_SPREAD_CONSTRAINTS + " (missing required label)"
ERR_POD_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

# ------------------------------------------------------------------ PreEnqueue
MSG_SCHEDULING_GATES = "waiting for scheduling gates: %s"  # %v of the gate names (go_list)
MSG_GROUP_NOT_FOUND = "waiting for pods's pod group %s to appear in scheduling queue"  # sic; %q
MSG_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_TREE_QUORUM = "waiting for composite pod group %s tree to meet quorum"  # %q

# ------------------------------------------------------------------ PlacementFeasible, the algorithm
MSG_CANNOT = "minCount (%d) cannot be satisfied: %d scheduled, %d remaining"
MSG_NOT_YET = "minCount (%d) is not yet satisfied: %d scheduled, %d remaining"
MSG_NO_PODS_SCHEDULABLE = "no pods were schedulable"
MSG_PLACEMENTS = "0/%d placements are available, first placement status: %s"
MSG_NOMINATED_NO_POD = "nominated placement is feasible but no pending pod was scheduled"
MSG_CHILD_ERROR = "composite pod group evaluation failed due to child error: %s"
ERR_MULTIPLE_DOMAINS = "more than 1 domain found for pod group"
ERR_NONE_ASSIGNED = "no pods from pod group are assigned to any of the candidate placements"

# ------------------------------------------------------------------ cycle validation (SchedulerError)
MSG_NOT_FOUND = "%s not found in workload forest"
MSG_CYCLE = "cycle detected in composite pod group hierarchy: %s"
MSG_DEPTH = "hierarchy depth of %d exceeds maximum allowed depth of %d (path: %s)"
MSG_GROUP_PRIORITY = (
    "all pod groups in a hierarchy should have the same priority as the root pod group's priority, "
    "got %d (%s) and %d (%s)"
)
MSG_GROUP_POLICY = (
    "all pod groups in a hierarchy should have the same preemption policy as the root pod group's "
    "preemption policy, got %s (%s) and %s (%s)"
)
MSG_POD_SCHEDULER = (
    "all pods in a pod group hierarchy should have the same .spec.schedulerName set, got: %s (%s) and %s (%s)"
)
MSG_POD_PRIORITY = (
    "all pods in a pod group hierarchy should have the same priority as the root pod group's priority, "
    "got %d (%s) and %d (%s)"
)
MSG_POD_POLICY = (
    "all pods in a pod group hierarchy should have the same preemption policy as the root pod group's "
    "preemption policy, got %s (%s) and %s (%s)"
)
MSG_POD_POLICY_NOGATE = (
    "all pods in a pod group hierarchy should have the same preemption policy, got %s (%s) and %s (%s)"
)
MSG_PROFILE = "profile not found for scheduler name %s"  # %q

# ------------------------------------------------------------------ preemption
PG_PREFIX = "pod group preemption: "
POD_PREFIX = "preemption: "
MSG_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_ONGOING = "ongoing preemption on nominated nodes"
MSG_NO_VICTIMS = "No preemption victims found for incoming preemptor"
MSG_FOUND = "found a placement for podgroup, preempting %d victims"
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_VICTIMS_POD = "No preemption victims found for incoming pod"
MSG_CONDITION = "%s: preempting to accommodate a higher priority %s"
MSG_PREEMPTED_GROUP = "Preempted by %s %s on node cluster"  # kind (podgroup | compositepodgroup), uid
MSG_PREEMPTED_POD = "Preempted by pod %s on node %s"

# ------------------------------------------------------------------ conditions and their reasons
POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_SCHEDULED = "Scheduled"
REASON_INVALID = "Invalid"  # CompositePodGroup: an invalid group layout found at runtime
REASON_SCHEDULING_GATED = "SchedulingGated"
REASON_NOT_READY = "NotReadyForScheduling"  # KEP-5501
MSG_SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"
PG_CONDITION = "PodGroupInitiallyScheduled"
CPG_CONDITION = "CompositePodGroupInitiallyScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION = "PreemptionByScheduler"

# ------------------------------------------------------------------ Kubernetes Events
EVENT_FAILED_SCHEDULING = "FailedScheduling"
EVENT_SCHEDULED = "Scheduled"
EVENT_PREEMPTED = "Preempted"
MSG_ASSIGNED = "Successfully assigned %s/%s to %s"
EVENT_NOTE_LIMIT = 1024  # bytes; longer messages end in " ..." (truncateMessage)

# Where each string above comes from.
SOURCES: dict[str, str] = {
    "NO_NODE_AVAILABLE_MSG": f"{_FW}/types.go (NoNodeAvailableMsg, FitError.Error)",
    "ERR_NO_NODES_AVAILABLE": "pkg/scheduler/schedule_one.go (ErrNoNodesAvailable)",
    "ERR_NODE_UNSCHEDULABLE": f"{_PLUGINS}/nodeunschedulable/node_unschedulable.go (ErrReasonUnschedulable)",
    "ERR_NODE_NAME": f"{_PLUGINS}/nodename/node_name.go (ErrReason)",
    "ERR_NODE_PORTS": f"{_PLUGINS}/nodeports/node_ports.go (ErrReason)",
    "ERR_NODE_AFFINITY": f"{_PLUGINS}/nodeaffinity/node_affinity.go (ErrReasonPod)",
    "ERR_UNTOLERATED_TAINT": f"{_PLUGINS}/tainttoleration/taint_toleration.go (Filter)",
    "ERR_INSUFFICIENT": f"{_PLUGINS}/noderesources/fit.go (fitsRequest)",
    "ERR_TOO_MANY_PODS": f"{_PLUGINS}/noderesources/fit.go (fitsRequest)",
    "ERR_SPREAD_CONSTRAINTS": f"{_PLUGINS}/podtopologyspread/filtering.go (ErrReasonConstraintsNotMatch)",
    "ERR_SPREAD_LABEL": f"{_PLUGINS}/podtopologyspread/filtering.go (ErrReasonNodeLabelNotMatch)",
    "ERR_POD_AFFINITY": f"{_PLUGINS}/interpodaffinity/filtering.go (ErrReasonAffinityRulesNotMatch)",
    "ERR_POD_ANTI_AFFINITY": f"{_PLUGINS}/interpodaffinity/filtering.go (ErrReasonAntiAffinityRulesNotMatch)",
    "ERR_EXISTING_ANTI_AFFINITY": (
        f"{_PLUGINS}/interpodaffinity/filtering.go (ErrReasonExistingAntiAffinityRulesNotMatch)"
    ),
    "MSG_SCHEDULING_GATES": f"{_PLUGINS}/schedulinggates/scheduling_gates.go (PreEnqueue)",
    "MSG_GROUP_NOT_FOUND": f"{_GANG} (PreEnqueue; gangscheduling_test.go asserts the spelling)",
    "MSG_MIN_COUNT": f"{_GANG} (PreEnqueue)",
    "MSG_TREE_QUORUM": f"{_GANG} (checkCPGHierarchyReadiness)",
    "MSG_CANNOT": f"{_GANG} (PlacementFeasible)",
    "MSG_NOT_YET": f"{_GANG} (PlacementFeasible)",
    "MSG_NO_PODS_SCHEDULABLE": f"{_ALG} (RunRootSchedulingAlgorithm)",
    "MSG_PLACEMENTS": "pkg/scheduler (podGroupFitError.Error)",
    "MSG_NOMINATED_NO_POD": f"{_ALG} (podGroupSchedulingPlacementAlgorithm)",
    "MSG_CHILD_ERROR": f"{_ALG} (compositePodGroupSchedulingDefaultAlgorithm)",
    "ERR_MULTIPLE_DOMAINS": f"{_PLUGINS}/topologyaware/placement_generate.go (GeneratePlacements)",
    "ERR_NONE_ASSIGNED": f"{_PLUGINS} PodGroupPodsCount (NormalizePlacementScore)",
    "MSG_NOT_FOUND": "pkg/scheduler/backend/workloadmanager (workload forest lookup)",
    "MSG_CYCLE": "pkg/scheduler/backend/workloadmanager (hierarchy validation)",
    "MSG_DEPTH": "pkg/scheduler/backend/workloadmanager (hierarchy validation)",
    "MSG_GROUP_PRIORITY": f"{_PG} (validatePodGroup)",
    "MSG_GROUP_POLICY": f"{_PG} (validatePodGroup)",
    "MSG_POD_SCHEDULER": f"{_PG} (validatePodGroup)",
    "MSG_POD_PRIORITY": f"{_PG} (validatePodGroup)",
    "MSG_POD_POLICY": f"{_PG} (validatePodGroup)",
    "MSG_POD_POLICY_NOGATE": f"{_PG} (validatePodGroup, gate PodGroupPreemptionPolicy off)",
    "MSG_PROFILE": f"{_PG} (validatePodGroup)",
    "PG_PREFIX": "pkg/scheduler/framework/preemption/podgrouppreemption.go",
    "POD_PREFIX": "pkg/scheduler/framework/preemption/preemption.go",
    "MSG_NEVER": "pkg/scheduler/framework/preemption/podgrouppreemption.go (eligibility)",
    "MSG_ONGOING": "pkg/scheduler/framework/preemption/podgrouppreemption.go",
    "MSG_NO_VICTIMS": "pkg/scheduler/framework/preemption/podgrouppreemption.go",
    "MSG_FOUND": "pkg/scheduler/framework/preemption/podgrouppreemption.go",
    "MSG_NOT_HELPFUL": "pkg/scheduler/framework/preemption/preemption.go",
    "MSG_NO_VICTIMS_POD": "pkg/scheduler/framework/preemption/preemption.go",
    "MSG_CONDITION": "pkg/scheduler/framework/preemption/executor.go (DisruptionTarget message)",
    "MSG_PREEMPTED_GROUP": "pkg/scheduler/framework/preemption/executor.go (Preempted event)",
    "MSG_PREEMPTED_POD": "pkg/scheduler/framework/preemption/executor.go (Preempted event)",
    "POD_SCHEDULED": f"{_API_CORE} (PodScheduled)",
    "REASON_UNSCHEDULABLE": f"{_API_CORE} (PodReasonUnschedulable); {_API_SCHED} (PodGroupReasonUnschedulable)",
    "REASON_SCHEDULER_ERROR": f"{_API_CORE} (PodReasonSchedulerError); {_API_SCHED}",
    "REASON_SCHEDULED": f"{_API_SCHED} (PodGroupReasonScheduled)",
    "REASON_INVALID": "staging/src/k8s.io/api/scheduling/v1alpha3/types.go (CompositePodGroup reasons)",
    "REASON_SCHEDULING_GATED": f"{_API_CORE} (PodReasonSchedulingGated)",
    "REASON_NOT_READY": f"{_API_CORE} (PodReasonNotReadyForScheduling, KEP-5501)",
    "MSG_SCHEDULING_GATED": "pkg/registry/core/pod/strategy.go (the apiserver's SchedulingGated message)",
    "PG_CONDITION": f"{_API_SCHED} (PodGroupInitiallyScheduled)",
    "CPG_CONDITION": "staging/src/k8s.io/api/scheduling/v1alpha3/types.go (CompositePodGroupInitiallyScheduled)",
    "DISRUPTION_TARGET": f"{_API_CORE} (DisruptionTarget)",
    "REASON_PREEMPTION": f"{_API_CORE} (PodReasonPreemptionByScheduler)",
    "EVENT_FAILED_SCHEDULING": "pkg/scheduler/schedule_one.go (handleSchedulingFailure)",
    "EVENT_SCHEDULED": "pkg/scheduler/schedule_one.go (bindingCycle)",
    "EVENT_PREEMPTED": "pkg/scheduler/framework/preemption/executor.go",
    "MSG_ASSIGNED": "pkg/scheduler/schedule_one.go (bindingCycle)",
    "EVENT_NOTE_LIMIT": "pkg/scheduler/schedule_one.go (truncateMessage, NoteLengthLimit)",
}


def truncate_note(message: str) -> str:
    """An Event's note as upstream records it: at most ``EVENT_NOTE_LIMIT`` bytes, the cut ones
    ending in `` ...`` (a cut inside a UTF-8 sequence drops the partial character)."""
    raw = message.encode()
    if len(raw) <= EVENT_NOTE_LIMIT:
        return message
    suffix = " ..."
    return raw[: EVENT_NOTE_LIMIT - len(suffix)].decode(errors="ignore") + suffix
