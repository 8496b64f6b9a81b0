"""Cluster snapshot as a NumPy structure of arrays.

Layout (resource-major so that one resource of all nodes is one contiguous row):

* ``names[i]`` / ``index[name]``: node order = sorted by ``(Node.seq, Node.name)``; this order is
  the deterministic tie-break of the whole scheduler ("lowest node index wins").
* ``alloc[r, n]`` and ``free[r, n]`` (int64): allocatable and allocatable minus requested over a
  resource index (``cpu``, ``memory``, ``pods`` first, then extended resources discovered
  dynamically, e.g. ``nvidia.com/gpu``). A resource a node does not list has allocatable 0.
  ``pods`` is implicit: every pod requests exactly one. A node that does not list ``pods`` gets
  the kubelet default of 110.
* ``nz[0|1, n]``: non-zero requested cpu / memory (kube-scheduler scoring counts a pod without a
  cpu request as 100m and without a memory request as 200Mi).
* label index: per key the value id of every node (``-1`` = label absent); masks for
  ``(key, operator, values)`` are cached until the node set changes (``generation``).
* ``caches``: what plugins derive from the snapshot, in named, typed slots (``NodeSetCaches``),
  all dropped when the node set changes.
* taint sets: ``taint_set[n]`` indexes a small list of distinct taint tuples.

``assume``/``forget`` change the arrays in place. ``backup()`` returns a mark and starts journaling;
``restore(mark)`` undoes every change made after the mark, ``release(mark)`` keeps them. Both cost
O(what changed), not O(cluster). Adding, removing or changing nodes marks the arrays stale; they
are rebuilt (O(nodes + assigned pods)) on the next access, which is rare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.model import CPU, MEMORY, PODS, Node, Pod, Requirement, Taint, parse_int64

if TYPE_CHECKING:
    from scheduler.framework import FilterSignature
    from scheduler.gpushare import DeviceTable
    from scheduler.plugins.pod_index import PodIndex

I64 = npt.NDArray[np.int64]
_IntArray = TypeVar("_IntArray", npt.NDArray[np.int32], npt.NDArray[np.int64])
BOOL = npt.NDArray[np.bool_]
IDX = npt.NDArray[np.intp]

DEFAULT_MAX_PODS = 110
DEFAULT_MILLI_CPU_REQUEST = 100  # kube-scheduler util.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # util.DefaultMemoryRequest

BASE_RESOURCES = (CPU, MEMORY, PODS)
R_CPU, R_MEM, R_PODS = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Demand:
    """A pod's resource request in snapshot terms (built by ``Snapshot.demand``)."""

    names: tuple[str, ...]  # requested resources with amount > 0 (never "pods")
    amounts: tuple[int, ...]
    nz_cpu: int
    nz_mem: int

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self.names, self.amounts, strict=True))


def distinct_sorted(a: _IntArray) -> _IntArray:
    """The distinct values of ``a`` in ascending order: ``np.unique``'s result, by one sort and a
    neighbour comparison (several times faster than ``np.unique`` on the few thousand node ids
    of a placement; measured with ``BENCH_ONLY=bench_tas_anti python -m bench.core``)."""
    s = np.sort(a)
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def make_demand(requests: Mapping[str, int]) -> Demand:
    """The Demand of ``requests`` (memoized: pods share a few request shapes; Demand is frozen)."""
    return _demand_of(tuple(requests.items()))


@lru_cache(maxsize=4096)
def _demand_of(items: tuple[tuple[str, Any], ...]) -> Demand:
    return _make_demand(dict(items))


def _make_demand(requests: Mapping[str, int]) -> Demand:
    items = sorted((k, int(v)) for k, v in requests.items() if k != PODS and int(v) > 0)
    cpu = int(requests.get(CPU, 0))
    mem = int(requests.get(MEMORY, 0))
    return Demand(
        names=tuple(k for k, _ in items),
        amounts=tuple(v for _, v in items),
        nz_cpu=cpu if cpu > 0 else DEFAULT_MILLI_CPU_REQUEST,
        nz_mem=mem if mem > 0 else DEFAULT_MEMORY_REQUEST,
    )


