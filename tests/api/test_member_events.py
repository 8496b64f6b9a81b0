"""Each member of a failed gang gets its own FailedScheduling Event, worded as its PodScheduled
condition: a member that fitted no node its own FitError, a member placed and then reverted the
gang's status (upstream's submitPodGroupResult records one Event per pod). Run on the NodePorts
and the anti-affinity scenarios (tests/scenarios/up-04, up-03)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from api.k8s import events as k8s_events
from api.services.replay import verify_replay
from api.services.simulate import Simulation, load_scenario, private_ledger
from ledger.sql import scalar

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
CONDITIONS = "SELECT name, status->'conditions' FROM objects WHERE kind = 'Pod' AND namespace = 'default'"


def _pod_scheduled(conn: Any) -> dict[str, str]:
    out = {}
    for name, conditions in conn.execute(CONDITIONS):
        for c in conditions or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                out[name] = c["message"]
    return out


@pytest.mark.parametrize(
    ("scenario", "own", "fragment"),
    [
        ("up-04-gang-member-fit-error-node-ports", "g-b", "didn't have free ports"),
        ("up-03-gang-member-fit-error-existing-anti-affinity", "g-b", "existing pods anti-affinity"),
    ],
)
def test_one_failed_scheduling_event_per_member_with_its_own_message(
    server_url: str, monkeypatch: pytest.MonkeyPatch, scenario: str, own: str, fragment: str
) -> None:
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", server_url)
    name, spec = load_scenario(yaml.safe_load((SCENARIOS / f"{scenario}.yaml").read_text()))
    with private_ledger() as database:
        assert Simulation(database, spec, name).run(list(spec["steps"])).passed
        with database.connect() as conn:
            upto = int(scalar(conn, "SELECT max(position) FROM events"))
            derived = k8s_events.derive(conn, upto, "default")
            conditions = _pod_scheduled(conn)
        failed = {
            (e["name"], e["message"])
            for e in derived
            if e["kind"] == "Pod" and e["reason"] == "FailedScheduling"
        }
        assert {"g-a", "g-b"} <= set(conditions)
        for pod in ("g-a", "g-b"):
            assert (pod, conditions[pod]) in failed  # the Event says what the condition says
        assert fragment in conditions[own]
        assert conditions["g-a"].startswith("minCount (2) cannot be satisfied")
        assert verify_replay(database).ok
