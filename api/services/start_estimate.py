"""Predicted start of a pending pod or PodGroup (issue 34): a pure estimator (no database, no
clock; ``api/services/predict.py`` reads its inputs from the ledger at any position).

The method (docs/prediction.md):

1. Lifetimes: a Kaplan-Meier survival curve per pool of similar past pods (``Inputs.curves``,
   by the pool names of the holders and demands; ``curve`` is the entity's own), with the pods
   still running (or preempted) counted as censored at their age.
2. Holders: every pod bound on a node the entity could use, with its age; each one's remaining
   life is drawn from its pool's curve conditioned on the age it already has (S(age + r) / S(age));
   beyond the longest observed lifetime the tail is exponential with the mean observed lifetime.
3. The queue ahead: the pending demands ahead of the entity (priority, then arrival) take
   capacity first when it frees, each for a lifetime drawn from its own pool's curve.
4. Monte Carlo (seeded by the entity's name, so the same ledger gives the same answer): in each
   draw, releases are replayed in time order on the eligible nodes, the queue ahead placed
   first-fit in order, and the entity's start is the first time all its pods fit (a gang's
   ``pods`` on nodes of one domain when a topology key is given). p50 and p90 of the draws, with
   the number of completed lifetimes the curve rests on.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

SAMPLES = 200


@dataclass(frozen=True)
class Survival:
    """A Kaplan-Meier curve: ``times`` (ascending distinct event times) and ``surv`` (S just after
    each), from ``cases`` completed lifetimes and ``censored`` running ones."""

    times: np.ndarray
    surv: np.ndarray
    cases: int
    censored: int
    mean: float

    def at(self, t: np.ndarray) -> np.ndarray:
        """S(t) for each t (1 before the first event)."""
        idx = np.searchsorted(self.times, t, side="right") - 1
        out = (
            np.where(idx >= 0, self.surv[np.clip(idx, 0, None)], 1.0) if len(self.times) else np.ones_like(t)
        )
        return np.asarray(out, dtype=float)


def kaplan_meier(completed: Sequence[float], censored: Sequence[float] = ()) -> Survival:
    """The product-limit estimate S(t) = prod over event times t_i <= t of (1 - d_i / n_i)."""
    done = np.asarray(sorted(max(float(x), 0.0) for x in completed), dtype=float)
    cens = np.asarray(sorted(max(float(x), 0.0) for x in censored), dtype=float)
    if not len(done):
        return Survival(np.zeros(0), np.zeros(0), 0, len(cens), float(np.mean(cens)) if len(cens) else 0.0)
    times, deaths = np.unique(done, return_counts=True)
    # at risk at t: lifetimes (completed or censored) >= t
    at_risk = (len(done) - np.searchsorted(done, times, side="left")) + (
        len(cens) - np.searchsorted(cens, times, side="left")
    )
    surv = np.cumprod(1.0 - deaths / at_risk)
    return Survival(times, surv, len(done), len(cens), float(np.mean(done)))


def residuals(curve: Survival, ages: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Remaining lives of pods of the given ages, one per uniform draw in ``u`` (same shape):
    the r with S(age + r) = u * S(age). Past the curve's last event time the tail is exponential
    with the mean observed lifetime (memoryless for a pod already older than every lifetime)."""
    u = np.clip(u, 1e-12, 1.0)
    tail_mean = max(curve.mean, 1.0)
    if curve.cases == 0:
        return np.asarray(-np.log(u) * (curve.mean or 3600.0), dtype=float)
    t_last = float(curve.times[-1])
    last_s = float(curve.surv[-1])
    target = u * curve.at(ages)
    # first event time whose S <= target (surv is non-increasing)
    idx = np.maximum(
        np.searchsorted(-curve.surv, -target, side="left"), np.searchsorted(curve.times, ages, side="right")
    )
    inside = (idx < len(curve.times)) & (ages < t_last)
    t_in = curve.times[np.clip(idx, 0, len(curve.times) - 1)]
    with np.errstate(divide="ignore", invalid="ignore"):
        beyond = np.where(
            ages >= t_last,
            ages - np.log(u) * tail_mean,
            t_last - np.log(np.clip(target / max(last_s, 1e-300), 1e-12, 1.0)) * tail_mean,
        )
    t_end = np.where(inside, t_in, beyond)
    return np.asarray(np.maximum(t_end - ages, 0.0), dtype=float)


