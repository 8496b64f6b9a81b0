"""DotProduct (the simulator's DotProductScore with ``merge`` dimensions and ``max`` norm): node
vector ``[cpu_free/128000, gpu_free/8000]``, pod vector ``[cpu_req/128000, gpu_req/8000]``;
score ``int(100 * (1 - dot/2))`` (the larger the dot product, the lower the score), 0 where the
CPU does not fit. Device: best fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler import gpushare as gs

if TYPE_CHECKING:
    from scheduler.plugins.gpu import I64, Ctx

NAME = "DotProduct"
DEVICE = "best"


def score(ctx: Ctx) -> tuple[I64, I64 | None]:
    v, g = ctx.view, ctx.g
    c = ctx.cpu / gs.MAX_SPEC_CPU
    gr = g.milli * g.count / gs.MAX_SPEC_GPU
    dot = (v.cpu / gs.MAX_SPEC_CPU) * c + (v.total / gs.MAX_SPEC_GPU) * gr
    out: I64 = np.trunc(gs.MAX_NODE_SCORE * (1.0 - dot / 2)).astype(np.int64)
    out = np.where(v.cpu >= ctx.cpu, out, 0)
    return out, None
