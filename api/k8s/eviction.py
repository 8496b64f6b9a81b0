"""POST pods/{name}/eviction: the Eviction API (policy/v1 ``Eviction``).

The pod is deleted (``PodDeleted``, actor = the caller) unless a PodDisruptionBudget would be
violated: then 429 ``TooManyRequests`` naming the budget, as upstream answers, and nothing is
appended. Budgets count as the scheduler's preemption counts them (api/k8s/backend.py
``blocking_budget``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from api.k8s import backend
from api.k8s.handlers import Target, _write
from api.k8s.status import K8sError, not_found, success


def evict(eng: Engine, t: Target, body: Any, actor: str, rid: str) -> tuple[int, dict[str, Any]]:
    res = t.res
    if body is not None and (not isinstance(body, dict) or body.get("kind") not in (None, "Eviction")):
        raise K8sError(400, "the request body must be an Eviction object")
    name = t.name or ""
    ns = t.namespace or "default"

    def run(conn: Any) -> dict[str, Any]:
        pod = backend.row(conn, "Pod", ns, name)
        if pod is None:
            raise not_found(res, name)
        blocked = backend.blocking_budget(conn, pod)
        if blocked is not None:
            budget, needs, has = blocked
            raise K8sError(
                429,
                "Cannot evict pod as it would violate the pod's disruption budget.",
                reason="TooManyRequests",
                details={
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {budget} needs {needs} healthy pods "
                            f"and has {has} currently",
                        }
                    ]
                },
            )
        backend.delete(conn, "Pod", ns, name, actor=actor)
        return success(res, name)

    return 201, _write(eng, run)
