"""Nominated pods as NumPy columns (upstream addNominatedPods): the pending pods that hold a
nominated node, with their priority and requests, so the scheduler checks every node's
nominated totals at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

import numpy as np
import numpy.typing as npt

from scheduler.snapshot import Demand

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

_NO_PRIO = np.iinfo(np.int64).min  # a free row: never >= any priority


class NominatedColumns:
    """``PodScheduler.nominated`` as columns, kept up to date by ``add``/``remove``: one row per nominated
    pod (free rows are reused) with its key, node, priority and, per resource, its amount. The
    node column holds snapshot node indices (-1: not a node of the snapshot), recomputed when the
    snapshot's node index changes."""

    __slots__ = ("keys", "pos", "node_names", "prio", "cols", "_free", "_index", "_node")

    def __init__(self) -> None:
        self.keys: list[str | None] = []
        self.pos: dict[str, int] = {}
        self.node_names: list[str] = []
        self.prio: I64 = np.zeros(0, dtype=np.int64)
        self.cols: dict[str, I64] = {}
        self._free: list[int] = []
        self._index: dict[str, int] | None = None
        self._node: I64 = np.zeros(0, dtype=np.int64)

    def _grow(self) -> None:
        n = len(self.keys)
        cap = max(16, 2 * n)
        self.keys.extend([None] * (cap - n))
        self.node_names.extend([""] * (cap - n))
        self.prio = np.concatenate([self.prio, np.full(cap - n, _NO_PRIO, dtype=np.int64)])
        for name, col in self.cols.items():
            self.cols[name] = np.concatenate([col, np.zeros(cap - n, dtype=np.int64)])
        self._free.extend(range(cap - 1, n - 1, -1))
        self._index = None

    def remove(self, key: str, d: Demand | None) -> None:
        j = self.pos.pop(key, None)
        if j is None:
            return
        self.keys[j] = None
        self.prio[j] = _NO_PRIO
        for name in d.names if d is not None else self.cols:
            self.cols[name][j] = 0
        self._free.append(j)

    def add(self, key: str, node: str, priority: int, d: Demand) -> None:
        if not self._free:
            self._grow()
        j = self._free.pop()
        self.keys[j] = key
        self.pos[key] = j
        self.node_names[j] = node
        self.prio[j] = priority
        for name, a in zip(d.names, d.amounts, strict=True):
            col = self.cols.get(name)
            if col is None:
                col = self.cols[name] = np.zeros(len(self.keys), dtype=np.int64)
            col[j] = a
        if self._index is not None:
            self._node[j] = self._index.get(node, -1)

    def node(self, index: dict[str, int]) -> I64:
        if self._index is not index:
            self._node = np.array([index.get(nm, -1) for nm in self.node_names], dtype=np.int64)
            self._index = index
        return self._node

    def counted(
        self, index: dict[str, int], priority: int, own: Iterable[str], assumed: AbstractSet[str]
    ) -> BOOL:
        """Rows of the nominated pods that count against a pod of ``priority`` (upstream
        addNominatedPods): priority >= it, on a node of the snapshot, not one of ``own`` (the
        pods being scheduled) and not ``assumed`` (an assumed pod no longer counts as
        nominated)."""
        node = self.node(index)
        sel: BOOL = self.prio >= priority
        sel &= node >= 0
        pos = self.pos
        for k in own:
            j = pos.get(k)
            if j is not None:
                sel[j] = False
        for k in assumed:
            j = pos.get(k)
            if j is not None:
                sel[j] = False
        return sel

    def totals(self, index: dict[str, int], n: int, sel: BOOL, names: Sequence[str]) -> tuple[I64, list[I64]]:
        """Per-node NumPy totals of the ``sel`` rows: (pod count per node, per resource of
        ``names`` the summed requests per node), each of length ``n``."""
        at = self.node(index)[sel]
        count: I64 = np.bincount(at, minlength=n).astype(np.int64)
        out: list[I64] = []
        for name in names:
            tot = np.zeros(n, dtype=np.int64)
            col = self.cols.get(name)
            if col is not None and len(at):
                np.add.at(tot, at, col[sel])
            out.append(tot)
        return count, out
