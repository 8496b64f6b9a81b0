"""FGD's fragmentation (scheduler/gpufrag.py): the vectorised computation equals a plain
per-state definition bit for bit, and the memo returns what a full computation returns after
any sequence of node changes (it changes the cost of a decision, never the decision)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np

from scheduler import gpufrag
from scheduler import gpushare as gs

MODELS = ("", "T4", "V100", "A10")


def _typical(rng: random.Random) -> gpufrag.Typical:
    types = []
    for _ in range(12):
        kind = rng.random()
        if kind < 0.2:
            t = gs.PodType(rng.choice((1000, 4000, 8000)), 0, 0, ())
        elif kind < 0.7:
            t = gs.PodType(rng.choice((1000, 4000, 8000)), rng.choice((100, 250, 500, 700)), 1, ())
        else:
            t = gs.PodType(rng.choice((4000, 16000)), 1000, rng.choice((1, 2, 4, 8)), ())
        if rng.random() < 0.3:
            t = gs.PodType(t.cpu, t.milli, t.count, (rng.choice(MODELS[1:]),))
        types.append(t)
    weights = [rng.random() for _ in types]
    return tuple((t, w / sum(weights)) for t, w in zip(types, weights, strict=True))


def _reference(free: list[int], cpu: int, model: str, typical: gpufrag.Typical) -> float:
    total = sum(max(f, 0) for f in free)
    out = 0.0
    for t, p in typical:
        if t.milli > 0 and t.count > 0:
            fits = sum(f >= t.milli for f in free) >= t.count
            allowed = not t.models or (model != "" and model in t.models)
            if fits and cpu >= t.cpu and allowed:
                out += p * sum(f for f in free if 0 < f < t.milli)
                continue
        out += p * total
    return out


def _states(rng: random.Random, n: int, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    free = np.array(
        [[rng.choice((-1, 0, 100, 300, 500, 700, 1000, 1000)) for _ in range(w)] for _ in range(n)],
        dtype=np.int64,
    )
    cpu = np.array([rng.choice((0, 1000, 4000, 8000, 16000, 64000)) for _ in range(n)], dtype=np.int64)
    mid = gs.model_ids(rng.choice(MODELS) for _ in range(n))
    return free, cpu, mid


def test_fragmentation_equals_the_per_state_definition_exactly() -> None:
    rng = random.Random(7)
    for size in (5, 300):  # the direct path and the deduplicated one
        typ = _typical(rng)
        free, cpu, mid = _states(rng, size, 8)
        got = gpufrag.fragmentation(free, cpu, mid, typ)
        want = [_reference(list(free[i]), int(cpu[i]), gs._MODEL_NAMES[mid[i]], typ) for i in range(size)]
        assert got.tolist() == want  # exact: same terms, added in the same order


SHAPES = [(1000, 500, 1), (4000, 1000, 2), (8000, 0, 0), (1000, 300, 1)]  # (cpu, milli, count)


def _memo_steps(seed: int) -> Iterator[tuple[gpufrag.Memo, Any, Any, Any, Any, tuple[int, int, int], Any]]:
    """60 steps of one workload's memo: (memo, node indexes, their free devices, CPU and model,
    a pod shape, the typical pods); after each step a few nodes change (placements, deletions,
    a relabelled model)."""
    rng = random.Random(seed)
    typ = _typical(rng)
    w = gs.Workload()
    w._typical = (w.version, typ)  # the workload's typical pods, as if counted
    n, width = 40, 8
    free, cpu, mid = _states(rng, n, width)
    for step in range(60):
        memo = gpufrag.memo_for(w, n, width)
        idx = np.array(sorted(rng.sample(range(n), rng.randint(1, n))), dtype=np.intp)
        yield memo, idx, free[idx], cpu[idx], mid[idx], SHAPES[step % len(SHAPES)], typ
        for i in rng.sample(range(n), 3):
            free[i, rng.randrange(width)] = rng.choice((0, 200, 500, 1000))
            cpu[i] = rng.choice((1000, 8000, 64000))
            if rng.random() < 0.2:
                mid[i] = gs.model_id(rng.choice(MODELS))


def test_memo_returns_the_full_computation_after_any_changes() -> None:
    for memo, idx, f, c, m, shape, typ in _memo_steps(11):
        assert memo.before_of(idx, f, c, m).tolist() == gpufrag.fragmentation(f, c, m, typ).tolist()
        got = memo.after_of(idx, f, c, m, shape)
        if shape[2] == 1 and shape[1] < gs.MILLI:
            width = f.shape[1]
            tried = np.where(np.eye(width, dtype=np.bool_)[None], f[:, None, :] - shape[1], f[:, None, :])
            want = gpufrag.fragmentation(tried, (c - shape[0])[:, None], m, typ)
        else:
            full = f == gs.MILLI
            after = np.where(full & (np.cumsum(full, axis=1) <= shape[2]), 0, f) if shape[1] else f
            want = gpufrag.fragmentation(after, c - shape[0], m, typ)
        assert got.tolist() == want.tolist()


def test_memo_scores_are_the_scores_of_the_full_computation() -> None:
    for memo, idx, f, c, m, shape, typ in _memo_steps(12):
        best, dev = memo.scores_of(idx, f, c, m, shape)
        full = gpufrag.Memo(typ, memo.n, memo.w)  # nothing memoised
        s = gpufrag.gradient_score(full.before_of(idx, f, c, m), full.after_of(idx, f, c, m, shape).T).T
        if shape[2] == 1 and shape[1] < gs.MILLI:
            s = np.where(f >= shape[1], s, -1)
            assert dev is not None
            assert dev.tolist() == np.argmax(s, axis=1).tolist()
            s = s.max(axis=1)
        else:
            assert dev is None
        assert best.tolist() == s.tolist()
