"""Controller emulation: what a ReplicaSet/Job controller would do after a preemption.

A preempted pod with a controller ``ownerReference`` is re-created as a new pending pod: same
name, ``spec.nodeName`` removed, uid = uuid5(victim uid + the preemption event's position), actor
``controller``, reason ``PreemptedPodRecreated``. Everything derives from the preemption events,
so the recreation is deterministic and a redo produces the same event ids. This module only
builds the events; the bridge appends them (a transaction of their own, after the run's
decisions, so that ``replay --verify`` folds them as inputs).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ledger import streams
from ledger.store import NewEvent
from scheduler import decisions as d

RECREATE_ACTOR = "controller"
RECREATE_REASON = "PreemptedPodRecreated"


def has_controller(obj: Mapping[str, Any]) -> bool:
    """Does the pod manifest name a controller in its ``ownerReferences``?"""
    return any(o.get("controller") for o in obj.get("metadata", {}).get("ownerReferences") or ())


def preempted_owned(results: Sequence[d.CycleResult], owned: Mapping[str, Any]) -> list[str]:
    """Victims of ``results`` whose pod has a controller (in decision order)."""
    return [
        dec.victim
        for r in results
        for dec in r.decisions
        if isinstance(dec, d.PodPreempted) and dec.victim in owned
    ]


def recreations(
    victims: Sequence[str],
    owned: Mapping[str, Mapping[str, Any]],
    positions: Mapping[str, int],
    when: datetime,
    namespace: uuid.UUID,
) -> list[NewEvent]:
    """One ``PodCreated`` per victim: the controller's replacement pod."""
    batch: list[NewEvent] = []
    for key in victims:
        pos = positions.get(key, 0)
        obj = copy.deepcopy(dict(owned[key]))
        meta = obj.setdefault("metadata", {})
        old_uid = str(meta.get("uid") or key)
        meta["uid"] = str(uuid.uuid5(namespace, f"{old_uid}:{pos}"))
        (obj.get("spec") or {}).pop("nodeName", None)
        ns, name = key.split("/", 1)
        batch.append(
            NewEvent(
                streams.object_stream("Pod", ns, name),
                "PodCreated",
                {"object": obj},
                {"actor": RECREATE_ACTOR, "reason": RECREATE_REASON, "preempted_position": pos},
                uuid.uuid5(namespace, f"recreate:{old_uid}:{pos}"),
                when,
            )
        )
    return batch
