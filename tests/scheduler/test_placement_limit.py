"""How many feasible placements a topology-aware group evaluates before it chooses: upstream's
PercentageOfPlacementsToScore (KEP-5732, kubernetes PR #139859), adaptive by default:
``max(1, n * max(5, 100 - nodes * 9 / 500) / 100)`` placements of ``n``, ``nodes`` summing the
placements' nodes; an explicit percentage (SchedulerConfig ``percentageOfPlacementsToScore``)
replaces the adaptive one, 100 scores every placement."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from scheduler.cycle.composite import Algorithm
from scheduler.framework import Profile
from scheduler.plugins.topology_placement import Placement
from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, cpg, node, pg, pod


def _placements(n: int, nodes_each: int) -> list[Placement]:
    mask = np.zeros(1, dtype=np.bool_)
    return [Placement(f"rack=r{i:03d}", mask, i, size=nodes_each) for i in range(n)]


@pytest.mark.parametrize(
    ("n", "nodes_each", "pct", "want"),
    [
        (50, 100, 0, 5),  # 5,000 nodes: 10% (upstream's scheduler_perf: ~5 of 50 racks)
        (50, 1, 0, 50),  # 50 nodes: 100 - 0 = 100%
        (2, 28, 0, 1),  # 56 nodes: 99% of 2 placements is 1
        (4, 250, 0, 3),  # 1,000 nodes: 82%
        (10, 1000, 0, 1),  # 10,000 nodes: the 5% floor, at least one placement
        (10, 1000, 100, 10),  # explicit 100: every placement
        (10, 1000, 30, 3),  # explicit percentage
        (1, 5000, 0, 1),
    ],
)
def test_placements_to_find(n: int, nodes_each: int, pct: int, want: int) -> None:
    sim = Sim(replace(ZERO_BACKOFF, percentage_of_placements_to_score=pct))
    alg = Algorithm(sim.s.state, {}, sim.s.profile)
    assert alg.placements_to_find(_placements(n, nodes_each)) == want


def test_without_a_placement_scorer_the_first_feasible_placement_wins() -> None:
    sim = Sim()
    alg = Algorithm(sim.s.state, {}, replace(sim.s.profile, placement_score=()))
    assert alg.placements_to_find(_placements(5, 1)) == 1
    assert isinstance(sim.s.profile, Profile) and sim.s.profile.placement_score


def _rack_cluster(sim: Sim, racks: int, per_rack: int) -> None:
    sim.apply(
        *(
            node(f"n{r:02d}-{i:02d}", cpu=4, labels={"rack": f"r{r:02d}"})
            for r in range(racks)
            for i in range(per_rack)
        ),
        run=False,
    )


def test_the_limit_scores_a_subset_and_scoring_every_placement_scores_all() -> None:
    # 6 racks x 30 nodes = 180 nodes: the adaptive limit is 100 - 180*9//500 = 97% -> 5 of 6
    limited = Sim()
    _rack_cluster(limited, 6, 30)
    everything = Sim(replace(ZERO_BACKOFF, percentage_of_placements_to_score=100))
    _rack_cluster(everything, 6, 30)
    for sim, scored in ((limited, 5), (everything, 6)):
        res = sim.apply(pg("g", 2, key="rack"), pod("g-0", group="g"), pod("g-1", group="g"))
        assert res[-1].placement_counts == {"placements_generated": 6, "placements_scored": scored}


def test_the_evaluation_order_is_deterministic_and_differs_per_group() -> None:
    orders = []
    for group in ("default/a", "default/b"):
        ps = _placements(20, 1)
        order = [p.name for p in Algorithm.evaluation_order(group, ps, 5)]
        assert order == [p.name for p in Algorithm.evaluation_order(group, list(reversed(ps)), 5)]
        assert sorted(order) == [p.name for p in ps]
        orders.append(order)
    assert orders[0] != orders[1]
    ps = _placements(4, 1)
    assert Algorithm.evaluation_order("default/a", ps, 4) is ps  # no limit: the generator's order


def test_composite_groups_take_the_same_limit() -> None:
    sim = Sim()
    _rack_cluster(sim, 6, 30)
    res = sim.apply(
        cpg("root", 1, key="rack", workload="w"),
        pg("leaf", 2, parent="root", workload="w"),
        pod("l-0", group="leaf"),
        pod("l-1", group="leaf"),
    )
    assert sim.bound("l-0", "l-1")
    assert res[-1].placement_counts["placements_scored"] == 5
