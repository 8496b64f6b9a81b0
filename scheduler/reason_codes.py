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

from scheduler import messages as m

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
    (m.ERR_NODE_AFFINITY, "NodeAffinityMismatch"),
    (m.ERR_NODE_UNSCHEDULABLE, "NodeUnschedulable"),
    (m.ERR_NODE_PORTS, "NodePortsConflict"),
    (m.ERR_POD_AFFINITY, "InterPodAffinityMismatch"),
    (m.ERR_POD_ANTI_AFFINITY, "InterPodAntiAffinityConflict"),
    (m.ERR_EXISTING_ANTI_AFFINITY, "InterPodAntiAffinityConflict"),
    (m.ERR_SPREAD_CONSTRAINTS, "PodTopologySpreadUnsatisfied"),
    (m.ERR_NODE_NAME, "NodeNameMismatch"),
    (m.ERR_NO_NODES_AVAILABLE, "NoNodes"),
    (_prefix(m.MSG_CANNOT), "GangQuorumNotReached"),
    (_prefix(m.MSG_NOT_YET), "GangQuorumNotReached"),
    (m.MSG_MIN_COUNT, "GangQuorumNotReached"),
    (_prefix(m.MSG_TREE_QUORUM), "GangQuorumNotReached"),
    (_prefix(m.MSG_GROUP_NOT_FOUND), "GangQuorumNotReached"),
    (m.MSG_NO_PODS_SCHEDULABLE, "GangQuorumNotReached"),
    (_prefix(m.MSG_PLACEMENTS), "TopologyDomainTooSmall"),
    (m.ERR_MULTIPLE_DOMAINS, "TopologyDomainTooSmall"),
    (m.ERR_NONE_ASSIGNED, "TopologyDomainTooSmall"),
    (" exceeds max ", "QuotaMaxExceeded"),
    (" exceeds the sum of min ", "QuotaMinSumExceeded"),
    (m.MSG_NO_VICTIMS, "PreemptionNoVictims"),
    (m.MSG_NO_VICTIMS_POD, "PreemptionNoVictims"),
    (m.MSG_NOT_HELPFUL, "PreemptionNoVictims"),
    (m.MSG_NEVER, "PreemptionNotEligible"),
    (" is not in any elastic quota", "PreemptionNotEligible"),
)
_VALIDATION = tuple(
    _prefix(t)
    for t in (
        m.MSG_NOT_FOUND,
        m.MSG_CYCLE,
        m.MSG_DEPTH,
        m.MSG_GROUP_PRIORITY,
        m.MSG_GROUP_POLICY,
        m.MSG_POD_SCHEDULER,
        m.MSG_POD_PRIORITY,
        m.MSG_POD_POLICY,
        m.MSG_POD_POLICY_NOGATE,
        m.MSG_PROFILE,
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
