"""Scenario tests: every ``tests/scenarios/*.yaml`` (DESIGN.md §5) run through ``api.simulate``.

The files port the cases of ``spec/scenarios.md`` sections A, B, C, D and G that need no
preemption (one file per case or variant; the header comment of each file says which case it is
and, where the upstream test cannot be expressed as a scenario, which observable variant it
checks). Each run gets its own database on the session's test server (``server_url`` fixture).

A scenario that is faithful to the spec but fails because the scheduler or admission deviates
from it is listed in ``XFAIL`` (strict: it must start passing once the deviation is fixed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.simulate import run_scenario, run_scenario_with_log

SCENARIOS = Path(__file__).parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.yaml"))

# file name -> reason (spec expectation vs. observed behaviour); strict xfail.
XFAIL: dict[str, str] = {}

# Scenarios run twice for the determinism check: one with deletes, backoff and advances, one with
# a CompositePodGroup tree and topology placements (placement-score ties).
DETERMINISM = ["tc-04-mincount-satisfied-extra-waits.yaml", "tc-32-cpg-two-level-constraints.yaml"]


@pytest.fixture(autouse=True, scope="module")
def _test_server(server_url: str) -> Iterator[str]:
    """Point ``simulate`` (``ledger.db.server_url``) at the session's test server."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PODLEDGER_DATABASE_URL", server_url)
        assert os.environ["PODLEDGER_DATABASE_URL"] == server_url
        yield server_url


def _load(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        doc = yaml.safe_load(fh)
    assert isinstance(doc, dict), f"{path.name}: not a mapping"
    return doc


def _params() -> list[Any]:
    out = []
    for path in FILES:
        marks = []
        if path.name in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[path.name]))
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


def test_scenarios_present() -> None:
    assert FILES, f"no scenarios in {SCENARIOS}"
    names = {p.name for p in FILES}
    assert set(XFAIL) <= names, f"XFAIL names unknown files: {sorted(set(XFAIL) - names)}"
    assert set(DETERMINISM) <= names


@pytest.mark.parametrize("path", _params())
def test_scenario(path: Path) -> None:
    doc = _load(path)
    assert doc.get("kind") == "Scenario"
    assert (doc.get("metadata") or {}).get("name") == path.stem, "metadata.name should match the file name"
    report = run_scenario(doc, verify=True)  # also proves every recorded decision by replaying it
    assert report.passed, f"{path.name} failed:\n" + "\n".join(report.failures)


@pytest.mark.parametrize("name", DETERMINISM)
def test_scenario_is_deterministic(name: str) -> None:
    doc = _load(SCENARIOS / name)
    first_report, first_log = run_scenario_with_log(doc)
    second_report, second_log = run_scenario_with_log(doc)
    assert first_report.passed and second_report.passed
    assert first_log, "the scenario wrote no events"
    assert len(first_log) == len(second_log)
    for a, b in zip(first_log, second_log, strict=True):
        assert a == b, f"event {a['position']} differs between runs:\n{a}\n{b}"
    assert first_report.to_json() == second_report.to_json()