class LabelColumn:
    """Values of one label key over all nodes."""

    __slots__ = ("ids", "values", "value_of", "ints", "int_ok")

    def __init__(self, key: str, nodes: list[Node]) -> None:
        value_of: dict[str, int] = {}
        ids = np.full(len(nodes), -1, dtype=np.int32)
        ints = np.zeros(len(nodes), dtype=np.int64)
        int_ok = np.zeros(len(nodes), dtype=np.bool_)
        for i, node in enumerate(nodes):
            v = node.labels.get(key)
            if v is None:
                continue
            vid = value_of.setdefault(v, len(value_of))
            ids[i] = vid
            parsed = parse_int64(v)
            if parsed is not None:
                ints[i] = parsed
                int_ok[i] = True
        self.ids = ids
        self.value_of = value_of
        self.values = list(value_of)
        self.ints = ints
        self.int_ok = int_ok


class Domains:
    """Partition of the nodes by the value of one topology label key."""

    __slots__ = ("key", "ids", "values", "order", "starts", "counts")

    def __init__(self, key: str, col: LabelColumn) -> None:
        self.key = key
        # domain ids in sorted value order (deterministic placement order)
        sorted_vals = sorted(col.values)
        remap = np.full(len(col.values) + 1, -1, dtype=np.int32)
        for new, v in enumerate(sorted_vals):
            remap[col.value_of[v] + 1] = new
        self.ids: npt.NDArray[np.int32] = remap[col.ids + 1]
        self.values = sorted_vals
        valid = np.flatnonzero(self.ids >= 0)
        order = valid[np.argsort(self.ids[valid], kind="stable")]
        self.order: IDX = order.astype(np.intp)
        counts = np.bincount(self.ids[valid], minlength=len(sorted_vals)).astype(np.int64)
        self.counts: I64 = counts
        starts = np.zeros(len(sorted_vals), dtype=np.intp)
        if len(sorted_vals) > 1:
            starts[1:] = np.cumsum(counts)[:-1]
        self.starts: IDX = starts

    def sums(self, arr: I64) -> I64:
        """Exact per-domain sums of a per-node int64 array (nodes without the label excluded)."""
        if len(self.values) == 0:
            return np.zeros(0, dtype=np.int64)
        if len(self.order) == 0:
            return np.zeros(len(self.values), dtype=np.int64)
        out: I64 = np.add.reduceat(arr[self.order], self.starts)
        # reduceat returns arr[start] for empty segments; domains are never empty here
        return out


@dataclass(slots=True)
class NodeSetCaches:
    """The snapshot's caches for plugins, one typed slot each. A new instance replaces the old
    one when the node set changes (``Snapshot._rebuild``: a node added, removed or changed), the
    invalidation every slot shares; a slot that also follows the pods says how."""

    # NodeAffinity (``requirement_mask``): per requirement, the nodes whose labels match it
    requirement_masks: dict[Requirement, BOOL] = field(default_factory=dict)
    # gpushare (``view_of``): per node, the id of its GPU model label (``gpushare.model_id``)
    gpu_model_ids: IDX | None = None
    # gpushare (``device_table``): free milli per device of every node, following ``log``
    gpu_devices: DeviceTable | None = None
    # the structured why (``cycle/why.py``): per filter signature, per node the first node filter
    # that rejects a pod of that signature whatever the node's load (None: none does)
    why_rejections: dict[FilterSignature, list[str | None]] = field(default_factory=dict)
    # the scheduled-pod index of the pod-aware plugins (``plugins/pod_index.py``): follows
    # ``pod_log`` pod by pod and rebuilds itself when ``epoch`` changes
    pod_index: PodIndex | None = None


