"""Reason codes: the fixed vocabulary recorded with every unschedulable decision.

An unschedulable verdict's message is free text (upstream's fit error, the gang and placement
messages, the quota and preemption messages); the codes say the same thing in a closed set that
SQL can group by (``v_unschedulable_reasons``, ``v_pending_now``). ``codes_of`` classifies a
verdict's message by the message templates of the plugins that wrote it, in a fixed order, so the
same message always gives the same codes. A message that matches none of them gets
``Unclassified`` (never an empty list).

Vocabulary (``CODES``; ``InsufficientResource`` carries the resource, ``gpu`` for any
``*/gpu`` extended resource):

* per node: ``InsufficientResource(<resource>)``, ``TaintNotTolerated``, ``NodeAffinityMismatch``,
  ``NodeUnschedulable``, ``NodePortsConflict``, ``InterPodAffinityMismatch``,
  ``InterPodAntiAffinityConflict``, ``PodTopologySpreadUnsatisfied``, ``NodeNameMismatch``,
  ``NoNodes``;
* per group: ``GangQuorumNotReached``, ``TopologyDomainTooSmall``, ``GroupSpecInvalid``;
* admission: ``QuotaMaxExceeded``, ``QuotaMinSumExceeded``;
* preemption: ``PreemptionNoVictims`` (tried, nothing to evict that helps),
  ``PreemptionNotEligible`` (policy Never, or the preemptor is in no quota);
* ``SchedulerError``, ``Unclassified``.
"""

from __future__ import annotations

import re

from scheduler.cycle import results as cycle_results
from scheduler.cycle import validation
from scheduler.framework import ERR_NO_NODES_AVAILABLE
from scheduler.plugins import (
    gang_scheduling,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_unschedulable,
    placement_scoring,
    pod_topology_spread,
    topology_placement,
)
from scheduler.preemption import common as preemption

INSUFFICIENT = "InsufficientResource"
CODES = frozenset(
    {
        INSUFFICIENT,
        "TaintNotTolerated",
        "NodeAffinityMismatch",
        "NodeUnschedulable",
        "NodePortsConflict",
        "InterPodAffinityMismatch",
        "InterPodAntiAffinityConflict",
        "PodTopologySpreadUnsatisfied",
        "NodeNameMismatch",
        "NoNodes",
        "GangQuorumNotReached",
        "TopologyDomainTooSmall",
        "GroupSpecInvalid",
        "QuotaMaxExceeded",
        "QuotaMinSumExceeded",
        "PreemptionNoVictims",
        "PreemptionNotEligible",
        "SchedulerError",
        "Unclassified",
    }
)


def _prefix(template: str) -> str:
    """The longest literal piece of a %-template (what every message made from it contains)."""
    return max(re.split(r"%[a-z]", template), key=len).strip()


# (substring of the message, code), checked in this order; each code is recorded once.
_SUBSTRINGS: tuple[tuple[str, str], ...] = (
    ("untolerated taint", "TaintNotTolerated"),
    (node_affinity.ERR_REASON_POD, "NodeAffinityMismatch"),
    (node_unschedulable.ERR_REASON_UNSCHEDULABLE, "NodeUnschedulable"),
    (node_ports.ERR_REASON, "NodePortsConflict"),
    (inter_pod_affinity.ERR_AFFINITY, "InterPodAffinityMismatch"),
    (inter_pod_affinity.ERR_ANTI_AFFINITY, "InterPodAntiAffinityConflict"),
    (inter_pod_affinity.ERR_EXISTING_ANTI_AFFINITY, "InterPodAntiAffinityConflict"),
    (pod_topology_spread.ERR_CONSTRAINTS, "PodTopologySpreadUnsatisfied"),
    (node_name.ERR_REASON, "NodeNameMismatch"),
    (ERR_NO_NODES_AVAILABLE, "NoNodes"),
    (_prefix(gang_scheduling.MSG_CANNOT), "GangQuorumNotReached"),
    (_prefix(gang_scheduling.MSG_NOT_YET), "GangQuorumNotReached"),
    (gang_scheduling.MSG_MIN_COUNT, "GangQuorumNotReached"),
    (_prefix(gang_scheduling.MSG_TREE_QUORUM), "GangQuorumNotReached"),
    (_prefix(gang_scheduling.MSG_GROUP_NOT_FOUND), "GangQuorumNotReached"),
    (cycle_results.MSG_NO_PODS_SCHEDULABLE, "GangQuorumNotReached"),
    (_prefix(cycle_results.MSG_PLACEMENTS), "TopologyDomainTooSmall"),
    (topology_placement.ERR_MULTIPLE_DOMAINS, "TopologyDomainTooSmall"),
    (placement_scoring.ERR_NONE_ASSIGNED, "TopologyDomainTooSmall"),
    (" exceeds max ", "QuotaMaxExceeded"),
    (" exceeds the sum of min ", "QuotaMinSumExceeded"),
    (preemption.MSG_NO_VICTIMS, "PreemptionNoVictims"),
    (preemption.MSG_NO_VICTIMS_POD, "PreemptionNoVictims"),
    (preemption.MSG_NOT_HELPFUL, "PreemptionNoVictims"),
    (preemption.MSG_NEVER, "PreemptionNotEligible"),
    (" is not in any elastic quota", "PreemptionNotEligible"),
)
_VALIDATION = tuple(
    _prefix(t)
    for t in (
        validation.MSG_NOT_FOUND,
        validation.MSG_CYCLE,
        validation.MSG_DEPTH,
        validation.MSG_GROUP_PRIORITY,
        validation.MSG_GROUP_POLICY,
        validation.MSG_POD_SCHEDULER,
        validation.MSG_POD_PRIORITY,
        validation.MSG_POD_POLICY,
        validation.MSG_POD_POLICY_NOGATE,
        validation.MSG_PROFILE,
    )
    if _prefix(t)
)
_INSUFFICIENT = re.compile(r"Insufficient ([A-Za-z0-9./_-]+)")


def resource_code(resource: str) -> str:
    """``InsufficientResource(<resource>)``: ``gpu`` for any ``<vendor>/gpu``."""
    short = "gpu" if resource == "gpu" or resource.endswith("/gpu") else resource
    return f"{INSUFFICIENT}({short})"


def codes_of(message: str, *, error: bool = False) -> tuple[str, ...]:
    """The reason codes of an unschedulable (or error) verdict's message, in vocabulary order
    of first match: resources first, then the node filters, group, quota and preemption codes."""
    out: list[str] = []
    if error:
        out.append("SchedulerError")
    for res in _INSUFFICIENT.findall(message):
        code = resource_code(res.rstrip(".,"))
        if code not in out:
            out.append(code)
    for needle, code in _SUBSTRINGS:
        if needle in message and code not in out:
            out.append(code)
    if any(p in message for p in _VALIDATION) and "GroupSpecInvalid" not in out:
        out.append("GroupSpecInvalid")
    if not out:
        out.append("Unclassified")
    return tuple(out)


def base_code(code: str) -> str:
    """``InsufficientResource(cpu)`` -> ``InsufficientResource``; other codes unchanged."""
    return code.split("(", 1)[0]
