"""GangScheduling: PreEnqueue quorum and PlacementFeasible (§4.2, §5.3).

``M`` = ``minCount`` of a gang PodGroup / ``minGroupCount`` of a gang CompositePodGroup; a Basic
policy means ``M = 1``. PlacementFeasible with ``S`` scheduled and ``R`` remaining:

* ``R + S < M`` -> Unschedulable ``minCount (M) cannot be satisfied: S scheduled, R remaining``
* ``S < M``     -> Wait ``minCount (M) is not yet satisfied: S scheduled, R remaining``
* otherwise     -> Success
"""

from __future__ import annotations

from scheduler.framework import SUCCESS, Code, Status, go_quote, unresolvable

NAME = "GangScheduling"

MSG_GROUP_NOT_FOUND = "waiting for pod's pod group %s to appear in scheduling queue"
MSG_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_TREE_QUORUM = "waiting for composite pod group %s tree to meet quorum"
MSG_CANNOT = "minCount (%d) cannot be satisfied: %d scheduled, %d remaining"
MSG_NOT_YET = "minCount (%d) is not yet satisfied: %d scheduled, %d remaining"


def placement_feasible(minimum: int, scheduled: int, remaining: int) -> Status:
    if remaining + scheduled < minimum:
        return Status(Code.UNSCHEDULABLE, (MSG_CANNOT % (minimum, scheduled, remaining),), NAME)
    if scheduled < minimum:
        return Status(Code.WAIT, (MSG_NOT_YET % (minimum, scheduled, remaining),), NAME)
    return SUCCESS


def group_not_found(name: str) -> Status:
    return unresolvable(MSG_GROUP_NOT_FOUND % go_quote(name), NAME)


def min_count_not_met() -> Status:
    return unresolvable(MSG_MIN_COUNT, NAME)


def tree_quorum_not_met(root_name: str) -> Status:
    return unresolvable(MSG_TREE_QUORUM % go_quote(root_name), NAME)
