"""GpuClustering: pods of one GPU shape (tag ``share-gpu`` / ``<k>-gpu``) gather on the same
nodes. With ``u = 25 * (8000 - gpu_free) // 8000``: the node holds only the pod's tag -> 75 + u;
the pod's tag among others -> 50 + u; an idle node (no tag) -> 25 + u; other tags only -> u.
A pod without GPU scores 0 everywhere. Device: best fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler import gpushare as gs

if TYPE_CHECKING:
    from scheduler.plugins.gpu import I64, Ctx

NAME = "GpuClustering"
DEVICE = "best"
TAGS = True  # reads the view's affinity tag counts (``GpuView.tags``)


def score(ctx: Ctx) -> tuple[I64, I64 | None]:
    v = ctx.view
    m = len(v.idx)
    tag = gs.affinity_tag(ctx.g)
    if tag is None:
        return np.zeros(m, dtype=np.int64), None
    q = gs.MAX_NODE_SCORE // 4
    used = q * (gs.MAX_SPEC_GPU - v.total) // gs.MAX_SPEC_GPU
    kinds = np.zeros(m, dtype=np.int64)
    for c in v.tags.values():
        kinds += c > 0
    own = v.tags.get(tag, np.zeros(m, dtype=np.int64)) > 0
    base = np.where(own, np.where(kinds == 1, 3 * q, 2 * q), np.where(kinds == 0, q, 0))
    out: I64 = used + base
    return out, None
