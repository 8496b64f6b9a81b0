"""POST pods/{name}/eviction: the Eviction API (policy/v1 ``Eviction``).

The pod is deleted (``PodDeleted``, actor = the caller) unless a PodDisruptionBudget would be
violated: then 429 ``TooManyRequests`` naming the budget, as upstream answers, and nothing is
appended. Budgets count as the scheduler's preemption counts them (the eviction command,
``api/services/commands/evictions.py``)."""

from __future__ import annotations

from typing import Any

from api.k8s import backend
from api.k8s.handlers import Target, _write, dry
from api.k8s.options import dry_run_values
from api.k8s.status import K8sError, not_found, success
from ledger.database import Database
from ledger.uow import UnitOfWork


def evict(
    db: Database, t: Target, body: Any, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    """An Eviction as upstream reads it: the body must be an Eviction naming the pod of the URL
    (a garbage or mismatched body is 400 and deletes nothing); ``deleteOptions.dryRun`` and the
    ``dryRun`` query parameter make it a dry run."""
    res = t.res
    name = t.name or ""
    if not isinstance(body, dict):
        raise K8sError(400, "the request body must be an Eviction object")
    if body.get("kind") not in (None, "Eviction") or body.get("apiVersion") not in (
        None,
        "policy/v1",
        "policy/v1beta1",
    ):
        raise K8sError(
            400, f"the body is a {body.get('kind')!r} of {body.get('apiVersion')!r}, not a policy/v1 Eviction"
        )
    meta = body.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") != name:
        raise K8sError(400, "name in URL does not match name in Eviction object")
    options = body.get("deleteOptions")
    if options is not None and not isinstance(options, dict):
        raise K8sError(400, "deleteOptions must be an object (DeleteOptions)")
    dry_run = dry(q) or dry_run_values(_strings((options or {}).get("dryRun")), "DeleteOptions")
    ns = t.namespace or "default"

    def run(uow: UnitOfWork) -> dict[str, Any]:
        try:
            backend.evict(uow, ns, name, actor=actor)
        except LookupError:
            raise not_found(res, name) from None
        except backend.BudgetViolated as exc:
            raise K8sError(
                429,
                "Cannot evict pod as it would violate the pod's disruption budget.",
                reason="TooManyRequests",
                details={"causes": [{"reason": "DisruptionBudget", "message": str(exc)}]},
            ) from None
        return success(res, name)

    return 201, _write(db, run, dry_run)


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise K8sError(400, "deleteOptions.dryRun must be a list of strings")
    return list(value)
