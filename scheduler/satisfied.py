"""The live condition PodGroupSatisfied (KEP-6413, proposed; gate ``PodGroupSatisfiedCondition``).

Unlike PodGroupInitiallyScheduled, which never returns to False, PodGroupSatisfied follows the
group: ``True``/``MinCountSatisfied`` while at least ``minCount`` members are scheduled (1 for a
Basic group), else ``False``/``BelowMinCount``; message ``N of M members scheduled`` (M = minCount).
It is re-evaluated for every PodGroup whose scheduled members changed (bind, preemption,
deletion: the snapshot records the group of every pod it adds or removes) or that was created
or edited (a minCount edit flips it without any pod moving), and a change is one
``GroupSatisfiedChanged`` decision, so the log keeps its history (view
``v_group_below_min_count``). Pure: no clock; groups in sorted order.
"""

from __future__ import annotations

from scheduler.conditions import KIND_PG
from scheduler.decisions import Decision, GroupSatisfiedChanged
from scheduler.state import State

GATE = "PodGroupSatisfiedCondition"
COND = "PodGroupSatisfied"
SATISFIED, BELOW = "MinCountSatisfied", "BelowMinCount"


def satisfied_changes(state: State) -> list[Decision]:
    """The condition changes of the groups touched since the last call (clears the set)."""
    touched = state.snap.touched_groups
    if not touched:
        return []
    if not (state.workloads_on and state.gate(GATE)):
        touched.clear()
        return []
    keys = sorted(touched)
    touched.clear()
    out: list[Decision] = []
    for gk in keys:
        pg = state.pod_groups.get(gk)
        if pg is None:
            continue
        m = pg.min_count if pg.min_count is not None else 1
        n = len(state.snap.group_pods.get(gk, ()))
        status, reason = ("True", SATISFIED) if n >= m else ("False", BELOW)
        new = (status, reason, f"{n} of {m} members scheduled")
        conds = state.conditions.setdefault((KIND_PG, gk), {})
        if conds.get(COND) == new:
            continue
        conds[COND] = new
        out.append(GroupSatisfiedChanged(gk, *new, scheduled=n, min_count=m))
    return out
