"""Updates of a stored Job (upstream ``ValidateJobSpecUpdate`` and KEP-5547's update rules).

``parallelism`` and ``scheduling.schedulingPolicy.gang.minCount`` may change (elastic Jobs: the
controller recompiles the Workload and PodGroup; a raised ``minCount`` is checked against the
new ``parallelism`` by the Job's own rules). Everything else of ``spec.scheduling`` is immutable,
the basic/gang variant cannot be switched and a policy cannot be added or removed; so are
``completions``, ``completionMode`` and the pod template.
"""

from __future__ import annotations

from typing import Any

from ledger.resources.admission.outcome import Rejection
from ledger.resources.models.batch import Job
from ledger.resources.models.jobset import JobSet


def _variant(scheduling: dict[str, Any]) -> str | None:
    policy = scheduling.get("schedulingPolicy")
    if policy is None:
        return None
    return "gang" if "gang" in policy else "basic"


def job_update_problems(job: Job, old: Job) -> list[Rejection]:
    new_spec, old_spec = job.normalized()["spec"], old.normalized()["spec"]
    reasons = [
        Rejection(f"spec.{key}", "field is immutable")
        for key in ("completions", "completionMode", "template")
        if new_spec.get(key) != old_spec.get(key)
    ]
    new_s, old_s = new_spec.get("scheduling") or {}, old_spec.get("scheduling") or {}
    before, after = _variant(old_s), _variant(new_s)
    if before != after:
        reasons.append(
            Rejection(
                "spec.scheduling.schedulingPolicy",
                f"field is immutable: cannot change from {before or 'unset'} to {after or 'unset'} "
                "(only gang.minCount may change)",
            )
        )
    for key in ("schedulingConstraints", "disruptionMode", "resourceClaims"):
        if new_s.get(key) != old_s.get(key):
            reasons.append(Rejection(f"spec.scheduling.{key}", "field is immutable"))
    return reasons


def jobset_update_problems(js: JobSet, old: JobSet) -> list[Rejection]:
    """A stored JobSet's updates (KEP-969): ``spec.scheduling`` is immutable once the JobSet runs
    (it may change while the stored JobSet is suspended); the ReplicatedJobs are immutable
    (elastic JobSets are not modelled); ``suspend`` may change."""
    new_spec, old_spec = js.normalized()["spec"], old.normalized()["spec"]
    reasons = []
    if new_spec.get("replicatedJobs") != old_spec.get("replicatedJobs"):
        reasons.append(Rejection("spec.replicatedJobs", "field is immutable"))
    if new_spec.get("scheduling") != old_spec.get("scheduling") and not old.spec.suspend:
        reasons.append(Rejection("spec.scheduling", "field is immutable while the JobSet is not suspended"))
    return reasons


__all__ = ["job_update_problems", "jobset_update_problems"]
