"""Group conditions written by someone other than podledger's scheduler, and those ``attach``
sent to a cluster.

A condition a client writes through the status subresource of a PodGroup or CompositePodGroup
is recorded on the stream of podledger's own condition decisions as an observed input
(``meta.observed``, no ``cycle``: replay folds it and never recomputes it).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ledger import streams
from ledger.store import NewEvent, StoredEvent
from ledger.uow import UnitOfWork

__all__ = ["condition_sent", "record_conditions"]

_FIELDS = ("type", "status", "reason", "message")


def record_conditions(
    uow: UnitOfWork,
    kind: str,
    namespace: str,
    name: str,
    conditions: Sequence[Mapping[str, str]],
    *,
    actor: str,
    meta: Mapping[str, Any],
    effective_at: Sequence[datetime | None] | None = None,
    event_ids: Sequence[uuid.UUID | None] | None = None,
) -> list[StoredEvent]:
    """One ``<Kind>ConditionChanged`` per condition written through the status subresource of
    a PodGroup or CompositePodGroup (``kind``), or observed in a cluster by ``attach``
    (``effective_at``: each condition's own lastTransitionTime; ``event_ids``: idempotent)."""
    stream = streams.scheduler(kind, f"{namespace}/{name}")
    n = len(conditions)
    whens = list(effective_at or [None] * n)
    ids = list(event_ids or [None] * n)
    events = [
        NewEvent(
            stream,
            f"{kind}ConditionChanged",
            {"group": f"{namespace}/{name}", **{k: str(c.get(k) or "") for k in _FIELDS}},
            {"actor": actor, "observed": True, **meta},
            ids[i],
            whens[i],
        )
        for i, c in enumerate(conditions)
    ]
    return uow.append(events)


def condition_sent(
    uow: UnitOfWork, kind: str, data: Mapping[str, Any], meta: Mapping[str, Any]
) -> StoredEvent:
    """What ``attach --mode schedule`` got back when it wrote podledger's condition of group
    ``data["group"]`` (a ``kind``) to the cluster (``<Kind>ConditionSent``: outcome, HTTP code,
    message)."""
    ns, _, name = str(data["group"]).partition("/")
    ev = NewEvent(streams.attach(kind, ns, name), f"{kind}ConditionSent", dict(data), dict(meta))
    return uow.append([ev])[0]
