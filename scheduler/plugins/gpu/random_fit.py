"""Random: one feasible node drawn uniformly (the simulator's RandomScore PreScore: that node
scores 100, every other 0); a share pod's device is drawn among the devices that hold it.
The draw is a hash of the pod key: deterministic, and replay reproduces it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler import gpushare as gs

if TYPE_CHECKING:
    from scheduler.plugins.gpu import I64, Ctx

NAME = "Random"
DEVICE = "random"


def score(ctx: Ctx) -> tuple[I64, I64 | None]:
    m = len(ctx.view.idx)
    out = np.zeros(m, dtype=np.int64)
    out[gs.stable_hash("gpu-node", ctx.key) % m] = gs.MAX_NODE_SCORE
    return out, None
