"""FGD (fragmentation gradient descent): place the pod where the node's fragmentation
(``gpufrag.fragmentation`` over the typical pods) grows least. Score
``int(100 * sigmoid((F_before - F_after) / 1000))``; for a share pod every device that holds it
is tried and the first best kept (that device is the one used), a multi-GPU pod takes the first
free devices, a pod without GPU only lowers the node's free CPU. The scores come from the
workload's memo (``gpufrag.Memo.scores_of``): per pod shape, each node's score (a share's: its
best device's, and that device) is kept with the node state it was computed for, and only nodes
whose state changed are scored again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler import gpufrag

if TYPE_CHECKING:
    from scheduler.plugins.gpu import I64, Ctx

NAME = "FGD"
DEVICE = "own"


def score(ctx: Ctx) -> tuple[I64, I64 | None]:
    v, g = ctx.view, ctx.g
    m = len(v.idx)
    memo = gpufrag.memo_for(ctx.workload, int(v.idx.max()) + 1 if m else 0, v.free.shape[1])
    free = gpufrag.padded(v.free, memo.w)
    return memo.scores_of(v.idx, free, v.cpu, v.mid, (ctx.cpu, g.milli, g.count), v.ver)
