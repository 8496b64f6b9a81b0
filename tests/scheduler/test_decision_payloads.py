"""Decision payloads built directly (a PodBound, without ``as_dict``) and the verdict tracking's
type filter (``note_stored``) give what the generic paths give."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ledger.store import StoredEvent
from scheduler import decisions as d
from scheduler.edge import bridge as b


def _generic_bound(dec: d.PodBound) -> dict[str, Any]:
    data = dataclasses.asdict(dec)
    if dec.gpus is None:
        del data["gpus"]
    else:
        data["gpus"] = list(dec.gpus)
    data["requests"] = None  # the bridge fills in the pod's requests
    return data


@pytest.mark.parametrize(
    "dec",
    [
        d.PodBound("ns/a", "n1"),
        d.PodBound("ns/a", "n1", "ns/g"),
        d.PodBound("ns/a", "n1", None, ()),
        d.PodBound("ns/a", "n2", "ns/g", (3, 1)),
    ],
)
def test_a_pod_bound_payload_is_its_fields(dec):
    data = b.decision_payload(dec)
    assert list(data.items()) == list(_generic_bound(dec).items())  # same keys in the same order
    assert b.decision_event(dec) == (f"sched/pod/{dec.pod}", "PodBound", data)


def test_the_direct_pod_bound_payload_names_every_field():
    # a field added to PodBound must be added to decision_payload's PodBound branch too
    assert [f.name for f in dataclasses.fields(d.PodBound)] == ["pod", "node", "group", "gpus"]


def _noted(typ: str, filtered: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    br = b.Bridge(None)  # type: ignore[arg-type]
    br._last_pod = {"ns/a": ("fp", 1)}
    br._last_diag = {"ns/g": ("fp", 1)}
    data = {"pod": "ns/a", "victim": "ns/a", "group": "ns/g", "reason": "r", "message": "m", "codes": ["c"]}
    if filtered:
        br.note_stored([StoredEvent(7, "s", 1, typ, 1, None, data, {}, None, None)])  # type: ignore[arg-type]
    else:
        br._note_verdict(typ, data, 7)
    return br._last_pod, br._last_diag


@pytest.mark.parametrize("typ", sorted(b.DECISION_TYPES | {"PodCreated", "SchedulerStarted"}))
def test_note_stored_skips_only_events_that_track_no_verdict(typ):
    assert _noted(typ, filtered=True) == _noted(typ, filtered=False)
    unchanged = ({"ns/a": ("fp", 1)}, {"ns/g": ("fp", 1)})
    assert (_noted(typ, filtered=False) != unchanged) == (typ in b._VERDICT_TYPES)
