"""GangScheduling: PreEnqueue quorum and PlacementFeasible (§4.2, §5.3).

PreEnqueue (``GangScheduling.pre_enqueue``), per queue entity:

* standalone PodGroup entity: the PodGroup must exist (``waiting for pods's pod group "<name>" to
  appear in scheduling queue``); a gang needs ``minCount`` pods (pending or scheduled) known;
* CompositePodGroup tree: the root's tree meets quorum: at least ``minGroupCount`` children are
  *ready* (a PodGroup with ``minCount`` pods known, a CompositePodGroup whose own children meet
  its minimum, recursively).

``M`` = ``minCount`` of a gang PodGroup / ``minGroupCount`` of a gang CompositePodGroup; a Basic
policy means ``M = 1``. PlacementFeasible with ``S`` scheduled and ``R`` remaining:

* ``R + S < M`` -> Unschedulable ``minCount (M) cannot be satisfied: S scheduled, R remaining``
* ``S < M``     -> Wait ``minCount (M) is not yet satisfied: S scheduled, R remaining``
* otherwise     -> Success
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework import SUCCESS, Code, Status, unresolvable
from scheduler.messages import (
    MSG_CANNOT,
    MSG_GROUP_NOT_FOUND,
    MSG_MIN_COUNT,
    MSG_NOT_YET,
    MSG_TREE_QUORUM,
    go_quote,
)
from scheduler.model import Pod
from scheduler.state import CPG, PG, State, name_of, split_entity

NAME = "GangScheduling"


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


def ready_children(state: State, cpg_key: str, seen: set[str]) -> int:
    """Children of a CompositePodGroup that meet their own minimum (recursively)."""
    seen.add(cpg_key)
    n = 0
    for kind, ck in state.children(cpg_key):
        if kind == PG:
            pg = state.pod_groups[ck]
            if state.all_pods_count(ck) >= pg.minimum:
                n += 1
        elif ck not in seen:
            c = state.composites[ck]
            if ready_children(state, ck, seen) >= c.minimum:
                n += 1
    return n


class GangScheduling:
    """PreEnqueue plugin: PodGroup minCount and CompositePodGroup tree quorum."""

    name = NAME

    def pre_enqueue(self, state: State, entity: str, pods: Sequence[Pod]) -> Status:
        kind, root = split_entity(entity)
        if kind == PG:
            pg = state.pod_groups.get(root)
            if pg is None:
                return group_not_found(name_of(root))
            if pg.is_gang and state.all_pods_count(root) < pg.minimum:
                return min_count_not_met()
        elif kind == CPG:
            cpg = state.composites.get(root)
            if cpg is not None and ready_children(state, root, set()) < cpg.minimum:
                return tree_quorum_not_met(name_of(root))
        return SUCCESS

    def passes_plain(self, pod: Pod) -> bool:
        return True
