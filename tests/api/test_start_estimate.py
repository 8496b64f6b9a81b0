"""The pure start estimator (issue 34, api/services/start_estimate.py): Kaplan-Meier with
censoring, conditional residual lives, and the Monte Carlo of releases with a queue ahead and
a gang's domain."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from api.services.start_estimate import (
    Demand,
    Holder,
    Inputs,
    estimate,
    kaplan_meier,
    residuals,
)


def test_kaplan_meier_with_censoring():
    km = kaplan_meier([1, 2, 3], censored=[2.5])
    assert list(km.times) == [1, 2, 3]
    # at risk 4, 3, 1: S = 3/4, 3/4 * 2/3, then 0
    assert km.surv == pytest.approx([0.75, 0.5, 0.0])
    assert km.cases == 3 and km.censored == 1
    assert km.at(np.asarray([0.5, 1.0, 2.7, 10.0])) == pytest.approx([1.0, 0.75, 0.5, 0.0])


def test_without_censoring_it_is_the_empirical_survival():
    km = kaplan_meier([10, 20, 20, 40])
    assert km.surv == pytest.approx([0.75, 0.25, 0.0])


def test_residual_life_is_conditional_on_age():
    km = kaplan_meier([100] * 20)
    u = np.linspace(0.01, 1, 7)
    assert residuals(km, np.full(7, 40.0), u) == pytest.approx([60.0] * 7)
    # two lifetimes: a pod already past the short one can only have the long one left
    km2 = kaplan_meier([10] * 10 + [100] * 10)
    assert residuals(km2, np.full(5, 50.0), np.linspace(0.1, 1, 5)) == pytest.approx([50.0] * 5)
    # older than every observed lifetime: the exponential tail (positive, finite)
    older = residuals(km, np.full(3, 500.0), np.asarray([0.9, 0.5, 0.1]))
    assert np.all(older > 0) and np.all(np.isfinite(older)) and older[0] < older[2]


def _full_node(age: float, ahead: tuple[Demand, ...] = ()) -> Inputs:
    return Inputs(
        demand=Demand("default/me", {"cpu": 4000}),
        free={"n1": {"cpu": 0}},
        holders=[Holder("n1", {"cpu": 4000}, age)],
        curve=kaplan_meier([100.0] * 30),
        ahead=ahead,
    )


def test_start_is_when_the_holder_ends():
    est = estimate(_full_node(40))
    assert est.p50_seconds == pytest.approx(60) and est.p90_seconds == pytest.approx(60)
    assert est.cases == 30 and est.holders == 1 and est.queue_ahead == 0


def test_the_queue_ahead_goes_first():
    est = estimate(_full_node(40, (Demand("default/first", {"cpu": 4000}),)))
    # the pod ahead takes the freed node at 60 s and holds it for a whole lifetime (100 s)
    assert est.p50_seconds == pytest.approx(160) and est.queue_ahead == 1


def test_fits_now_and_never():
    now = Inputs(Demand("d/x", {"cpu": 1}), {"n1": {"cpu": 2}}, [], kaplan_meier([5.0]))
    assert estimate(now).p50_seconds == 0
    never = Inputs(Demand("d/x", {"cpu": 10}), {"n1": {"cpu": 2}}, [], kaplan_meier([5.0]))
    assert estimate(never).p50_seconds is None


def test_a_gang_needs_its_pods_in_one_domain():
    # two racks; each has one free slot now; rack b's holder ends after 30 s (age 70 of 100)
    curve = kaplan_meier([100.0] * 10)
    inp = Inputs(
        demand=Demand("d/gang", {"cpu": 1000}, pods=2),
        free={"a1": {"cpu": 1000}, "a2": {"cpu": 0}, "b1": {"cpu": 1000}, "b2": {"cpu": 0}},
        holders=[Holder("a2", {"cpu": 1000}, 10), Holder("b2", {"cpu": 1000}, 70)],
        curve=curve,
        domain_of={"a1": "a", "a2": "a", "b1": "b", "b2": "b"},
    )
    est = estimate(inp)
    assert est.p50_seconds == pytest.approx(30)
    assert est.closest_domain == "a"  # ties in fit now: the first by name


def test_same_inputs_same_estimate():
    inp = Inputs(
        Demand("d/y", {"cpu": 2000}),
        {"n1": {"cpu": 0}, "n2": {"cpu": 1000}},
        [Holder("n1", {"cpu": 2000}, 5), Holder("n2", {"cpu": 1000}, 50)],
        kaplan_meier([10, 30, 60, 90, 200, 400], censored=[500]),
    )
    a, b = estimate(inp), estimate(inp)
    assert (a.p50_seconds, a.p90_seconds) == (b.p50_seconds, b.p90_seconds)
    assert a.p50_seconds is not None and a.p90_seconds is not None and a.p50_seconds <= a.p90_seconds


def test_not_before_the_next_attempt():
    # room now, but the scheduler tries again only when its backoff ends
    inp = Inputs(Demand("d/x", {"cpu": 1}), {"n1": {"cpu": 2}}, [], kaplan_meier([5.0]), not_before=7.5)
    assert estimate(inp).p50_seconds == pytest.approx(7.5)


def test_a_smaller_pod_behind_takes_what_frees_first():
    # the node frees 2 of its 4 cores at 10 s and 2 more at 60 s (lifetimes of 100 s); the pod
    # behind (2 cores) takes the first half, so the entity (4 cores) waits for it: 110 s
    curve = kaplan_meier([100.0] * 20)
    base = Inputs(
        Demand("d/big", {"cpu": 4000}),
        {"n1": {"cpu": 0}},
        [Holder("n1", {"cpu": 2000}, 40), Holder("n1", {"cpu": 2000}, 90)],
        curve,
    )
    assert estimate(base).p50_seconds == pytest.approx(60)
    crowded = Inputs(base.demand, base.free, base.holders, curve, behind=(Demand("d/small", {"cpu": 2000}),))
    assert estimate(crowded).p50_seconds == pytest.approx(110)


def test_each_holder_lives_the_lifetimes_of_its_own_pool():
    # the entity's kind lives 1000 s, the holder's kind 100 s: the holder (age 40) ends at 60 s
    long, short = kaplan_meier([1000.0] * 30), kaplan_meier([100.0] * 30)
    inp = Inputs(
        Demand("d/me", {"cpu": 4000}, pool="long"),
        {"n1": {"cpu": 0}},
        [Holder("n1", {"cpu": 4000}, 40, pool="short")],
        long,
        curves={"long": long, "short": short},
    )
    assert estimate(inp).p50_seconds == pytest.approx(60)
    # a pool without a curve: the entity's own (1000 s lifetimes)
    other = replace(inp, holders=[Holder("n1", {"cpu": 4000}, 40, pool="other")])
    assert estimate(other).p50_seconds == pytest.approx(960)
    # the demand ahead takes the node at 60 s and holds it for its own pool's lifetime
    ahead = replace(inp, ahead=(Demand("d/first", {"cpu": 4000}, pool="short"),))
    assert estimate(ahead).p50_seconds == pytest.approx(160)