class Snapshot:
    """Mutable cluster view used by the scheduling cycles (see module docstring)."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        # assigned/assumed pods: key -> (node name, demand, group key or None)
        self._pods: dict[str, tuple[str, Demand, str | None]] = {}
        self.res_names: list[str] = list(BASE_RESOURCES)
        self.res_index: dict[str, int] = {r: i for i, r in enumerate(self.res_names)}
        self.generation = 0
        self._stale = True
        self._journal: list[tuple[int, str, str, Demand, str | None]] = []
        self._depth = 0
        # node indices whose free/nz changed, in order (``~i`` when a pod left node i: its
        # scores may rise); caches remember a position in it
        self.log: list[int] = []
        self.epoch = 0
        # derived
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.nodes: list[Node] = []
        self.alloc: I64 = np.zeros((3, 0), dtype=np.int64)
        self.free: I64 = np.zeros((3, 0), dtype=np.int64)
        self.nz: I64 = np.zeros((2, 0), dtype=np.int64)
        self._cells: tuple[I64, I64, memoryview, memoryview] | None = None  # see ``_apply``
        self.unschedulable: BOOL = np.zeros(0, dtype=np.bool_)
        self.taint_sets: list[tuple[Taint, ...]] = []
        self.taint_set: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._all_nodes: BOOL = np.zeros(0, dtype=np.bool_)
        self._labels: dict[str, LabelColumn] = {}
        self._domains: dict[str, Domains] = {}
        self.caches = NodeSetCaches()
        # scheduled pods per node / per group (assigned + assumed), on known nodes or not
        self.node_pods: dict[str, set[str]] = {}
        self.group_pods: dict[str, dict[str, str]] = {}
        self.touched_groups: set[str] = set()  # groups whose scheduled pods changed (scheduler.satisfied)
        # pod-aware plugins: the Pod object of every scheduled pod (through ``resolve``, set by
        # the owner: the scheduler's pod table) and ``pod_log``, (+1 | -1, pod) per change in
        # order, which their incremental caches fold in (reset with ``epoch``)
        self.resolve: Callable[[str], Pod | None] = _no_pod
        self.objs: dict[str, Pod] = {}
        self.pod_log: list[tuple[int, str, Pod]] = []  # (+1 | -1, node name, pod)
        # scheduled pods with required anti-affinity / any pod (anti-)affinity term: lets the
        # plugins say "nothing to do" without reading the pod log
        self.n_anti_required = 0
        self.n_pod_affinity = 0
        # per namespace, the requests (``pods`` and zeros left out) summed over its scheduled pods
        # and how many there are: elastic quota usage without a scan of every pod (scheduler.quota)
        self.ns_used: dict[str, dict[str, int]] = {}
        self.ns_count: dict[str, int] = {}
        # watched keys (the owner's nominated pods) and which of them are pods of the snapshot,
        # kept up to date pod by pod: ``pods_among(watched)`` costs O(its result)
        self.watched: set[str] = set()
        self._watched_in: set[str] = set()

    # ------------------------------------------------------------------ nodes
    def upsert_node(self, node: Node) -> None:
        self._nodes[node.name] = node
        self._stale = True

    def remove_node(self, name: str) -> None:
        if self._nodes.pop(name, None) is not None:
            self._stale = True

    @property
    def all_nodes(self) -> BOOL:
        """Mask of every node (read-only by convention)."""
        if self._stale:
            self._rebuild()
        return self._all_nodes

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    @property
    def n(self) -> int:
        self.refresh()
        return len(self.names)

    def refresh(self) -> None:
        if self._stale:
            self._rebuild()

    def _rebuild(self) -> None:
        assert self._depth == 0, "node set changed during a cycle"
        nodes = sorted(self._nodes.values(), key=lambda nd: (nd.seq, nd.name))
        for nd in nodes:
            for r in nd.allocatable:
                self._ensure_name(r)
        for entry in self._pods.values():
            for res_name in entry[1].names:
                self._ensure_name(res_name)
        self.nodes = nodes
        self.names = [nd.name for nd in nodes]
        self.index = {nm: i for i, nm in enumerate(self.names)}
        n, nres = len(nodes), len(self.res_names)
        alloc = np.zeros((nres, n), dtype=np.int64)
        for i, nd in enumerate(nodes):
            for res, q in nd.allocatable.items():
                alloc[self.res_index[res], i] = int(q)
            if PODS not in nd.allocatable:
                alloc[R_PODS, i] = DEFAULT_MAX_PODS
        self.alloc = alloc
        self.free = alloc.copy()
        self.nz = np.zeros((2, n), dtype=np.int64)
        for node_name, d, _ in self._pods.values():
            j = self.index.get(node_name)
            if j is not None:
                self._apply(j, d, 1)
        self.unschedulable = np.array([nd.unschedulable for nd in nodes], dtype=np.bool_)
        sets: dict[tuple[Taint, ...], int] = {}
        ts = np.zeros(n, dtype=np.int32)
        for i, nd in enumerate(nodes):
            ts[i] = sets.setdefault(tuple(nd.taints), len(sets))
        self.taint_sets = list(sets)
        self.taint_set = ts
        self._all_nodes = np.ones(n, dtype=np.bool_)
        self._labels = {}
        self._domains = {}
        self.caches = NodeSetCaches()
        self.generation += 1
        self.epoch += 1
        self.log = []
        self.pod_log = []
        self._stale = False

    # -------------------------------------------------------------- resources
    def _ensure_name(self, name: str) -> int:
        i = self.res_index.get(name)
        if i is None:
            i = len(self.res_names)
            self.res_names.append(name)
            self.res_index[name] = i
            if not self._stale:
                n = len(self.names)
                self.alloc = np.vstack([self.alloc, np.zeros((1, n), dtype=np.int64)])
                self.free = np.vstack([self.free, np.zeros((1, n), dtype=np.int64)])
                self.epoch += 1
        return i

    def ensure_resources(self, names: Iterable[str]) -> None:
        for r in names:
            if r not in self.res_index:
                self._ensure_name(r)

    def resource_rows(self, d: Demand) -> tuple[int, ...]:
        self.ensure_resources(d.names)
        ri = self.res_index
        return tuple(ri[r] for r in d.names)

    # ------------------------------------------------------------------- pods
    def _apply(self, i: int, d: Demand, sign: int) -> None:
        # The cells are written through memoryviews of ``free`` and ``nz`` (a cell read and
        # written as a Python int: ~0.1 us instead of ~0.3 through a NumPy scalar), kept with
        # the arrays they view and made again when either array was replaced.
        c = self._cells
        if c is None or c[0] is not self.free or c[1] is not self.nz:
            c = self._cells = (self.free, self.nz, self.free.data, self.nz.data)
        free, nz = c[2], c[3]
        ri = self.res_index
        for name, amt in zip(d.names, d.amounts, strict=True):
            free[ri[name], i] -= sign * amt
        free[R_PODS, i] -= sign
        nz[R_CPU, i] += sign * d.nz_cpu
        nz[R_MEM, i] += sign * d.nz_mem
        log = self.log
        log.append(i if sign > 0 else ~i)
        if len(log) > 4 * len(self.names) + 4096:
            self.epoch += 1
            log.clear()
            self.pod_log.clear()

    def _ns_account(self, obj: Pod, sign: int) -> None:
        ns = obj.namespace
        n = self.ns_count.get(ns, 0) + sign
        if n:
            self.ns_count[ns] = n
        else:
            self.ns_count.pop(ns, None)
        used = self.ns_used.get(ns)
        if used is None:
            used = self.ns_used[ns] = {}
        for r, v in obj.requests.items():
            if r != PODS and v:
                t = used.get(r, 0) + sign * int(v)
                if t:
                    used[r] = t
                else:
                    del used[r]
        if not used:
            del self.ns_used[ns]

    def _log_pod(self, sign: int, node_name: str, obj: Pod) -> None:
        self._ns_account(obj, sign)
        if obj.has_pod_affinity:  # (a required anti-affinity term is one)
            self.n_pod_affinity += sign
            if obj.anti_affinity_required:
                self.n_anti_required += sign
        pl = self.pod_log
        pl.append((sign, node_name, obj))
        if len(pl) > 4 * len(self.names) + 4096:
            self.epoch += 1
            pl.clear()
            self.log.clear()

    def add_pod(self, key: str, node_name: str, d: Demand, group: str | None) -> None:
        """Account an assigned or assumed pod (journaled while a backup is active)."""
        if key in self._pods:
            self.remove_pod(key)
        self.ensure_resources(d.names)
        self._pods[key] = (node_name, d, group)
        if key in self.watched:
            self._watched_in.add(key)
        obj = self.resolve(key)
        if obj is not None:
            self.objs[key] = obj
            self._log_pod(1, node_name, obj)
        self.node_pods.setdefault(node_name, set()).add(key)
        if group is not None:
            self.group_pods.setdefault(group, {})[key] = node_name
            self.touched_groups.add(group)
        if not self._stale:
            i = self.index.get(node_name)
            if i is not None:
                self._apply(i, d, 1)
        if self._depth:
            self._journal.append((1, key, node_name, d, group))

    def remove_pod(self, key: str) -> None:
        entry = self._pods.pop(key, None)
        if entry is None:
            return
        node_name, d, group = entry
        self._watched_in.discard(key)
        obj = self.objs.pop(key, None)
        if obj is not None:
            self._log_pod(-1, node_name, obj)
        s = self.node_pods.get(node_name)
        if s is not None:
            s.discard(key)
            if not s:
                del self.node_pods[node_name]
        if group is not None:
            self.touched_groups.add(group)
            g = self.group_pods.get(group)
            if g is not None:
                g.pop(key, None)
                if not g:
                    del self.group_pods[group]
        if not self._stale:
            i = self.index.get(node_name)
            if i is not None:
                self._apply(i, d, -1)
        if self._depth:
            self._journal.append((-1, key, node_name, d, group))

    def assume(self, key: str, node_idx: int, d: Demand, group: str | None) -> None:
        self.add_pod(key, self.names[node_idx], d, group)

    def forget(self, key: str) -> None:
        self.remove_pod(key)

    def pod_node(self, key: str) -> str | None:
        e = self._pods.get(key)
        return e[0] if e is not None else None

    def has_pod(self, key: str) -> bool:
        return key in self._pods

    def pods_among(self, keys: AbstractSet[str]) -> AbstractSet[str]:
        """Which of ``keys`` are pods of the snapshot: for ``watched`` the kept answer (O(its
        size)), otherwise one set intersection. Read-only by convention."""
        if keys is self.watched:
            return self._watched_in
        return self._pods.keys() & keys

    def watch(self, key: str) -> None:
        """Track whether ``key`` is a pod of the snapshot (see ``pods_among``)."""
        self.watched.add(key)
        if key in self._pods:
            self._watched_in.add(key)

    def unwatch(self, key: str) -> None:
        self.watched.discard(key)
        self._watched_in.discard(key)

    # ---------------------------------------------------------------- journal
    def backup(self) -> int:
        self.refresh()
        self._depth += 1
        return len(self._journal)

    def restore(self, mark: int) -> None:
        j = self._journal
        depth = self._depth
        self._depth = 0  # undo without journaling
        while len(j) > mark:
            op, key, node_name, d, group = j.pop()
            if op == 1:
                self.remove_pod(key)
            else:
                self.add_pod(key, node_name, d, group)
        self._depth = depth - 1
        if self._depth == 0:
            j.clear()

    def release(self, mark: int) -> None:
        """Keep the changes made since ``mark``."""
        self._depth -= 1
        if self._depth == 0:
            self._journal.clear()
        del mark

    # ------------------------------------------------------------------ index
    def label(self, key: str) -> LabelColumn:
        self.refresh()
        col = self._labels.get(key)
        if col is None:
            col = LabelColumn(key, self.nodes)
            self._labels[key] = col
        return col

    def domains(self, key: str) -> Domains:
        self.refresh()
        d = self._domains.get(key)
        if d is None:
            d = Domains(key, self.label(key))
            self._domains[key] = d
        return d

    def requested_row(self, r: int) -> I64:
        out: I64 = self.alloc[r] - self.free[r]
        return out

    def usage(self) -> list[tuple[str, dict[str, int], dict[str, int]]]:
        self.refresh()
        out: list[tuple[str, dict[str, int], dict[str, int]]] = []
        for i, nm in enumerate(self.names):
            alloc = {
                r: int(self.alloc[k, i])
                for k, r in enumerate(self.res_names)
                if self.alloc[k, i] or r in BASE_RESOURCES
            }
            req = {
                r: int(self.alloc[k, i] - self.free[k, i])
                for k, r in enumerate(self.res_names)
                if self.alloc[k, i] - self.free[k, i] or r in BASE_RESOURCES
            }
            out.append((nm, alloc, req))
        return out


def _no_pod(key: str) -> Pod | None:
    del key
    return None


def pod_demand(pod: Pod) -> Demand:
    return make_demand(pod.requests)
