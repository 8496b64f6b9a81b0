"""FGD's node fragmentation (the simulator's NodeGpuShareFragAmountScore), vectorised, and the
memo that makes one FGD decision cost the nodes that changed since the last one.

``fragmentation(free, cpu, mid, typical)``: for each node state (free milli per device, free
milli-CPU, GPU model id) the sum over the typical pods t of p_t * (the free milli of the devices
smaller than t's share when t fits the node, class Q3; else all free milli of the node). The sum
runs over the typical pods in their order, one addition at a time, so every caller gets the same
floating-point value for the same state. The per-device terms are read from a table by free milli
(``TypicalArrays.device_table``); they are integers, so their sums are exact in any order.

``Memo``: per typical-pod list, the fragmentation of each node's current state ("before") and,
per pod shape (cpu, milli, count), of the state after placing such a pod on it ("after", per
device for a share) and FGD's score of the node (``scores_of``). An entry is reused only when
the node's stored state (devices, CPU, model) equals the queried one, so a memo hit is the
value a full computation gives: the memo changes the cost, never a decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scheduler import gpushare as gs
from scheduler.gpushare import BOOL, F64, I64, IDX, PodType

Typical = tuple[tuple[PodType, float], ...]
SMALL_BATCH = 64  # states computed directly; larger batches are deduplicated first


@dataclass(slots=True)
class TypicalArrays:
    """The typical pods as arrays (T = their number)."""

    typical: Typical
    p: F64
    milli: I64
    count: I64
    gpu: BOOL  # the type asks for a GPU (the others count all free milli)
    thr: I64  # the distinct CPU requests of the GPU types, sorted (CPU buckets)
    rank: I64  # per type: its CPU request's index in ``thr`` (0 for CPU-only types)
    models: list[tuple[str, ...]]
    # the device values ``device_table`` has a row for: 0..limit (a larger value holds every
    # type's share, as ``limit`` does)
    limit: int
    _elig: dict[int, BOOL] = field(default_factory=dict)
    _dev: I64 | None = None

    def eligible(self, bucket: I64, mid: IDX) -> BOOL:
        """(S, T): is each type a GPU type whose CPU request fits a node of CPU ``bucket`` and
        whose models allow a node of model ``mid``? (all but the device test of class Q3)"""
        n = len(gs._MODEL_NAMES)  # the table covers the models known when it was built
        table = self._elig.get(n)
        if table is None:
            cols = [gs.model_table(m) for m in self.models]
            acc = np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=np.bool_)  # (model, T)
            b = np.arange(len(self.thr) + 1)[:, None, None]
            table = self._elig[n] = (b > self.rank) & acc[None, :, :] & self.gpu
        out: BOOL = table[bucket, mid]
        return out

    def device_table(self) -> I64:
        """(limit + 1, T): per free milli v of one device and per type, v when the device is
        free but too small for the type's share (else 0), plus 1 << 32 when it holds the
        share; summed over a node's devices: the small free milli and the count of devices
        that hold it, in one integer each (low and high 32 bits)."""
        if self._dev is None:
            v = np.arange(self.limit + 1, dtype=np.int64)[:, None]
            holds = v >= self.milli
            self._dev = np.where(~holds & (v > 0), v, 0) + (holds.astype(np.int64) << 32)
        return self._dev


def arrays(typical: Typical) -> TypicalArrays:
    gpu = [t.milli > 0 and t.count > 0 for t, _ in typical]
    thr = sorted({t.cpu for (t, _), g in zip(typical, gpu, strict=True) if g})
    return TypicalArrays(
        typical,
        np.array([p for _, p in typical], dtype=np.float64),
        np.array([t.milli for t, _ in typical], dtype=np.int64),
        np.array([t.count for t, _ in typical], dtype=np.int64),
        np.array(gpu, dtype=np.bool_),
        np.array(thr, dtype=np.int64),
        np.array(
            [thr.index(t.cpu) if g else 0 for (t, _), g in zip(typical, gpu, strict=True)], dtype=np.int64
        ),
        [t.models for t, _ in typical],
        max([gs.MILLI, *(t.milli for t, _ in typical)]),
    )


def unique_rows(rows: I64) -> tuple[I64, IDX]:
    """``np.unique(rows, axis=0, return_inverse=True)`` through one lexsort (much faster)."""
    if len(rows) == 0:
        return rows, np.zeros(0, dtype=np.intp)
    order = np.lexsort(rows.T[::-1])
    srt = rows[order]
    new = np.ones(len(rows), dtype=np.bool_)
    new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    inv = np.empty(len(rows), dtype=np.intp)
    inv[order] = np.cumsum(new) - 1
    return srt[new], inv


def _rows(free: I64, bucket: I64, mid: IDX, ta: TypicalArrays) -> F64:
    """Fragmentation of S states: ``free`` (S, W), CPU bucket and model id (S,)."""
    if len(ta.p) == 0:
        return np.zeros(len(free), dtype=np.float64)
    pos = np.maximum(free, 0)
    total = np.add.reduce(pos, axis=1)  # integers: exact in any order
    # per type: the small free milli (low 32 bits) and the devices holding its share (high)
    packed = np.add.reduce(ta.device_table().take(np.minimum(pos, ta.limit), axis=0), axis=1)  # (S, T)
    q3 = ((packed >> 32) >= ta.count) & ta.eligible(bucket, mid)
    # (integers as floats: the same products as of the float values)
    terms = ta.p * np.where(q3, packed & 0xFFFFFFFF, total[:, None])  # (S, T)
    # in the typical pods' order, one addition at a time (see the module doc): an accumulation
    # adds left to right like a loop over the columns (a reduction may sum pairwise)
    out: F64 = np.add.accumulate(terms, axis=1)[:, -1]
    return out


def fragmentation(free: I64, cpu: I64, mid: IDX, typical: Typical | TypicalArrays) -> F64:
    """FGD's fragmentation of each node state; ``free`` is (..., devices), ``cpu`` and ``mid``
    broadcast to its leading shape (``mid`` per row of the first axis). Equal states (devices as
    a multiset, which typical CPU requests fit, model) are computed once."""
    ta = typical if isinstance(typical, TypicalArrays) else arrays(typical)
    shape = free.shape[:-1]
    g = free.shape[-1]
    bucket = np.searchsorted(ta.thr, cpu, side="right")
    if free.ndim == 2 and np.ndim(mid) == 1 and bucket.shape == shape:
        flat_f, flat_b, flat_m = free, bucket, np.asarray(mid, dtype=np.intp)  # already flat
    else:
        mids = np.asarray(mid, dtype=np.intp).reshape(np.shape(mid) + (1,) * (len(shape) - np.ndim(mid)))
        flat_f = free.reshape(-1, g)
        flat_b = np.broadcast_to(bucket, shape).reshape(-1)
        flat_m = np.broadcast_to(mids, shape).reshape(-1)
    if len(flat_f) <= SMALL_BATCH:
        return _rows(flat_f, flat_b, flat_m, ta).reshape(shape)
    rows = np.concatenate([np.sort(flat_f, axis=1), flat_b[:, None], flat_m[:, None]], axis=1)
    uniq, inv = unique_rows(rows)
    out = _rows(uniq[:, :g], uniq[:, g], uniq[:, g + 1], ta)
    res: F64 = out[inv].reshape(shape)
    return res


# ----------------------------------------------------------------------------- memo
@dataclass(slots=True)
class _Entry:
    free: I64  # (n, W) the node state each value was computed for (-2: none yet)
    cpu: I64
    mid: IDX
    val: F64  # (n,) or (n, W)


@dataclass(slots=True)
class _Scores:
    free: I64  # (n, W) the node state each score was computed for (-2: none yet)
    cpu: I64
    mid: IDX
    best: I64  # (n,) the node's score (a share: its best device's)
    dev: I64  # (n,) a share's best device
    ver: I64  # (n,) the version of the state (``gpushare.DeviceTable.ver``; -1: none)


def _entry(n: int, w: int, per_device: bool) -> _Entry:
    return _Entry(
        np.full((n, w), -2, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        np.full(n, -1, dtype=np.intp),
        np.zeros((n, w) if per_device else n, dtype=np.float64),
    )


class Memo:
    """Fragmentation of node states by node index, for one typical-pod list (module doc)."""

    def __init__(self, typical: Typical, n: int, w: int) -> None:
        self.typical = typical
        self.ta = arrays(typical)
        self.n, self.w = n, w
        self.before = _entry(n, w, False)
        self.after: dict[tuple[int, int, int], _Entry] = {}
        self.scores: dict[tuple[int, int, int], _Scores] = {}

    def _stale(self, e: _Entry | _Scores, idx: IDX, free: I64, cpu: I64, mid: IDX) -> IDX:
        neq = e.free[idx] != free
        if neq.shape[1] == 8 and neq.flags.c_contiguous:
            # a row's 8 flags read as one 8-byte word (non-zero iff one is set): cheaper than
            # a reduction over so short an axis
            moved = neq.view(np.uint64)[:, 0] != 0
        else:
            moved = neq.any(axis=1)
        bad = moved | (e.cpu[idx] != cpu) | (e.mid[idx] != mid)
        out: IDX = bad.nonzero()[0]
        return out

    def _store(self, e: _Entry, idx: IDX, rows: IDX, free: I64, cpu: I64, mid: IDX, val: F64) -> None:
        at = idx[rows]
        e.free[at] = free[rows]
        e.cpu[at] = cpu[rows]
        e.mid[at] = mid[rows]
        e.val[at] = val

    def before_of(self, idx: IDX, free: I64, cpu: I64, mid: IDX) -> F64:
        e = self.before
        rows = self._stale(e, idx, free, cpu, mid)
        if len(rows):
            val = fragmentation(free[rows], cpu[rows], mid[rows], self.ta)
            self._store(e, idx, rows, free, cpu, mid, val)
        out: F64 = e.val[idx]
        return out

    def after_of(self, idx: IDX, free: I64, cpu: I64, mid: IDX, shape: tuple[int, int, int]) -> F64:
        """Fragmentation after placing a pod of ``shape`` = (cpu, milli, count): per device for a
        share (every device tried, (m, W)), else on the first ``count`` fully free devices (m,)."""
        share = shape[2] == 1 and 0 < shape[1] < gs.MILLI
        e = self.after.get(shape)
        if e is None:
            e = self.after[shape] = _entry(self.n, self.w, share)
        rows = self._stale(e, idx, free, cpu, mid)
        if len(rows):
            val = fragmentation(*_after(free[rows], cpu[rows], mid[rows], shape), self.ta)
            if share:
                val = val.reshape(len(rows), -1)
            self._store(e, idx, rows, free, cpu, mid, val)
        out: F64 = e.val[idx]
        return out

    def scores_of(
        self, idx: IDX, free: I64, cpu: I64, mid: IDX, shape: tuple[int, int, int], ver: I64 | None = None
    ) -> tuple[I64, I64 | None]:
        """FGD's score of each node for a pod of ``shape`` (``gradient_score`` of its before and
        after values; for a share the best device's score, -1 on a device too small, and that
        device, the first best), recomputed only for the nodes whose state changed: whose state
        differs from the stored one or, given the states' versions ``ver``, whose version does."""
        _, milli, count = shape
        share = count == 1 and 0 < milli < gs.MILLI
        e = self.scores.get(shape)
        if e is None:
            e = self.scores[shape] = _Scores(
                np.full((self.n, self.w), -2, dtype=np.int64),
                np.full(self.n, -1, dtype=np.int64),
                np.full(self.n, -1, dtype=np.intp),
                np.zeros(self.n, dtype=np.int64),
                np.zeros(self.n, dtype=np.int64),
                np.full(self.n, -1, dtype=np.int64),
            )
        if ver is None:
            rows = self._stale(e, idx, free, cpu, mid)
        else:
            rows = (e.ver[idx] != ver).nonzero()[0]
        if len(rows):
            at, f, c, m = idx[rows], free[rows], cpu[rows], mid[rows]
            # the states before and after in one computation (no memo between: the score's
            # staleness is theirs)
            af, ac, am = _after(f, c, m, shape)
            r = len(rows)
            val = fragmentation(
                np.concatenate([f, af]), np.concatenate([c, ac]), np.concatenate([m, am]), self.ta
            )
            before, after = val[:r], val[r:]
            if share:
                s = np.where(f >= milli, gradient_score(before[:, None], after.reshape(r, -1)), -1)
                e.dev[at] = np.argmax(s, axis=1)
                e.best[at] = s.max(axis=1)
            else:
                e.best[at] = gradient_score(before, after)
            e.free[at] = f
            e.cpu[at] = c
            e.mid[at] = m
            e.ver[at] = -1 if ver is None else ver[rows]
        best: I64 = e.best[idx]
        return best, (e.dev[idx] if share else None)