@dataclass(frozen=True)
class Holder:
    node: str
    requests: Mapping[str, int]
    age: float  # seconds since it was bound
    pool: str = ""  # whose lifetimes it is drawn from (``Inputs.curves``; "" or unknown: ``curve``)


@dataclass(frozen=True)
class Demand:
    """A pending entity: ``pods`` pods of ``requests`` each (all on eligible nodes, in one domain
    of ``domain_of`` when the group has a topology constraint)."""

    key: str
    requests: Mapping[str, int]
    pods: int = 1
    eligible: frozenset[str] | None = None  # None: every node
    pool: str = ""  # the lifetimes its pods live once placed (``Inputs.curves``)


@dataclass(frozen=True)
class Inputs:
    demand: Demand
    free: Mapping[str, Mapping[str, int]]  # node -> free amount per resource (allocatable - bound)
    holders: Sequence[Holder]
    curve: Survival
    ahead: Sequence[Demand] = ()
    domain_of: Mapping[str, str] | None = None  # node -> topology domain (None: no constraint)
    not_before: float = 0.0  # seconds until the scheduler's next attempt (its backoff)
    # pending demands behind it: when it does not fit, the scheduler places them if they fit
    # (no head-of-line blocking), and they hold what they take
    behind: Sequence[Demand] = ()
    # the lifetimes of each pool of similar pods (a holder's or a demand's ``pool``); a pool not
    # in it uses ``curve`` (the entity's own)
    curves: Mapping[str, Survival] = field(default_factory=dict)

    def curve_of(self, pool: str) -> Survival:
        return self.curves.get(pool, self.curve) if pool else self.curve


@dataclass
class Estimate:
    p50_seconds: float | None
    p90_seconds: float | None
    cases: int  # completed lifetimes the survival curve rests on
    censored: int
    holders: int  # pods holding capacity on the eligible nodes
    queue_ahead: int
    closest_domain: str | None = None
    never: float = 0.0  # share of draws in which it did not start within the horizon
    as_of: str | None = None  # the time the waits count from (the position's event time)
    # the single number with the least expected relative error |x - wait| / wait over the draws
    # (their median weighted by 1 / wait): lower than p50 when the spread is wide
    point_seconds: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "p50_seconds": self.p50_seconds,
            "p90_seconds": self.p90_seconds,
            "point_seconds": self.point_seconds,
            "cases": self.cases,
            "censored": self.censored,
            "holders": self.holders,
            "queue_ahead": self.queue_ahead,
            "closest_domain": self.closest_domain,
            "as_of": self.as_of,
            "method": "Kaplan-Meier over past lifetimes, Monte Carlo of releases (docs/prediction.md)",
        }


def _fits(free: Mapping[str, int], req: Mapping[str, int]) -> bool:
    return all(free.get(r, 0) >= v for r, v in req.items() if v > 0)


def _take(free: dict[str, int], req: Mapping[str, int], sign: int) -> None:
    for r, v in req.items():
        free[r] = free.get(r, 0) - sign * v


def _place(
    free: dict[str, dict[str, int]], d: Demand, domain_of: Mapping[str, str] | None
) -> list[str] | None:
    """First-fit nodes for all of ``d``'s pods (in one domain if constrained), or None."""
    nodes = [n for n in sorted(free) if d.eligible is None or n in d.eligible]
    groups: dict[str, list[str]] = {}
    for node in nodes:
        groups.setdefault(domain_of.get(node, "") if domain_of else "", []).append(node)
    for _dom, members in sorted(groups.items()):
        trial = {m: dict(free[m]) for m in members}
        chosen: list[str] = []
        for _ in range(d.pods):
            n = next((m for m in members if _fits(trial[m], d.requests)), None)
            if n is None:
                break
            _take(trial[n], d.requests, 1)
            chosen.append(n)
        if len(chosen) == d.pods:
            return chosen
    return None


