"""BestFit: ``100 * (1 - [0.5 (cpu_free - cpu_req)/128000 + 0.5 (gpu_free - gpu_req)/8000])``
truncated to an integer (the least leftover wins); the simulator's min-max normalisation keeps
the order and the ties, so it is left out. Device: best fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler import gpushare as gs

if TYPE_CHECKING:
    from scheduler.plugins.gpu import I64, Ctx

NAME = "BestFit"
DEVICE = "best"


def score(ctx: Ctx) -> tuple[I64, I64 | None]:
    v, g = ctx.view, ctx.g
    # ``0.5 * x / c`` is ``x / (2 c)`` to the last bit (halving an integer below 2**53 is
    # exact, then one correctly rounded division either way), and the cast to int64 truncates
    # like ``np.trunc``: three NumPy passes fewer over the nodes, the same scores
    left = (v.cpu - ctx.cpu) / (2 * gs.MAX_SPEC_CPU)
    left += (v.total - g.milli * g.count) / (2 * gs.MAX_SPEC_GPU)
    out: I64 = ((1.0 - left) * gs.MAX_NODE_SCORE).astype(np.int64)
    return out, None