def _after(free: I64, cpu: I64, mid: IDX, shape: tuple[int, int, int]) -> tuple[I64, I64, IDX]:
    """The states (devices, CPU, model) after placing a pod of ``shape`` = (cpu, milli, count)
    on each state: for a share one per device tried (row-major, W per state), else the first
    ``count`` fully free devices taken."""
    pod_cpu, milli, count = shape
    cpu = cpu - pod_cpu
    if count == 1 and 0 < milli < gs.MILLI:
        w = free.shape[1]
        f3 = free[:, None, :]
        tried = np.where(np.eye(w, dtype=np.bool_)[None, :, :], f3 - milli, f3)  # (r, tried, device)
        return tried.reshape(-1, w), np.repeat(cpu, w), np.repeat(mid, w)
    if count > 0 and milli > 0:  # the first ``count`` fully free devices
        full = free == gs.MILLI
        free = np.where(full & (np.cumsum(full, axis=1) <= count), 0, free)
    return free, cpu, mid


def gradient_score(before: F64, after: F64) -> I64:
    """FGD's node score: ``int(100 * sigmoid((before - after) / 1000))``."""
    x = (before - after) / 1000.0
    out: I64 = np.trunc(gs.MAX_NODE_SCORE / (1.0 + np.exp(-x))).astype(np.int64)
    return out


def memo_for(w: gs.Workload, n: int, width: int) -> Memo:
    """The workload's memo; a new one when the typical pods changed or the nodes (count, device
    width) outgrew it."""
    typ = w.typical()
    m = w.memo
    if isinstance(m, Memo) and m.typical is typ and n <= m.n and width <= m.w:
        return m
    old_n, old_w = (m.n, m.w) if isinstance(m, Memo) else (0, 0)
    m = Memo(typ, max(n, old_n), max(width, old_w))
    w.memo = m
    return m


def padded(free: I64, width: int) -> I64:
    if free.shape[1] == width:
        return free
    out = np.full((free.shape[0], width), -1, dtype=np.int64)
    out[:, : free.shape[1]] = free
    return out
