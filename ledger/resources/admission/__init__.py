"""Admission: pure checks run on valid objects before anything is appended.

``admit(objects, state)`` decides, object by object and in order, whether each one is
``created``, ``updated``, ``unchanged`` or ``rejected``; objects admitted earlier in the same
request are visible to later ones (a PriorityClass or Workload defined at the top of a file
can be used further down). If any object is rejected the whole request is refused
(``outcome.refused``): the caller appends nothing but one ``AdmissionRejected`` event built
from ``outcome.rejection_record()``.

One module per rule (docs/semantics.md §2.5, §2.6, §9 and Q.1):

* ``priority``: priority and ``preemptionPolicy`` of new Pods, PodGroups and CompositePodGroups;
* ``templates``: the Workload template tree (upstream's ``ValidateWorkloadSpec``: at most 8
  templates per list, depth at most 4, unique names, one priority; disruption-mode nesting);
* ``references``: ``workloadRef`` names an existing Workload and template of the matching kind,
  and a group's parent CompositePodGroup references the same Workload;
* ``immutability``: server-filled fields carried over on update, immutable fields unchanged;
* ``quotas``: one ElasticQuota per namespace, one ElasticQuotaTree per cluster;
* ``request``: the entry point ``admit`` (the order the rules run in); ``state``: what admission
  reads; ``outcome``: what it answers.
"""

from ledger.resources.admission.outcome import Action, AdmissionOutcome, AdmissionResult, Rejection
from ledger.resources.admission.request import admit
from ledger.resources.admission.state import AdmissionState, InMemoryState
from ledger.resources.admission.templates import MAX_TEMPLATES, MAX_TREE_DEPTH, workload_problems

__all__ = [
    "MAX_TEMPLATES",
    "MAX_TREE_DEPTH",
    "Action",
    "AdmissionOutcome",
    "AdmissionResult",
    "AdmissionState",
    "InMemoryState",
    "Rejection",
    "admit",
    "workload_problems",
]
