"""KEP-5501's wording (SchedulingGated vs NotReadyForScheduling and their messages) is the
scheduler's: a PodGated payload (v2) carries the condition's reason and message and the ledger's
projection copies them. A log written before (PodGated v1, no wording) still projects and
replays identically: the upcaster words what the payload says, the projection keeps the
kube-apiserver's SchedulingGated for a pod with gates of its own, and ``replay --verify``
compares a v1 event with the replayed decision as a v1 writer stored it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from api.services.replay import verify_replay
from api.services.simulate import Simulation, load_scenario, private_ledger
from ledger import events
from ledger.projections.runner import rebuild_current
from scheduler import decisions
from scheduler.edge import decision_events

WL02 = Path(__file__).resolve().parent.parent / "scenarios" / "wl-02-not-ready-for-scheduling.yaml"
CONDITIONS = "SELECT name, status->'conditions' FROM objects WHERE kind = 'Pod' ORDER BY name"


def _gated(database: Any) -> list[tuple[int, dict[str, Any]]]:
    with database.connect() as conn:
        rows = conn.execute(
            "SELECT schema_version, data FROM events WHERE type = 'PodGated' ORDER BY position"
        )
        return [(int(v), dict(d)) for v, d in rows]


def _conditions(database: Any) -> list[tuple[str, Any]]:
    with database.connect() as conn:
        return [(n, c) for n, c in conn.execute(CONDITIONS)]


def test_the_scheduler_words_the_condition(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", server_url)
    name, spec = load_scenario(yaml.safe_load(WL02.read_text()))
    with private_ledger() as database:
        assert Simulation(database, spec, name).run(list(spec["steps"])).passed
        gated = {d["pod"]: (v, d.get("reason"), d.get("condition_message")) for v, d in _gated(database)}
        assert gated["default/p3"] == (
            2,
            "SchedulingGated",
            "Scheduling is blocked due to non-empty scheduling gates",
        )
        assert gated["default/lonely"][:2] == (2, "NotReadyForScheduling")
        assert verify_replay(database).ok


def test_a_v1_log_projects_and_replays_identically(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", server_url)
    name, spec = load_scenario(yaml.safe_load(WL02.read_text()))
    real = decision_events.decision_payload

    def v1_payload(dec: decisions.Decision) -> dict[str, Any]:
        data = real(dec)
        if isinstance(dec, decisions.PodGated):  # the v1 writer: no condition wording
            data.pop("reason", None)
            data.pop("condition_message", None)
        return data

    with private_ledger() as database:
        Simulation(database, spec, name).run(list(spec["steps"]))
        want = _conditions(database)  # the conditions the v2 writer's payloads project to
    with private_ledger() as database:
        with monkeypatch.context() as mp:
            mp.setattr(decision_events, "decision_payload", v1_payload)
            mp.setattr(events.REGISTRY["PodGated"], "version", 1)
            Simulation(database, spec, name).run(list(spec["steps"]))
        stored = _gated(database)
        assert stored and all(v == 1 and "reason" not in d for v, d in stored)
        rebuild_current(database)  # folds the v1 payloads as every reader sees them: upcast
        assert _conditions(database) == want
        rep = verify_replay(database)
        assert rep.ok and rep.runs > 0, rep.mismatches


def test_upcast_and_downcast_of_podgated() -> None:
    v1_gates = {"pod": "d/p", "plugin": "SchedulingGates", "message": "waiting for scheduling gates: [x]"}
    v1_gang = {"pod": "d/q", "plugin": "GangScheduling", "message": "waiting for minCount pods"}
    up = events.upcast("PodGated", 1, v1_gang)
    assert up["reason"] == "NotReadyForScheduling" and up["condition_message"] == "waiting for minCount pods"
    up = events.upcast("PodGated", 1, v1_gates)
    assert "reason" not in up  # own gates or a sibling's: the projection reads the pod's spec
    assert up["condition_message"] == "Scheduling is blocked due to non-empty scheduling gates"
    silent = {**v1_gang, "report": False}
    assert events.upcast("PodGated", 1, silent) == silent
    v2 = {**v1_gang, "reason": "NotReadyForScheduling", "condition_message": "waiting for minCount pods"}
    assert events.downcast("PodGated", 1, v2) == v1_gang
    assert events.downcast("PodGated", 2, v2) == v2
    assert events.downcast("PodBound", 1, {"pod": "d/p", "node": "n"}) is None  # no downcaster