def _seed(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def estimate(inp: Inputs, samples: int = SAMPLES, horizon: float = 365 * 86400.0) -> Estimate:
    d = inp.demand
    relevant = {n for n in inp.free if d.eligible is None or n in d.eligible}
    for a in inp.ahead:
        relevant |= {n for n in inp.free if a.eligible is None or n in a.eligible}
    holders = [h for h in inp.holders if h.node in relevant]
    mine = [h for h in holders if d.eligible is None or h.node in d.eligible]
    out = Estimate(None, None, inp.curve.cases, inp.curve.censored, len(mine), len(inp.ahead))
    if inp.domain_of:
        out.closest_domain = _closest_domain(inp)
    rng = np.random.default_rng(_seed(d.key))
    ages = np.asarray([h.age for h in holders], dtype=float)
    # the holders by the curve their remaining lives are drawn from
    by_pool: dict[str, list[int]] = {}
    for i, h in enumerate(holders):
        by_pool.setdefault(h.pool if h.pool in inp.curves else "", []).append(i)
    starts: list[float] = []
    for _ in range(samples):
        u = rng.random(len(holders))
        ends = np.zeros(len(holders))
        for pool, idx in by_pool.items():
            ends[idx] = residuals(inp.curve_of(pool), ages[idx], u[idx])
        starts.append(max(_one_draw(inp, holders, ends, rng, horizon), inp.not_before))
    arr = np.asarray(starts)
    out.never = float(np.mean(~np.isfinite(arr)))
    out.p50_seconds = _quantile(arr, 0.5)
    out.p90_seconds = _quantile(arr, 0.9)
    out.point_seconds = _relative_point(arr)
    return out


def _relative_point(arr: np.ndarray) -> float | None:
    """argmin_x E|x - W| / W over the draws W: the median of the draws weighted by 1 / W (a
    draw that never starts weighs nothing; a start within a second weighs as one second)."""
    if not len(arr) or np.mean(~np.isfinite(arr)) >= 0.5:
        return None
    fin = np.sort(arr[np.isfinite(arr)])
    w = 1.0 / np.maximum(fin, 1.0)
    cum = np.cumsum(w)
    return float(fin[int(np.searchsorted(cum, cum[-1] / 2))])


def _quantile(arr: np.ndarray, q: float) -> float | None:
    v = float(np.quantile(np.where(np.isfinite(arr), arr, np.inf), q, method="higher"))
    return v if math.isfinite(v) else None


def _one_draw(
    inp: Inputs, holders: Sequence[Holder], ends: np.ndarray, rng: np.random.Generator, horizon: float
) -> float:
    free = {n: dict(f) for n, f in inp.free.items()}
    pending = list(inp.ahead)
    waiting = list(inp.behind)
    releases = [(float(ends[i]), h.node, h.requests) for i, h in enumerate(holders)]
    t = 0.0
    heap = [(e, k, n, r) for k, (e, n, r) in enumerate(releases)]
    heapq.heapify(heap)
    serial = len(heap)

    def admit(queue: list[Demand]) -> list[Demand]:
        """Place what of ``queue`` fits now, in order (each holds its nodes for a drawn
        lifetime); the rest, still waiting."""
        nonlocal serial
        still: list[Demand] = []
        for a in queue:
            placed = _place(free, a, inp.domain_of)
            if placed is None:
                still.append(a)
                continue
            life = float(residuals(inp.curve_of(a.pool), np.zeros(1), rng.random(1))[0])
            for n in placed:
                _take(free[n], a.requests, 1)
                heapq.heappush(heap, (t + life, serial, n, a.requests))
                serial += 1
        return still

    while True:
        # the queue ahead first, in order; then the entity; then the demands behind it
        pending = admit(pending)
        if _place(free, inp.demand, inp.domain_of) is not None:
            return t
        waiting = admit(waiting)
        if not heap:
            return math.inf
        t, _k, node, req = heapq.heappop(heap)
        if t > horizon:
            return math.inf
        _take(free[node], req, -1)
        # release everything ending at the same instant before trying again
        while heap and heap[0][0] <= t:
            _e, _k, node, req = heapq.heappop(heap)
            _take(free[node], req, -1)


def _closest_domain(inp: Inputs) -> str | None:
    """The domain where the most of the entity's pods fit now (ties: name order)."""
    assert inp.domain_of is not None
    d = inp.demand
    best: tuple[int, str] | None = None
    for dom in sorted(set(inp.domain_of.values())):
        nodes = [
            n
            for n in sorted(inp.free)
            if inp.domain_of.get(n) == dom and (d.eligible is None or n in d.eligible)
        ]
        trial = {n: dict(inp.free[n]) for n in nodes}
        fit = 0
        for _ in range(d.pods):
            n = next((m for m in nodes if _fits(trial[m], d.requests)), None)
            if n is None:
                break
            _take(trial[n], d.requests, 1)
            fit += 1
        if best is None or fit > best[0]:
            best = (fit, dom)
    return best[1] if best else None
