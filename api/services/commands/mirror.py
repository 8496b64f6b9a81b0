"""Changes seen in a live cluster (``attach``), as the input events podledger already has.

- An object added or modified goes through ``apply_objects`` (validation, admission, the
  ``<Kind>Created``/``Updated`` event): an object whose manifest did not change appends
  nothing, which makes a re-list idempotent. One that was deleted and re-created under the same
  name while nobody watched is deleted first.
- An object deleted (or missing from a re-list): ``delete_objects`` (``<Kind>Deleted``).
- A pod whose ``spec.nodeName`` the cluster set: ``bindings.binding_observed``.

Event ids derive from the caller's keys (cluster, uid, resourceVersion), so the same remote
change is never appended twice, even by two racing processes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from api.services.commands.bindings import binding_observed
from api.services.commands.conditions import record_conditions
from api.services.commands.objects import apply_objects, delete_objects
from ledger import streams
from ledger.queries.log import last_event_of
from ledger.queries.objects import projection_rows
from ledger.resources.models import Resource
from ledger.store import NewEvent
from ledger.uow import UnitOfWork

# outcomes of one change
CREATED, UPDATED, UNCHANGED, DELETED, BOUND = "created", "updated", "unchanged", "deleted", "bound"
DEFERRED, REJECTED, INVALID, ABSENT = "deferred", "rejected", "invalid", "absent"
OBSERVED = "observed"  # a verdict of the cluster's scheduler recorded

Key = tuple[str, str, str]  # (kind, namespace, name)

__all__ = [
    "record_binding",
    "record_cluster_event",
    "record_deletion",
    "record_group_verdict",
    "record_invalid",
    "record_object",
    "record_pod_verdict",
]


def record_invalid(
    uow: UnitOfWork, data: Mapping[str, Any], *, meta: Mapping[str, Any], event_id: uuid.UUID
) -> str:
    """Something the cluster sent that cannot be recorded (``RemoteObjectInvalid``: cluster,
    kind, namespace, name, uid, resource_version, reason, size): INVALID. The same thing seen
    again (``event_id`` derives from it) appends nothing more."""
    ns, name = data.get("namespace") or "_", data.get("name") or "_"
    uow.append(
        [
            NewEvent(
                streams.attach("invalid", ns, name), "RemoteObjectInvalid", dict(data), dict(meta), event_id
            )
        ]
    )
    return INVALID


def record_deletion(
    uow: UnitOfWork, key: Key, uid: str | None, *, actor: str, meta: Mapping[str, Any], idempotency_key: str
) -> str:
    """The remote object ``key`` (remote uid ``uid``) is gone: DELETED, or ABSENT when the ledger
    no longer holds it (or holds a newer incarnation under the same name)."""
    kind, ns, name = key
    local = projection_rows(uow.conn, kind, ns or None, name)
    if not local or (uid and local[0]["uid"] and local[0]["uid"] != uid):
        return ABSENT
    delete_objects(uow, [(kind, ns or None, name)], actor=actor, meta=meta, idempotency_key=idempotency_key)
    return DELETED


def record_object(
    uow: UnitOfWork,
    key: Key,
    uid: str | None,
    parsed: Resource,
    *,
    actor: str,
    source: str,
    meta: Mapping[str, Any],
    keys: Mapping[str, str],
    defer: bool,
    created_at: datetime | None = None,
) -> tuple[list[str], dict[str, Any] | None, str]:
    """The remote object ``key`` as it is now (``parsed``, validated): the outcomes, the ledger's
    row of it before this change (None: new), and admission's refusal if any. ``keys`` are the
    idempotency keys of the ``apply`` and of a ``delete`` of an older incarnation. Refused by
    admission (a reference to an object not mirrored yet): DEFERRED with nothing written when
    ``defer``, else REJECTED (the refusal recorded)."""
    kind, ns, name = key
    outcomes: list[str] = []
    local = projection_rows(uow.conn, kind, ns or None, name)
    before: dict[str, Any] | None = local[0] if local else None
    if before is not None and uid and before["uid"] and before["uid"] != uid:
        # the object was deleted and re-created under the same name while we were away
        outcomes.append(
            record_deletion(uow, key, before["uid"], actor=actor, meta=meta, idempotency_key=keys["delete"])
        )
        before = None
    with uow.savepoint() as sp:
        # a new object's Created event is dated by the cluster's creationTimestamp (recorded_at
        # stays when attach saw it), so wait times are the cluster's
        result = apply_objects(
            uow,
            [parsed],
            actor=actor,
            source=source,
            meta=meta,
            idempotency_key=keys["apply"],
            effective_at=created_at if before is None else None,
            expand=False,  # the cluster's Job controller made the Job's objects: they are mirrored
        )
        if result.rejected and defer:
            sp.rollback()
    if result.rejected:
        return [DEFERRED if defer else REJECTED], before, "; ".join(result.errors)
    line = result.lines[0] if result.lines else ""
    action = line.rpartition(" ")[2]
    outcomes.append(action if action in (CREATED, UPDATED) else UNCHANGED)
    return outcomes, before, ""


def record_binding(
    uow: UnitOfWork,
    manifest: Mapping[str, Any],
    node: str,
    uid: str,
    *,
    cluster: str,
    scheduler: str,
    shadow: bool,
    meta: Mapping[str, Any],
    event_id: uuid.UUID,
) -> str | None:
    """The cluster placed pod ``manifest`` on ``node``: BOUND, or None when the ledger already
    shows that placement (mirror: the pod's node; shadow: the last observed binding)."""
    md = manifest.get("metadata") or {}
    ns, name = md.get("namespace") or "default", md["name"]
    if shadow:
        last = last_event_of(uow.conn, streams.attach("pod", ns, name))
        if last is not None and (last[0].get("node"), (last[1].get("attach") or {}).get("uid")) == (
            node,
            uid,
        ):
            return None
    else:
        current = projection_rows(uow.conn, "Pod", ns, name)
        if current and (current[0]["status"] or {}).get("nodeName") == node:
            return None
    binding_observed(
        uow, manifest, node, cluster=cluster, scheduler=scheduler, shadow=shadow, meta=meta, event_id=event_id
    )
    return BOUND


def _condition(status: Mapping[str, Any] | None, ctype: str) -> Mapping[str, Any] | None:
    for c in (status or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == ctype:
            return c
    return None


def _same(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    if a is None or b is None:
        return a is b
    return all(str(a.get(k) or "") == str(b.get(k) or "") for k in ("status", "reason", "message"))


def record_pod_verdict(
    uow: UnitOfWork,
    namespace: str,
    name: str,
    status: Mapping[str, Any],
    *,
    scheduler: str,
    meta: Mapping[str, Any],
    event_id: Callable[[str], uuid.UUID],
    when: Callable[[Any], datetime | None],
) -> list[str]:
    """The cluster scheduler's verdict on a pod it has not bound (mirror mode), as observed
    inputs the state folds (``meta.observed``, no ``cycle``): its ``PodScheduled=False``
    condition as a ``PodUnschedulable`` (reason and message, at the condition's
    lastTransitionTime) and its ``status.nominatedNodeName`` as a ``PodNominated``; only what
    differs from the ledger's pod. OBSERVED per event appended."""
    rows = projection_rows(uow.conn, "Pod", namespace, name)
    if not rows or (rows[0]["status"] or {}).get("nodeName"):
        return []
    local = rows[0]["status"] or {}
    key = f"{namespace}/{name}"
    base = {"actor": scheduler, "observed": True, **meta}
    events: list[NewEvent] = []
    cond = _condition(status, "PodScheduled")
    if (
        cond is not None
        and cond.get("status") == "False"
        and not _same(cond, _condition(local, "PodScheduled"))
    ):
        data = {
            "pod": key,
            "reason": str(cond.get("reason") or ""),
            "message": str(cond.get("message") or ""),
        }
        ltt = cond.get("lastTransitionTime")
        events.append(
            NewEvent(
                streams.scheduler("pod", key),
                "PodUnschedulable",
                data,
                base,
                event_id(f"unschedulable\x1f{ltt}\x1f{data['reason']}\x1f{data['message']}"),
                when(ltt),
            )
        )
    nominated = str(status.get("nominatedNodeName") or "") or None
    if nominated != (local.get("nominatedNodeName") or None):
        events.append(
            NewEvent(
                streams.scheduler("pod", key),
                "PodNominated",
                {"pod": key, "node": nominated},
                base,
                event_id(f"nominated\x1f{nominated}"),
            )
        )
    if events:
        uow.append(events)
    return [OBSERVED] * len(events)


def record_group_verdict(
    uow: UnitOfWork,
    kind: str,
    namespace: str,
    name: str,
    status: Mapping[str, Any],
    *,
    scheduler: str,
    meta: Mapping[str, Any],
    event_id: Callable[[str], uuid.UUID],
    when: Callable[[Any], datetime | None],
) -> list[str]:
    """The conditions the cluster's scheduler wrote on a PodGroup or CompositePodGroup
    (``kind``), recorded as the status subresource records them (``<Kind>ConditionChanged``,
    observed), each at its own lastTransitionTime; only those that differ from the ledger's."""
    rows = projection_rows(uow.conn, kind, namespace, name)
    if not rows:
        return []
    local = rows[0]["status"] or {}
    changed = [
        c
        for c in (status.get("conditions") or [])
        if isinstance(c, Mapping) and c.get("type") and not _same(c, _condition(local, str(c["type"])))
    ]
    if not changed:
        return []
    record_conditions(
        uow,
        kind,
        namespace,
        name,
        changed,
        actor=scheduler,
        meta=meta,
        effective_at=[when(c.get("lastTransitionTime")) for c in changed],
        event_ids=[
            event_id(
                f"condition\x1f{c['type']}\x1f{c.get('status')}\x1f{c.get('reason')}\x1f{c.get('message')}"
            )
            for c in changed
        ],
    )
    return [OBSERVED] * len(changed)


def record_cluster_event(
    uow: UnitOfWork,
    data: Mapping[str, Any],
    *,
    meta: Mapping[str, Any],
    event_id: uuid.UUID,
    effective_at: datetime | None,
) -> str:
    """A scheduling Event of the cluster (``ClusterEventObserved``) on the stream
    ``attach/event/<kind>/<namespace>/<name>`` of the object it is about; the same (Event,
    count) seen again appends nothing (``event_id``)."""
    ns, _, name = str(data["object"]).rpartition("/")
    stream = streams.attach(f"event/{str(data['kind']).lower()}", ns or "_", name)
    uow.append([NewEvent(stream, "ClusterEventObserved", dict(data), dict(meta), event_id, effective_at)])
    return OBSERVED
