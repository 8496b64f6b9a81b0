"""NodeResourcesFit: resource fit filter and node scoring (its placement scorer, bin packing over
a whole placement, lives with the other placement scorer in ``placement_scoring``).

Filter (Unschedulable): ``Too many pods`` when the node's pod slots are used up, and
``Insufficient <resource>`` for every requested resource (> 0) whose free amount is smaller than
the request (a resource the node does not list has allocatable 0).

Score: ``LeastAllocated`` (default) ``(alloc - used) * 100 // alloc`` or ``MostAllocated``
``min(used, alloc) * 100 // alloc`` per scored resource (config ``resource_weights``), with
``used`` = node's non-zero requests + the pod's non-zero request for cpu/memory (upstream
``NonZeroRequested``) and plain requests for extended resources (which are only scored when the
pod requests them). Resources with allocatable 0 are skipped; result = weighted sum // weight sum.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.framework import Code, FilterResult
from scheduler.messages import ERR_INSUFFICIENT
from scheduler.messages import ERR_TOO_MANY_PODS as TOO_MANY_PODS
from scheduler.model import CPU, MEMORY
from scheduler.snapshot import R_CPU, R_MEM, R_PODS, Demand, Snapshot

NAME = "NodeResourcesFit"
MAX_NODE_SCORE = 100

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]
IDX = npt.NDArray[np.intp]


def insufficient(resource: str) -> str:
    return ERR_INSUFFICIENT % resource


def fit_mask(snap: Snapshot, rows: tuple[int, ...], amounts: tuple[int, ...], idx: IDX | None = None) -> BOOL:
    free = snap.free if idx is None else snap.free[:, idx]
    ok: BOOL = free[R_PODS] >= 1
    for r, a in zip(rows, amounts, strict=True):
        ok &= free[r] >= a
    return ok


def filter_nodes(d: Demand, snap: Snapshot) -> FilterResult:
    rows = snap.resource_rows(d)
    # one comparison over the pod-slot row and the requested rows (row k of ``bad``: the nodes
    # short of it), instead of a few NumPy calls per row
    bad: BOOL = snap.free[[R_PODS, *rows]] < np.array([1, *d.amounts], dtype=np.int64)[:, None]
    hit: list[bool] = np.logical_or.reduce(bad, axis=1).tolist()
    reasons: list[tuple[str, BOOL]] = []
    if hit[0]:
        reasons.append((TOO_MANY_PODS, bad[0]))
    for k, name in enumerate(d.names, 1):
        if hit[k]:
            reasons.append((insufficient(name), bad[k]))
    ok: BOOL = np.logical_not(np.logical_or.reduce(bad, axis=0))
    return FilterResult(NAME, ok, reasons, Code.UNSCHEDULABLE)


def filter_node(
    d: Demand, alloc: Mapping[str, int], requested: Mapping[str, int], pod_count: int, max_pods: int
) -> list[str]:
    out: list[str] = []
    if pod_count + 1 > max_pods:
        out.append(TOO_MANY_PODS)
    for name, a in zip(d.names, d.amounts, strict=True):
        if a > alloc.get(name, 0) - requested.get(name, 0):
            out.append(insufficient(name))
    return out


def fit_count(snap: Snapshot, rows: tuple[int, ...], amounts: tuple[int, ...]) -> I64:
    """How many more copies of the pod fit on each node (exact: each copy lowers it by one)."""
    free = snap.free
    cnt: I64 = np.maximum(free[R_PODS], 0)
    for r, a in zip(rows, amounts, strict=True):
        np.minimum(cnt, np.maximum(free[r], 0) // a, out=cnt)
    return cnt


def scored_resources(snap: Snapshot, d: Demand, weights: Mapping[str, int]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    dn = d.as_dict() if d.names else {}
    for res, w in sorted(weights.items()):
        if w <= 0:
            continue
        if res not in (CPU, MEMORY) and dn.get(res, 0) == 0:
            continue  # extended resources only when the pod requests them
        if res not in snap.res_index:
            continue
        out.append((snap.res_index[res], w, res))
    return out


def score_nodes(snap: Snapshot, d: Demand, idx: IDX | None, strategy: str, weights: Mapping[str, int]) -> I64:
    """Scores (0..100) of the nodes ``idx`` (all nodes when None)."""
    n = snap.n if idx is None else len(idx)
    total: I64 = np.zeros(n, dtype=np.int64)
    wsum: I64 = np.zeros(n, dtype=np.int64)
    most = strategy == "MostAllocated"
    dn = d.as_dict() if d.names else {}
    for r, w, res in scored_resources(snap, d, weights):
        if idx is None:
            alloc = snap.alloc[r]
            nz_or_free = snap.nz[r] if r in (R_CPU, R_MEM) else snap.free[r]
        else:
            alloc = snap.alloc[r][idx]
            nz_or_free = snap.nz[r][idx] if r in (R_CPU, R_MEM) else snap.free[r][idx]
        if r == R_CPU:
            used = nz_or_free + d.nz_cpu
        elif r == R_MEM:
            used = nz_or_free + d.nz_mem
        else:
            used = alloc - nz_or_free + dn.get(res, 0)
        pos = alloc > 0
        if pos.all():
            if most:
                s = np.minimum(used, alloc) * MAX_NODE_SCORE // alloc
            else:
                s = np.maximum(alloc - used, 0) * MAX_NODE_SCORE // alloc
            total += s * w
            wsum += w
        else:
            safe = np.where(pos, alloc, 1)
            if most:
                s = np.minimum(used, safe) * MAX_NODE_SCORE // safe
            else:
                s = np.maximum(safe - used, 0) * MAX_NODE_SCORE // safe
            total += np.where(pos, s * w, 0)
            wsum += np.where(pos, w, 0)
    out: I64 = np.where(wsum > 0, total // np.maximum(wsum, 1), 0)
    return out


def score_node_at(snap: Snapshot, d: Demand, i: int, strategy: str, weights: Mapping[str, int]) -> int:
    """Scalar version of ``score_nodes`` for one node index (cheap incremental updates)."""
    total = wsum = 0
    most = strategy == "MostAllocated"
    dn = d.as_dict() if d.names else {}
    alloc, free, nz = snap.alloc, snap.free, snap.nz
    for r, w, res in scored_resources(snap, d, weights):
        a = int(alloc[r, i])
        if a <= 0:
            continue
        if r == R_CPU:
            used = int(nz[R_CPU, i]) + d.nz_cpu
        elif r == R_MEM:
            used = int(nz[R_MEM, i]) + d.nz_mem
        else:
            used = a - int(free[r, i]) + dn.get(res, 0)
        if most:
            sc = min(used, a) * MAX_NODE_SCORE // a
        else:
            sc = 0 if used > a else (a - used) * MAX_NODE_SCORE // a
        total += sc * w
        wsum += w
    return total // wsum if wsum else 0


def fits_at(snap: Snapshot, rows: tuple[int, ...], amounts: tuple[int, ...], i: int) -> bool:
    free = snap.free
    if free[R_PODS, i] < 1:
        return False
    for r, a in zip(rows, amounts, strict=True):
        if free[r, i] < a:
            return False
    return True


def score_node_reference(
    d: Demand,
    alloc: Mapping[str, int],
    requested: Mapping[str, int],
    nz_cpu: int,
    nz_mem: int,
    strategy: str,
    weights: Mapping[str, int],
    dn: Mapping[str, int] | None = None,
    sorted_weights: list[tuple[str, int]] | None = None,
) -> int:
    if dn is None:
        dn = d.as_dict()
    total = wsum = 0
    for res, w in sorted_weights if sorted_weights is not None else sorted(weights.items()):
        if w <= 0:
            continue
        if res not in (CPU, MEMORY) and dn.get(res, 0) == 0:
            continue
        a = alloc.get(res, 0)
        if a == 0:
            continue
        if res == CPU:
            used = nz_cpu + d.nz_cpu
        elif res == MEMORY:
            used = nz_mem + d.nz_mem
        else:
            used = requested.get(res, 0) + dn.get(res, 0)
        if strategy == "MostAllocated":
            s = min(used, a) * MAX_NODE_SCORE // a
        else:
            s = 0 if used > a else (a - used) * MAX_NODE_SCORE // a
        total += s * w
        wsum += w
    return total // wsum if wsum else 0
