"""SchedulerConfig ``controllerEmulation: false`` (what ``attach --mode schedule`` writes): a
preempted pod with a controller is not re-created by podledger (the cluster's controller does it).
The job-01 scenario, whose preempted Job pods are re-created with emulation on, run with it off."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from api.services.simulate import run_scenario_with_log

JOB = Path(__file__).parents[1] / "scenarios" / "job-01-gang-job-preempted-pods-recreated.yaml"


@pytest.fixture(autouse=True)
def _test_server(server_url: str) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PODLEDGER_DATABASE_URL", server_url)
        yield


def _recreated(doc: dict) -> int:  # type: ignore[type-arg]
    _report, log = run_scenario_with_log(doc, verify=True)
    return sum(1 for e in log if e["type"] == "PodCreated" and (e["meta"] or {}).get("actor") == "controller")


def test_controller_emulation_off_recreates_nothing() -> None:
    doc = yaml.safe_load(JOB.read_text())
    assert _recreated(copy.deepcopy(doc)) == 2
    off = copy.deepcopy(doc)
    off["metadata"]["name"] = "job-01-emulation-off"
    off["spec"]["config"] = {"controllerEmulation": False}
    off["spec"]["steps"] = off["spec"]["steps"][:4]  # up to the preemption
    assert _recreated(off) == 0
