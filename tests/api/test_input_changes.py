"""What changed since the last attempt (issue 21): a quota edited between two attempts of a gang
is named by ``explain`` (between the last two attempts) and is a row of the group's timeline."""

from __future__ import annotations

import copy

import pytest

from api.services.explain import explain, render_explain
from api.services.history import history
from api.services.simulate import Simulation
from ledger import store
from tests.api.test_audit import QUOTA, gang, node, pod


def quota(max_cpu: str) -> dict:
    q = copy.deepcopy(QUOTA)
    q["spec"] = {"min": {"cpu": "1"}, "max": {"cpu": max_cpu}}
    return q


STEPS = [
    # the gang needs 2 x 3 cpu = 6; the quota allows 4
    {"apply": [node("n1", "16"), quota("4"), gang("g", 2), pod("g-1", "3", "g"), pod("g-2", "3", "g")]},
    {"advance": "5s"},
    # raised, still short: the next attempt quotes the new max
    {"apply": [quota("5")]},
    {"advance": "5s"},
]


@pytest.fixture()
def edited(database):
    sim = Simulation(database, {}, "input-changes")
    marks = []
    for step in STEPS:
        sim.run([step])
        with database.connect() as c:
            marks.append(store.head(c))
    return database, marks


def test_explain_names_the_quota_edit_between_the_last_two_attempts(edited):
    database, marks = edited
    doc = explain(database, "podgroup", "default", "g")
    assert doc["attempts"] >= 2
    assert "QuotaMaxExceeded" in doc["codes"], doc["codes"]
    between = doc["changes"]["betweenAttempts"]
    kinds = {k["kind"]: k for k in between["kinds"]}
    assert set(kinds) == {"ElasticQuota"}, between
    assert kinds["ElasticQuota"]["names"] == ["default/q (updated)"]
    assert kinds["ElasticQuota"]["objects"] == 1 and kinds["ElasticQuota"]["events"] == 1
    assert between["from"] < kinds["ElasticQuota"]["first"] <= between["to"]
    assert doc["changes"]["sinceLastAttempt"]["kinds"] == []
    text = render_explain(doc)
    assert "Changed between the last two attempts" in text
    assert "ElasticQuota: 1 object(s), 1 change(s)" in text and "default/q (updated)" in text
    assert "Changed since the last attempt (no verdict has seen it yet)" in text

    # as of a position before the edit's attempt, the edit is what no verdict has seen yet
    edit_at = kinds["ElasticQuota"]["first"]
    earlier = explain(database, "podgroup", "default", "g", at=edit_at)
    since = {k["kind"]: k for k in earlier["changes"]["sinceLastAttempt"]["kinds"]}
    assert since["ElasticQuota"]["names"] == ["default/q (updated)"]


def test_timeline_includes_the_quota_edit_between_attempts(edited):
    database, _ = edited
    rows = history(database, "podgroup", "default", "g")
    inputs = [r for r in rows if r["type"] == "InputChanged"]
    assert [(r["data"]["kind"], r["data"]["name"], r["data"]["change"]) for r in inputs] == [
        ("ElasticQuota", "default/q", "updated")
    ]
    attempts = [r["position"] for r in rows if r["type"] in ("PodGroupUnschedulable", "PodGroupRetried")]
    assert attempts[0] < inputs[0]["position"] < attempts[-1]
    assert inputs[0]["summary"] == "input changed: ElasticQuota default/q updated"
