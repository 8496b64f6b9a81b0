"""FGD (fragmentation gradient descent): place the pod where the node's fragmentation
(``gpushare.fragmentation`` over the typical pods) grows least. Score
``int(100 * sigmoid((F_before - F_after) / 1000))``; for a share pod every device that holds it
is tried and the first best kept (that device is the one used), a multi-GPU pod takes the first
free devices, a pod without GPU only lowers the node's free CPU."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

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
    typ = ctx.workload.typical()
    before = gs.fragmentation(v.free, v.cpu, v.models, typ)
    cpu_after = v.cpu - ctx.cpu
    if g.count == 1 and 0 < g.milli < gs.MILLI:
        m, n_dev = v.free.shape
        after_free = np.repeat(v.free[:, None, :], n_dev, axis=1)  # (m, device tried, device)
        eye = np.eye(n_dev, dtype=np.bool_)[None, :, :]
        after_free = np.where(eye, after_free - g.milli, after_free)
        after = gs.fragmentation(after_free, cpu_after[:, None], v.models, typ)
        s = _score(before[:, None], after)
        s = np.where(v.free >= g.milli, s, -1)
        dev = np.argmax(s, axis=1)
        out: I64 = s[np.arange(m), dev]
        return out, dev.astype(np.int64)
    after_free = v.free
    if g.count > 0 and g.milli > 0:  # the first ``count`` fully free devices (the filter ensured them)
        full = v.free == gs.MILLI
        after_free = np.where(full & (np.cumsum(full, axis=1) <= g.count), 0, v.free)
    return _score(before, gs.fragmentation(after_free, cpu_after, v.models, typ)), None
