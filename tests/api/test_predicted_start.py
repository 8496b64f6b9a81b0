"""Predicted start in explain (issue 34): from the ledger alone, at the head and at a past
position (explain --at), with the cases it rests on."""

from __future__ import annotations

import pytest

from api.services.explain import explain, render_explain
from api.services.simulate import Simulation
from ledger.sql import scalar
from tests.api.test_reason_views import node, pod

STEPS: list[dict] = [{"apply": [node("n1", "r1", "4")]}]
for i in range(5):  # five pods that each hold the whole node for 100 s
    STEPS += [
        {"apply": [pod(f"a{i}", "4")]},
        {"advance": "100s"},
        {"delete": [{"kind": "Pod", "name": f"a{i}"}]},
    ]
STEPS += [
    {"apply": [pod("holder", "4")]},
    {"advance": "40s"},
    {"apply": [pod("waiter", "4")]},
    {"advance": "10s"},
]


@pytest.fixture()
def cluster(database):
    Simulation(database, {}, "predict").run(STEPS)
    return database


def test_explain_predicts_when_the_holder_ends(cluster):
    doc = explain(cluster, "Pod", "default", "waiter")
    p = doc["predictedStart"]
    # as of the last event (the waiter's verdict, 40 s into the holder's 100 s lifetime; every
    # past lifetime was 100 s): 60 s from then
    assert p["p50_seconds"] == pytest.approx(60) and p["p90_seconds"] == pytest.approx(60)
    assert p["as_of"] == "2026-01-01T00:09:00+00:00"
    assert p["cases"] == 5 and p["censored"] == 1 and p["holders"] == 1 and p["queue_ahead"] == 0
    assert "Predicted: starts in 1.0m (p50)" in render_explain(doc)


def test_explain_at_a_past_position_gives_the_prediction_made_then(cluster):
    with cluster.connect() as c:
        created = scalar(
            c, "SELECT position FROM events WHERE type = 'PodCreated' AND stream LIKE %s", ("%waiter",)
        )
    doc = explain(cluster, "Pod", "default", "waiter", at=created)
    assert doc["predictedStart"]["p50_seconds"] == pytest.approx(60)
    bound = explain(cluster, "Pod", "default", "holder")
    assert "predictedStart" not in bound


def test_the_json_api_carries_the_prediction(cluster):
    from api.http.schemas import Explanation

    doc = explain(cluster, "Pod", "default", "waiter")
    model = Explanation.model_validate({**doc, "text": render_explain(doc)})
    assert model.predictedStart is not None and model.predictedStart.cases == 5


def test_lifetimes_pool_by_shape_with_a_fallback():
    from api.services.predict import MIN_CASES, pools

    small = {"cpu": 1000, "nvidia.com/gpu": 1}
    big = {"cpu": 8000, "nvidia.com/gpu": 1}
    rare = {"cpu": 2000, "nvidia.com/gpu": 1}
    rows = [("ns", "cpu=1000,nvidia.com/gpu=1", 1, 100.0, False)] * MIN_CASES
    rows += [("ns", "cpu=8000,nvidia.com/gpu=1", 1, 5000.0, False)] * MIN_CASES
    rows += [("ns", "cpu=2000,nvidia.com/gpu=1", 1, 300.0, False)] * 3
    rows += [("ns", "cpu=1000,nvidia.com/gpu=1", 1, 50.0, True)]  # running: censored
    rows += [("other", "cpu=1000", 0, 7.0, False)] * 2
    labels, curves = pools(rows, [("ns", small), ("ns", big), ("ns", rare), ("other", {"cpu": 1000})])
    # enough of its own shape: its own; too few: the namespace's pods with as many GPUs; a
    # namespace with too few: everything
    assert labels == ["ns|cpu=1000,nvidia.com/gpu=1", "ns|cpu=8000,nvidia.com/gpu=1", "ns|1 GPU", "*"]
    assert curves[labels[0]].cases == MIN_CASES and curves[labels[0]].censored == 1
    assert curves[labels[1]].mean == pytest.approx(5000.0)
    assert curves["ns|1 GPU"].cases == 2 * MIN_CASES + 3
    assert curves["*"].cases == 2 * MIN_CASES + 5
