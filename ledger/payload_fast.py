"""Exact-type fast paths of ``events.validate_payload`` for the payloads the scheduler appends
most (a PodBound and a SchedulingCycleCompleted per bound pod): a payload whose every field
already has its model's exact JSON type (``str``, ``int`` not ``bool``, ``float``, ``None``) gets
the dict the pydantic model's ``model_dump(mode="json")`` returns, built without the model.
Anything else (a missing or unknown field, another type, a value the model would coerce)
returns None and goes through the model as before: these paths accept less, never more."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

_CYCLE_KEYS = frozenset({"cycle", "entity", "result", "durations_ms"})
_BOUND_KEYS = frozenset({"pod", "node", "group", "requests", "gpus"})


def cycle_completed(data: dict[str, Any]) -> dict[str, Any] | None:
    if data.keys() != _CYCLE_KEYS:
        return None
    cycle, entity, result, durations = data["cycle"], data["entity"], data["result"], data["durations_ms"]
    if type(cycle) is not int or type(entity) is not str or type(result) is not str:
        return None
    if type(durations) is not dict:
        return None
    for k, v in durations.items():
        if type(k) is not str or type(v) is not float or not math.isfinite(v):
            return None  # (the model's JSON dump writes a NaN or an infinity as null)
    return {"cycle": cycle, "entity": entity, "result": result, "durations_ms": dict(durations)}


def pod_bound(data: dict[str, Any]) -> dict[str, Any] | None:
    if not data.keys() <= _BOUND_KEYS:
        return None
    pod, node = data.get("pod"), data.get("node")
    group, requests, gpus = data.get("group"), data.get("requests"), data.get("gpus")
    if type(pod) is not str or type(node) is not str or (group is not None and type(group) is not str):
        return None
    if requests is not None:
        if type(requests) is not dict:
            return None
        for k, v in requests.items():
            if type(k) is not str or type(v) is not int:
                return None
        requests = dict(requests)
    out: dict[str, Any] = {"pod": pod, "node": node, "group": group, "requests": requests}
    if gpus is not None:  # the model's serializer leaves out ``gpus`` when None
        if type(gpus) is not list or any(type(i) is not int for i in gpus):
            return None
        out["gpus"] = list(gpus)
    return out


FAST: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    "SchedulingCycleCompleted": cycle_completed,
    "PodBound": pod_bound,
}
