"""The entry point: ``admit(objects, state)`` runs every admission rule on a request's objects.

Objects are admitted in order, each against the stored state overlaid with the objects admitted
before it (``state.Batch``). Per object: an update carries the server-filled fields over and
checks immutability (``immutability``); a new object gets its priority (``priority``), a new
group its references checked (``references``), a new quota its uniqueness (``quotas``); a
Workload's template tree is checked on create and update (``templates``). The object is then
``created``, ``updated``, ``unchanged`` (same manifest) or ``rejected`` (``outcome``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ledger.resources.admission.immutability import carry_server_fields, immutable_problems, uid_problems
from ledger.resources.admission.jobs import job_update_problems, jobset_update_problems
from ledger.resources.admission.outcome import Action, AdmissionOutcome, AdmissionResult, Rejection
from ledger.resources.admission.priority import admit_priority
from ledger.resources.admission.quotas import elastic_quota_problems, quota_tree_problems
from ledger.resources.admission.references import workload_ref_problems
from ledger.resources.admission.state import AdmissionState, Batch
from ledger.resources.admission.templates import workload_problems
from ledger.resources.models import (
    CompositePodGroup,
    ElasticQuota,
    ElasticQuotaTree,
    Pod,
    PodGroup,
    Resource,
    Workload,
    model_for,
)
from ledger.resources.models.batch import Job
from ledger.resources.models.jobset import JobSet


def admit(objects: Sequence[Resource], state: AdmissionState) -> AdmissionOutcome:
    """Admit a request's objects in order against ``state`` (pure; nothing is written)."""
    batch = Batch(state)
    results: list[AdmissionResult] = []
    for index, obj in enumerate(objects):
        key = obj.key
        previous = batch.get(*key)
        admitted, reasons = _admit_one(obj, previous, batch)
        ns = obj.metadata.namespace
        if reasons:
            results.append(
                AdmissionResult(index, obj.KIND, ns, obj.name, "rejected", None, None, previous, reasons)
            )
            continue
        normalized = admitted.normalized()
        action: Action
        if previous is None:
            action = "created"
        elif _same(normalized, previous):
            action = "unchanged"
        else:
            action = "updated"
        results.append(AdmissionResult(index, obj.KIND, ns, obj.name, action, admitted, normalized, previous))
        batch.put(key, normalized)
    return AdmissionOutcome(results)


def _same(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Identical as far as the user's manifest goes (a stored ``status`` is ignored except for Nodes)."""
    if new.get("kind") == "Node":
        return dict(new) == dict(old)
    return {k: v for k, v in new.items() if k != "status"} == {k: v for k, v in old.items() if k != "status"}


def _admit_one(
    obj: Resource, previous: Mapping[str, Any] | None, batch: Batch
) -> tuple[Resource, list[Rejection]]:
    """The object as it would be stored, and the reasons to reject it (in a fixed order)."""
    old = model_for(obj.KIND).from_normalized(previous) if previous is not None else None
    reasons: list[Rejection] = []
    if old is not None:
        obj = carry_server_fields(obj, old)
        reasons += uid_problems(obj, old)
    if isinstance(obj, Workload):
        reasons += workload_problems(obj)
    if old is not None:
        if isinstance(obj, Job) and isinstance(old, Job):
            reasons += job_update_problems(obj, old)
        elif isinstance(obj, JobSet) and isinstance(old, JobSet):
            reasons += jobset_update_problems(obj, old)
        return obj, reasons + immutable_problems(obj, old)
    if isinstance(obj, Pod | PodGroup | CompositePodGroup):
        obj, more = admit_priority(obj, batch)
        reasons += more
    if isinstance(obj, PodGroup | CompositePodGroup):
        reasons += workload_ref_problems(obj, batch)
    elif isinstance(obj, ElasticQuota):
        reasons += elastic_quota_problems(obj, batch)
    elif isinstance(obj, ElasticQuotaTree):
        reasons += quota_tree_problems(batch)
    return obj, reasons
