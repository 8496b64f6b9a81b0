"""FGD (fragmentation gradient descent): place the pod where the node's fragmentation
(``gpufrag.fragmentation`` over the typical pods) grows least. Score
``int(100 * sigmoid((F_before - F_after) / 1000))``; for a share pod every device that holds it
is tried and the first best kept (that device is the one used), a multi-GPU pod takes the first
free devices, a pod without GPU only lowers the node's free CPU. F_before and F_after come from
the workload's memo (``gpufrag.Memo``): only nodes whose state changed are computed again."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler import gpufrag
from scheduler import gpushare as gs

if TYPE_CHECKING:
    from scheduler.plugins.gpu import I64, Ctx

NAME = "FGD"
DEVICE = "own"


def _score(before: gs.F64, after: gs.F64) -> I64:
    x = (before - after) / 1000.0
    out: I64 = np.trunc(gs.MAX_NODE_SCORE / (1.0 + np.exp(-x))).astype(np.int64)
    return out


def score(ctx: Ctx) -> tuple[I64, I64 | None]:
    v, g = ctx.view, ctx.g
    m = len(v.idx)
    memo = gpufrag.memo_for(ctx.workload, int(v.idx.max()) + 1 if m else 0, v.free.shape[1])
    free = gpufrag.padded(v.free, memo.w)
    before = memo.before_of(v.idx, free, v.cpu, v.mid)
    after = memo.after_of(v.idx, free, v.cpu, v.mid, (ctx.cpu, g.milli, g.count))
    if g.count == 1 and 0 < g.milli < gs.MILLI:
        s = _score(before[:, None], after)
        s = np.where(free >= g.milli, s, -1)
        dev = np.argmax(s, axis=1)
        out: I64 = s[np.arange(m), dev]
        return out, dev.astype(np.int64)
    return _score(before, after), None
