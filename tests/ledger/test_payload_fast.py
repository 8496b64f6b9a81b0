"""``ledger.payload_fast``: for every payload it accepts, the same dict as the pydantic model's
dump (``events.validate_payload`` without the fast path); what it refuses goes to the model."""

from __future__ import annotations

from typing import Any

import pytest

from ledger import events
from ledger.errors import EventValidationError
from ledger.payload_fast import FAST


def _model(type_name: str, data: dict[str, Any]) -> dict[str, Any] | str:
    try:
        out: dict[str, Any] = events.REGISTRY[type_name].model.model_validate(data).model_dump(mode="json")
    except Exception as exc:  # noqa: BLE001 - any refusal: the fast path must not accept it
        return type(exc).__name__
    return out


CASES: list[tuple[str, dict[str, Any]]] = [
    ("SchedulingCycleCompleted", {"cycle": 3, "entity": "ns/p", "result": "scheduled", "durations_ms": {}}),
    ("SchedulingCycleCompleted", {"cycle": 3, "entity": "e", "result": "r", "durations_ms": {"f": 1.5}}),
    ("SchedulingCycleCompleted", {"cycle": 3, "entity": "e", "result": "r", "durations_ms": {"f": 1}}),
    (
        "SchedulingCycleCompleted",
        {"cycle": 3, "entity": "e", "result": "r", "durations_ms": {"f": float("nan")}},
    ),
    ("SchedulingCycleCompleted", {"cycle": 3, "entity": "e", "result": "r"}),
    ("SchedulingCycleCompleted", {"cycle": True, "entity": "e", "result": "r", "durations_ms": {}}),
    ("SchedulingCycleCompleted", {"cycle": "3", "entity": "e", "result": "r", "durations_ms": {}}),
    ("SchedulingCycleCompleted", {"cycle": 3, "entity": "e", "result": "r", "durations_ms": {}, "x": 1}),
    ("PodBound", {"pod": "ns/p", "node": "n", "group": None, "requests": None}),
    ("PodBound", {"pod": "ns/p", "node": "n", "group": "g", "requests": {"cpu": 100}, "gpus": [0, 3]}),
    ("PodBound", {"pod": "ns/p", "node": "n", "group": None, "requests": {"cpu": 100}, "gpus": None}),
    ("PodBound", {"pod": "ns/p", "node": "n"}),
    ("PodBound", {"pod": "ns/p", "node": "n", "requests": {"cpu": 1.0}}),
    ("PodBound", {"pod": "ns/p", "node": "n", "requests": {"cpu": True}}),
    ("PodBound", {"pod": "ns/p", "node": "n", "gpus": [True]}),
    ("PodBound", {"pod": "ns/p", "node": "n", "gpus": (1,)}),
    ("PodBound", {"pod": "ns/p", "node": None}),
    ("PodBound", {"pod": "ns/p"}),
    ("PodBound", {"pod": "ns/p", "node": "n", "group": 5}),
    ("PodBound", {"pod": "ns/p", "node": "n", "extra": 1}),
]


@pytest.mark.parametrize(("type_name", "data"), CASES)
def test_fast_path_is_the_models_dump(type_name: str, data: dict[str, Any]) -> None:
    want = _model(type_name, dict(data))
    got = FAST[type_name](dict(data))
    if got is not None:
        assert got == want
        assert type(want) is dict and list(got) == list(want)  # same fields, same order
    if type(want) is dict:
        assert events.validate_payload(type_name, dict(data)) == want
    else:
        with pytest.raises(EventValidationError):
            events.validate_payload(type_name, dict(data))
