"""POST pods/{name}/eviction: the Eviction API (policy/v1 ``Eviction``).

The pod is deleted (``PodDeleted``, actor = the caller) unless a PodDisruptionBudget would be
violated: then 429 ``TooManyRequests`` naming the budget, as upstream answers, and nothing is
appended. Budgets count as the scheduler's preemption counts them (the eviction command,
``api/services/commands/evictions.py``)."""

from __future__ import annotations

from typing import Any

from api.k8s import backend
from api.k8s.handlers import Target, _write
from api.k8s.status import K8sError, not_found, success
from ledger.database import Database
from ledger.uow import UnitOfWork


def evict(db: Database, t: Target, body: Any, actor: str, rid: str) -> tuple[int, dict[str, Any]]:
    res = t.res
    if body is not None and (not isinstance(body, dict) or body.get("kind") not in (None, "Eviction")):
        raise K8sError(400, "the request body must be an Eviction object")
    name = t.name or ""
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

    return 201, _write(db, run)
