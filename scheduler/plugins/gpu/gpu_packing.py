"""GpuPacking: prefer partly used GPUs, then free GPUs on used nodes, then idle nodes.
Case 1 (only partly used devices needed): ``max(100 - sum(free% of those devices) // 10, 50)``;
case 2 (fully free devices of a used node): ``max(50 - their number, 33)``; case 3 (every device
of the node free): ``max(33 - free devices, free devices)``. The devices are taken least free
first. A pod without GPU scores 0. Device: best fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler import gpushare as gs

if TYPE_CHECKING:
    from scheduler.plugins.gpu import I64, Ctx

NAME = "GpuPacking"
DEVICE = "best"


def score(ctx: Ctx) -> tuple[I64, I64 | None]:
    v, g = ctx.view, ctx.g
    m = len(v.idx)
    if g.milli <= 0 or g.count <= 0:
        return np.zeros(m, dtype=np.int64), None
    n_dev = (v.free >= 0).sum(axis=1)
    full = v.fully_free
    out = np.zeros(m, dtype=np.int64)
    idle = full == n_dev
    out = np.where(idle, np.maximum(gs.MAX_NODE_SCORE // 3 - full, full), out)
    if g.count == 1 and g.milli < gs.MILLI:
        # one device: the least free one that holds the share
        best = np.where(v.free >= g.milli, v.free, np.iinfo(np.int64).max).min(axis=1)
        case2 = best == gs.MILLI
        s1 = np.maximum(gs.MAX_NODE_SCORE - (best * 100 // gs.MILLI) // 10, gs.MAX_NODE_SCORE // 2)
        s2 = max(gs.MAX_NODE_SCORE // 2 - 1, gs.MAX_NODE_SCORE // 3)
        used = np.where(case2, s2, s1)
    else:
        used = np.full(m, max(gs.MAX_NODE_SCORE // 2 - g.count, gs.MAX_NODE_SCORE // 3), dtype=np.int64)
    res: I64 = np.where(idle, out, used)
    return res, None
