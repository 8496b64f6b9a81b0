"""TopologyPlacement: the default PlacementGenerate plugin (§6.2).

Partitions the parent placement's nodes by the value of the group's topology label; nodes
without the label are excluded; placements come in sorted label-value order and are named
``<key>=<value>``. When pods of the group (a CompositePodGroup: of its subtree) are already
scheduled, only the domain holding them is returned; several domains -> error
``more than 1 domain found for pod group``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from scheduler.framework import SUCCESS, Status, error
from scheduler.messages import ERR_MULTIPLE_DOMAINS
from scheduler.snapshot import Snapshot, distinct_sorted

NAME = "TopologyPlacement"

BOOL = npt.NDArray[np.bool_]


class Placement:
    """A candidate set of nodes: the parent's nodes whose label value is the domain's value
    (the node mask is built lazily: most placements are only scored through domain sums)."""

    __slots__ = ("name", "domain", "_parent", "_ids", "_nodes", "_size")

    def __init__(
        self,
        name: str,
        nodes: BOOL | None,
        domain: int = -1,
        parent: BOOL | None = None,
        ids: npt.NDArray[np.int32] | None = None,
        size: int | None = None,
    ) -> None:
        self.name = name
        self.domain = domain
        self._nodes = nodes
        self._parent = parent
        self._ids = ids
        self._size = size

    @property
    def size(self) -> int:
        """The number of nodes in the placement."""
        if self._size is None:
            self._size = int(np.count_nonzero(self.nodes))
        return self._size

    @property
    def nodes(self) -> BOOL:
        if self._nodes is None:
            assert self._parent is not None and self._ids is not None
            self._nodes = self._parent & (self._ids == self.domain)
        return self._nodes


def generate(
    snap: Snapshot, key: str | None, parent: BOOL, scheduled_nodes: Iterable[str]
) -> tuple[list[Placement], Status]:
    if not key:
        return [Placement("", parent)], SUCCESS
    dom = snap.domains(key)
    ids = dom.ids
    pinned: set[int] = set()
    for node_name in scheduled_nodes:
        i = snap.index.get(node_name)
        if i is None:
            continue
        d = int(ids[i])
        if d >= 0:
            pinned.add(d)
    if len(pinned) > 1:
        return [], error(ERR_MULTIPLE_DOMAINS, NAME)
    inside = ids[parent & (ids >= 0)]
    present = distinct_sorted(inside)
    sizes = np.bincount(inside, minlength=len(dom.values)) if len(inside) else None
    out: list[Placement] = []
    for d in present.tolist():
        if pinned and d not in pinned:
            continue
        size = int(sizes[d]) if sizes is not None else 0
        out.append(Placement(f"{key}={dom.values[d]}", None, d, parent, ids, size))
    return out, SUCCESS


class TopologyPlacement:
    """PlacementGenerate plugin."""

    name = NAME

    def generate(
        self, snap: Snapshot, key: str | None, parent: BOOL, scheduled_nodes: Iterable[str]
    ) -> tuple[list[Placement], Status]:
        return generate(snap, key, parent, scheduled_nodes)
