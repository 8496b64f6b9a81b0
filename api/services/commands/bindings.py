"""Pods bound by someone other than podledger's scheduler, and the bindings ``attach`` sent.

Every ``PodBound`` is built by ``scheduler.edge.decision_events.pod_bound_payload``, whoever
bound the pod. A binding podledger did not decide (a Binding through the Kubernetes API, a
binding ``attach`` saw a cluster's scheduler make) has no ``cycle`` in its meta: replay folds it
as an input and never recomputes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ledger import streams
from ledger.store import NewEvent, StoredEvent
from ledger.uow import UnitOfWork
from scheduler.edge.decision_events import pod_bound_payload

__all__ = ["bind", "binding_observed", "binding_sent", "pod_bound_event"]


def pod_bound_event(
    namespace: str,
    name: str,
    node: str,
    group: str | None,
    *,
    meta: Mapping[str, Any],
    event_id: uuid.UUID | None = None,
) -> NewEvent:
    """The ``PodBound`` of a pod bound outside podledger's scheduler (``group``: the pod's
    PodGroup name, None for a plain pod)."""
    data = pod_bound_payload(f"{namespace}/{name}", node, f"{namespace}/{group}" if group else None)
    return NewEvent(streams.scheduler("pod", f"{namespace}/{name}"), "PodBound", data, dict(meta), event_id)


def group_of(manifest: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod manifest names (``spec.schedulingGroup.podGroupName``), or None."""
    return ((manifest.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


def bind(
    uow: UnitOfWork, pod: Mapping[str, Any], node: str, *, actor: str, meta: Mapping[str, Any]
) -> StoredEvent:
    """A Binding (the pods/binding subresource): ``pod`` (a projection row) is bound to
    ``node`` by an outside scheduler."""
    ev = pod_bound_event(
        pod["namespace"], pod["name"], node, group_of(pod["object"]), meta={"actor": actor, **meta}
    )
    return uow.append([ev])[0]


def binding_observed(
    uow: UnitOfWork,
    manifest: Mapping[str, Any],
    node: str,
    *,
    cluster: str,
    scheduler: str,
    shadow: bool,
    meta: Mapping[str, Any],
    event_id: uuid.UUID,
) -> StoredEvent:
    """A binding ``attach`` saw in a cluster (``scheduler``: who made it). In mirror mode it is
    the pod's placement (a ``PodBound``); in shadow mode, where podledger places pods itself, a
    ``PodBindingObserved`` beside podledger's own, which the state does not fold."""
    md = manifest.get("metadata") or {}
    ns, name = md.get("namespace") or "default", md["name"]
    meta = {"actor": scheduler, "observed": True, **meta}
    if not shadow:
        ev = pod_bound_event(ns, name, node, group_of(manifest), meta=meta, event_id=event_id)
    else:
        group = group_of(manifest)
        data = {
            "pod": f"{ns}/{name}",
            "node": node,
            "group": f"{ns}/{group}" if group else None,
            "scheduler": scheduler,
            "cluster": cluster,
        }
        ev = NewEvent(streams.attach("pod", ns, name), "PodBindingObserved", data, meta, event_id)
    return uow.append([ev])[0]


def binding_sent(uow: UnitOfWork, data: Mapping[str, Any], meta: Mapping[str, Any]) -> StoredEvent:
    """What ``attach --mode schedule`` got back when it sent podledger's binding of
    ``data["pod"]`` to the cluster (``PodBindingSent``: outcome, HTTP code, message)."""
    ns, _, name = str(data["pod"]).partition("/")
    return uow.append(
        [NewEvent(streams.attach("binding", ns, name), "PodBindingSent", dict(data), dict(meta))]
    )[0]
