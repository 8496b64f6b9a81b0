"""Scheduling cycles: the classic one-pod cycle and the PodGroup / CompositePodGroup cycle.

PodGroup cycle (docs/semantics.md §5): one snapshot per attempt (``Snapshot.backup``/``restore``), runtime
hierarchy validation, then the root algorithm:

* leaf PodGroup without topology constraint -> default algorithm (§5.2): PlacementFeasible before
  and after each pod, pods placed in queue order on the snapshot, atomic revert on failure;
* leaf with a topology constraint -> placement evaluation loop (§6.3) with the TopologyPlacement
  generator, nominated placement first for standalone groups, and placement scoring (§6.4);
* CompositePodGroup -> per CPG placement, children in forest order, greedy, recursive (§7.2).

Root Success with at least one newly placed pod binds the placed pods; otherwise the attempt is
Unschedulable (``no pods were schedulable``) or an Error.

Placement evaluation is vectorized: for a leaf whose pending pods are interchangeable (same
filter signature and requests) the outcome of every placement is computed at once from per-node
"how many more copies fit" counts summed per domain (``np.add.reduceat``), which is exact because
each placed copy lowers its node's count by exactly one. Only the chosen placement (and, on
failure, the reported first placement) is then run pod by pod. Heterogeneous groups evaluate
each placement pod by pod with ``backup``/``restore``.

Deterministic tie rules (upstream breaks ties at random): equal node scores -> lowest node index
(nodes sorted by ``(seq, name)``); equal placement total scores -> the placement whose name
(``<topology key>=<value>``) sorts first.

Layout: ``attempt`` (the ``Cycle``: a plain pod's attempt, a group attempt), ``validation``
(§5.1 hierarchy checks), ``placement`` (leaves: §5.2 default algorithm, §6.3 evaluation loop),
``composite`` (§7.2 CompositePodGroups, §5.1 step 7 status completion), ``diagnosis`` (fit
errors, the compact diagnosis), ``results`` (what an attempt produces).

Plugins are called through the scheduler's ``Profile`` (``scheduler.framework``):

* PreFilter (e.g. the elastic quota): before a plain pod is filtered, and before a group's root
  algorithm runs (after validation). A non-success status fails the attempt with it (plain pod:
  ``0/N nodes are available: <message>.``; group: the root status, so PostFilter still runs
  when it is Unschedulable);
* PlacementGenerate / PlacementScore: inside the placement evaluation (§6.2, §6.4);
* PostFilter / PodGroupPostFilter (preemption, ``scheduler/preemption/``): when the root status
  is ``Unschedulable`` (not UnschedulableAndUnresolvable, not Error), and for a plain pod after
  a failed filter. A result with a Success status means "waiting on preemption": nothing binds
  this cycle, the ``victims`` are removed from the state, ``nominations`` set the pods'
  nominated node, its ``decisions`` (e.g. PodPreempted) are emitted, and its message is
  appended to the group/pod message. ``request.reschedule()`` re-runs the root algorithm on the
  current snapshot (which the plugin may have modified inside its own ``backup``/``restore``)
  and returns the root status and the proposed ``pod key -> node`` assignments, leaving the
  snapshot unchanged.
"""

from scheduler.cycle.attempt import Cycle
from scheduler.cycle.composite import Algorithm, complete_results, results_ok
from scheduler.cycle.diagnosis import (
    DIAGNOSIS_BUDGET,
    compact_diagnosis,
    member_status,
    pod_failure,
    reason_of,
)
from scheduler.cycle.placement import gang_outcome
from scheduler.cycle.results import (
    Counters,
    GroupAttempt,
    LeafOutcome,
    PlacementEval,
)
from scheduler.cycle.validation import VALIDATION, validate
from scheduler.framework import PostFilterRequest, PostFilterResult, PreFilterRequest
from scheduler.messages import MSG_CHILD_ERROR, MSG_NO_PODS_SCHEDULABLE, MSG_NOMINATED_NO_POD, MSG_PLACEMENTS

__all__ = [
    "DIAGNOSIS_BUDGET",
    "MSG_CHILD_ERROR",
    "MSG_NOMINATED_NO_POD",
    "MSG_NO_PODS_SCHEDULABLE",
    "MSG_PLACEMENTS",
    "VALIDATION",
    "Algorithm",
    "Counters",
    "Cycle",
    "GroupAttempt",
    "LeafOutcome",
    "PlacementEval",
    "PostFilterRequest",
    "PostFilterResult",
    "PreFilterRequest",
    "compact_diagnosis",
    "complete_results",
    "gang_outcome",
    "member_status",
    "pod_failure",
    "reason_of",
    "results_ok",
    "validate",
]
