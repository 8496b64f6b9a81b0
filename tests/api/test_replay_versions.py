"""``replay --verify`` and a scheduler that changed: runs recorded by an earlier scheduler version
(``meta.scheduler_version``) that this version decides otherwise are reported apart, not as
mismatches; the same difference under a version podledger never had is a mismatch."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from api.services.replay import verify_replay
from api.services.simulate import Simulation, load_scenario
from ledger.database import Database
from scheduler.edge import bridge
from scheduler.plugins.balanced_allocation import BalancedAllocation

SCENARIO = Path(__file__).parents[1] / "scenarios" / "up-06-default-profile-balanced-allocation.yaml"


def record_as(database: Database, version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run UP-06 as the 0.1 scheduler decided it (no BalancedAllocation: m lands on a),
    stamped ``version``."""
    name, spec = load_scenario(yaml.safe_load(SCENARIO.read_text()))
    steps = [s for s in spec["steps"] if "expect" not in s]
    with monkeypatch.context() as m:
        m.setattr(BalancedAllocation, "default_weight", 0)
        m.setattr(bridge, "SCHEDULER_VERSION", version)
        Simulation(database, spec, name).run(steps)


def test_an_earlier_versions_runs_are_reported_apart(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_as(database, "podledger-scheduler/0.1", monkeypatch)
    rep = verify_replay(database)
    assert rep.ok and rep.mismatches == []
    assert rep.other_versions == {"podledger-scheduler/0.1": 1}


def test_an_unknown_version_that_differs_is_a_mismatch(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_as(database, "podledger-scheduler/9.9", monkeypatch)
    rep = verify_replay(database)
    assert not rep.ok and rep.other_versions == {}
    assert "PodBound" in str(rep.mismatches[0]["recorded"])


def test_this_versions_runs_replay_exactly(database: Database) -> None:
    name, spec = load_scenario(yaml.safe_load(SCENARIO.read_text()))
    Simulation(database, spec, name).run([s for s in spec["steps"] if "expect" not in s])
    rep = verify_replay(database)
    assert rep.ok and rep.runs >= 1 and rep.other_versions == {}
