"""Preemption: workload-aware PodGroupPostFilter, classic pod-level DefaultPreemption and
elastic-quota preemption (docs/semantics.md §8–§10, §11.4 and Q.1).

The plugin is the profile's PostFilter (``scheduler.profile``): it runs when an attempt
ends ``Unschedulable`` and returns a ``PostFilterResult``. A Success result means "waiting on
preemption": the facade removes the victims, records the nominations and requeues the pods;
nothing binds in the same cycle, the next cycle tries the nominated nodes first.

Layout: ``units`` (victim units, importance), ``pdb`` (budgets), ``common`` (rules, messages,
choices, shared helpers), ``workload`` (simulation engine, workload-aware preemption),
``classic`` (per-node DefaultPreemption), ``elastic`` (quota rules), ``plugin`` (the PostFilter
plugin that picks the algorithm). The quota PreFilter it re-checks is ``plugins/elastic_quota``.

Algorithm selection (``SchedulerConfig.preemption_algorithm``)
  * ``None``: no preemption at all;
  * ``Default``: workload-aware preemption for PodGroup/CompositePodGroup preemptors, classic
    DefaultPreemption for plain pods;
  * ``ElasticQuota``: the quota rules 1–7 of docs/semantics.md Q.4 for every preemptor (rule 6: a
    preemptor in no quota cannot preempt);
  * ``Auto`` (default): ``ElasticQuota`` when the preemptor's namespace belongs to an elastic
    quota, otherwise ``Default``.

Victim units (§8)
  A scheduled pod belongs to the unit of its *highest* ancestor (PodGroup, then parent
  CompositePodGroups up to the root) whose disruption mode is All; the unit holds every scheduled
  pod of that ancestor's subtree, on any node, and is evicted or kept as a whole. Without an All
  ancestor the pod is its own unit. Unit priority = the priority of the hierarchy's root group
  (a missing parent ends the walk: the highest existing group); plain pods: the pod priority.
  Only units with priority strictly below the preemptor's are candidates.

Importance of units (most important first; ``Unit.importance``)
  1. higher priority;  2. rank: CompositePodGroup unit (3) > PodGroup unit or member of a
  PodGroup (2) > plain pod (1);  3. more pods;  4. earlier start time (the earliest start of its
  pods; older is more important);  5. UID ascending: of two otherwise equal units the one whose
  UID (object uid, or its key when empty) sorts *first* is the more important, so the one that
  sorts last is evicted first (as upstream's util.go orders it, docs/semantics.md §10.2).

PDB accounting
  A PodDisruptionBudget allows ``healthy - desired`` disruptions (``minAvailable``) or
  ``maxUnavailable - (expected - healthy)`` (``maxUnavailable``); healthy = matching bound pods,
  expected = all matching pods; percentages round up over ``expected``. Units are processed in a
  given order against shared budgets; a unit whose eviction (all its matching pods at once)
  drives some budget below zero is *violating*.

Workload-aware preemption (groups, §10.2)
  Eligibility: ``preemptionPolicy: Never`` (the group's, or the first pod's with the
  PodGroupPreemptionPolicy gate off) -> ``not eligible due to preemptionPolicy=Never.``; a member
  whose nominated node still hosts a lower-priority pod that is terminating because of preemption
  -> Success ``ongoing preemption on nominated nodes`` keeping the nominations (victims here are
  deleted at once, so only a caller that fills ``Preemption.terminating`` sees this); no
  candidate unit -> UnschedulableAndUnresolvable ``No preemption victims found for incoming
  preemptor``. Then two *choices* are simulated on the snapshot (always restored afterwards):
  (a) the spec algorithm: remove every candidate unit, re-run the root algorithm once
      (``PostFilterRequest.reschedule``), fix its proposed assignments, reprieve;
  (b) victim-aware: the shortest prefix of the candidates ordered least important first whose
      removal lets the root algorithm succeed placing as many pods as (a) does (binary search,
      feasibility being monotone in the removed set), then the same fix-and-reprieve on it.
  Reprieve: PDB-violating units first, then the others, each most important first; a unit is
  put back and kept only if every proposed assignment still passes Filter (node resources,
  including nominated pods of priority >= the preemptor's, and the quota PreFilter); otherwise it
  is removed again and becomes a victim. If (a)'s simulation fails nothing is evicted and the
  simulation's status is returned. A topology-constrained group is placed by the simulation in
  one domain, and the reprieve puts back every unit outside it, so victims stay in that domain.
  Messages carry the prefix ``pod group preemption: ``; success reads ``found a placement for
  podgroup, preempting %d victims`` (%d counts victim pods).

Classic DefaultPreemption (plain pods)
  Candidate nodes are those passing the node-static filters (the others are "not helpful").
  Per node: remove every lower-priority unit that has a pod there (an All unit is removed with
  its pods on other nodes too), check the pod fits, reprieve (violating first, then others, most
  important first) keeping a unit when the pod still fits. Nodes are visited in snapshot order
  until ``max(100, 10% of nodes)`` candidates are found (upstream's dry-run bound). When the
  pod failed the quota PreFilter rather than node filters, the group simulation is used instead.
  Messages: ``preemption: 0/N nodes are available: ...`` on failure.

Choosing among feasible choices (all algorithms)
  0. (groups) more preemptor pods placed; then
  1. fewer PDB-violating victim units; 2. lower highest victim priority; 3. smaller sum of the
  victims' priorities (per pod); 4. fewer victim pods; then the first choice found ((a) before
  (b); for plain pods the lowest node index).

Elastic quota preemption (docs/semantics.md Q.4 rules 1–7)
  The pending pods of the attempt form one preemption list (rule 1; the group's priority is the
  preemptor priority). Request = their summed requests; ``used`` is the quota usage in the
  snapshot. If the leaf quota has ``used + request <= min`` (taking back its guarantee), eligible
  victims are units of *other* quotas that use more than their ``min``, any priority (rule 4,
  rule ``ElasticQuota:borrowed``); otherwise units of the preemptor's own quota with strictly
  lower priority (rule 5, rule ``ElasticQuota:own-quota``). Units whose eviction alone would
  violate a PDB are not eligible (rule 3), nor units without a pod on a candidate node (a node
  passing the static filters for at least one pending pod, rule 2). The simulation and reprieve
  are those of workload-aware preemption with the quota PreFilter included (rule 7). Messages
  carry the prefix ``elastic quota preemption: ``.

Each victim becomes a ``PodPreempted`` decision naming the preemptor, the rule, the unit, its
disruption mode, the PDB outcome, both priorities, the upstream event text and the
``DisruptionTarget`` condition message; when the preemptor is in a quota, ``quota`` records that
quota's name, used, min, max and the request at that moment (and the victim's quota).
"""

