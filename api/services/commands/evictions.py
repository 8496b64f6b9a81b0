"""Evictions: the Eviction subresource (a pod deleted unless a PodDisruptionBudget forbids it),
and the evictions ``attach`` sent to a cluster.

Budgets are counted as podledger's preemption counts them (``scheduler/preemption/pdb.py``):
a bound pod is healthy; a pod that is not bound does not use up the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.services.commands.objects import delete_object
from api.services.errors import NotFound, ServiceError
from ledger import streams
from ledger.queries.objects import projection_rows
from ledger.sql import Conn
from ledger.store import NewEvent, StoredEvent
from ledger.uow import UnitOfWork
from scheduler.edge.translate import pdb_from, pod_from
from scheduler.preemption.pdb import budget_blocks

__all__ = ["BudgetViolated", "blocking_budget", "evict", "eviction_sent"]


@dataclass(frozen=True)
class Blocked:
    budget: str  # the PodDisruptionBudget's name
    needs: int  # healthy pods it needs
    has: int  # healthy pods it has


class BudgetViolated(ServiceError):
    """Evicting the pod would violate a PodDisruptionBudget; nothing was appended."""

    code = "budget"

    def __init__(self, blocked: Blocked) -> None:
        super().__init__(
            f"The disruption budget {blocked.budget} needs {blocked.needs} healthy pods "
            f"and has {blocked.has} currently"
        )
        self.blocked = blocked


def blocking_budget(conn: Conn, pod: Mapping[str, Any]) -> Blocked | None:
    """The first PodDisruptionBudget (by name) that evicting ``pod`` (a projection row) would
    violate, or None."""
    if not (pod["status"] or {}).get("nodeName"):
        return None
    ns = pod["namespace"]
    pdbs = [pdb_from(r["object"]) for r in projection_rows(conn, "PodDisruptionBudget", ns)]
    if not pdbs:
        return None
    pods = [
        pod_from(r["object"], i, 0.0, r["status"]) for i, r in enumerate(projection_rows(conn, "Pod", ns))
    ]
    target = pod_from(pod["object"], 0, 0.0, pod["status"])
    found = budget_blocks(pdbs, pods, target)
    return None if found is None else Blocked(*found)


def evict(uow: UnitOfWork, namespace: str, name: str, *, actor: str) -> StoredEvent:
    """Evict pod ``namespace/name``: its ``PodDeleted`` (actor = the caller) in ``uow``. Raises
    NotFound, or BudgetViolated (nothing appended)."""
    rows = projection_rows(uow.conn, "Pod", namespace, name)
    if not rows:
        raise NotFound(f'Pod "{namespace}/{name}" not found')
    blocked = blocking_budget(uow.conn, rows[0])
    if blocked is not None:
        raise BudgetViolated(blocked)
    return delete_object(uow, "Pod", namespace, name, actor=actor)


def eviction_sent(uow: UnitOfWork, data: Mapping[str, Any], meta: Mapping[str, Any]) -> StoredEvent:
    """What ``attach --mode schedule`` got back when it evicted a victim of podledger's
    preemption, ``data["pod"]``, in the cluster (``PodEvictionSent``)."""
    ns, _, pod = str(data["pod"]).partition("/")
    ev = NewEvent(streams.attach("eviction", ns, pod), "PodEvictionSent", dict(data), dict(meta))
    return uow.append([ev])[0]