from scheduler.messages import (
    MSG_CONDITION,
    MSG_FOUND,
    MSG_NEVER,
    MSG_NO_VICTIMS,
    MSG_NO_VICTIMS_POD,
    MSG_NOT_HELPFUL,
    MSG_ONGOING,
    PG_PREFIX,
    POD_PREFIX,
)
from scheduler.preemption.common import (
    ALGO_AUTO,
    ALGO_DEFAULT,
    ALGO_EQ,
    ALGO_NONE,
    EQ_PREFIX,
    MSG_FOUND_EQ,
    MSG_NOT_IN_QUOTA,
    RULE_DEFAULT,
    RULE_EQ_BORROWED,
    RULE_EQ_OWN,
    RULE_WAP,
    Choice,
    QuotaCtx,
)
from scheduler.preemption.pdb import Budgets
from scheduler.preemption.plugin import Preemption
from scheduler.preemption.units import RANK_CPG, RANK_PG, RANK_POD, Unit, Units

__all__ = [
    "ALGO_AUTO",
    "ALGO_DEFAULT",
    "ALGO_EQ",
    "ALGO_NONE",
    "EQ_PREFIX",
    "MSG_CONDITION",
    "MSG_FOUND",
    "MSG_FOUND_EQ",
    "MSG_NEVER",
    "MSG_NOT_HELPFUL",
    "MSG_NOT_IN_QUOTA",
    "MSG_NO_VICTIMS",
    "MSG_NO_VICTIMS_POD",
    "MSG_ONGOING",
    "PG_PREFIX",
    "POD_PREFIX",
    "RANK_CPG",
    "RANK_PG",
    "RANK_POD",
    "RULE_DEFAULT",
    "RULE_EQ_BORROWED",
    "RULE_EQ_OWN",
    "RULE_WAP",
    "Budgets",
    "Choice",
    "Preemption",
    "QuotaCtx",
    "Unit",
    "Units",
]
