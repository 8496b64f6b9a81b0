"""Device-level GPU sharing: which GPU of a node has how many milli-GPUs free.

Convention (Aliyun GPU share, as used by the FGD paper's simulator; see docs/paper.md): a pod
carries the annotations ``alibabacloud.com/gpu-milli`` (milli-GPU per device, 1..1000) and
``alibabacloud.com/gpu-count`` (devices, default 1); ``alibabacloud.com/gpu-card-model`` lists
the allowed GPU models (``A|B``; empty: any) and, as a node label, names the node's model. A node's
devices are ``0..n-1`` for its ``nvidia.com/gpu`` allocatable ``n``, 1000 milli each. The devices
a pod holds are the decision's ``PodBound.gpus`` (the annotation ``alibabacloud.com/gpu-index``,
``"0-1"``, on a pod created already bound). Pods requesting ``nvidia.com/gpu`` keep the plain
count model; do not mix both conventions on one node.

State lives in the snapshot as synthetic extended resources the nodes do not list (allocatable
0): a bound share pod requests ``alibabacloud.com/gpu-milli-<i>`` on each device it holds and one
``podledger.io/gpu-affinity-<tag>`` (GpuClustering's per-node tag counts), so assume/forget,
journals and rebuilds need no new code: device ``i`` of node ``n`` has ``1000 + free[row_i, n]``
milli free.

Placement: when a policy of ``POLICIES`` has a plugin weight > 0 (one at a time, like the
paper), every pod is placed by it among the nodes passing the profile's filters and
NodeResourcesFit; without a policy a share pod takes the NodeResourcesFit best node among the
nodes its devices fit. Equal scores go to the lowest node index, as everywhere in the core
(kube-scheduler draws among them); Random draws its node and device from a hash of the pod key.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from scheduler.framework import FilterResult
from scheduler.model import GpuShare, Pod, copy_pod
from scheduler.snapshot import R_CPU, Demand, Snapshot, make_demand

GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_INDEX = "alibabacloud.com/gpu-index"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
NVIDIA_GPU = "nvidia.com/gpu"
DEVICE_PREFIX = GPU_MILLI + "-"
AFFINITY_PREFIX = "podledger.io/gpu-affinity-"
MILLI = 1000
MAX_SPEC_CPU = 128000  # the simulator's normalisers (MaxSpecCpu, MaxSpecGpu)
MAX_SPEC_GPU = 8000
MAX_NODE_SCORE = 100
TYPICAL_THRESHOLD = 95  # % of pods the typical pods cover (podPopularityThreshold)
NO_GPU = GpuShare(0, 0)
NAME = "GpuShare"  # the device filter's name in diagnoses
INSUFFICIENT_DEVICES = f"Insufficient {GPU_MILLI}"

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]
IDX = npt.NDArray[np.intp]


def device_resource(i: int) -> str:
    return f"{DEVICE_PREFIX}{i}"


def request_of(pod: Pod) -> GpuShare:
    return pod.gpu if pod.gpu is not None else NO_GPU


def affinity_tag(g: GpuShare) -> str | None:
    """GpuClustering's tag: ``share-gpu``, ``<k>-gpu`` or None (no GPU)."""
    if g.count <= 0 or g.milli <= 0:
        return None
    return "share-gpu" if g.count == 1 and g.milli < MILLI else f"{g.count}-gpu"


def parse_index(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("-") if x.strip() != "")


def format_index(index: Iterable[int]) -> str:
    return "-".join(str(i) for i in index)


def device_requests(g: GpuShare, index: Iterable[int]) -> dict[str, int]:
    out = {device_resource(i): g.milli for i in index}
    tag = affinity_tag(g)
    if out and tag is not None:
        out[AFFINITY_PREFIX + tag] = 1
    return out


def demand_with(pod: Pod, index: Iterable[int]) -> Demand:
    """The snapshot demand of ``pod`` holding the devices ``index``."""
    g = pod.gpu
    if g is None:
        return make_demand(pod.requests)
    return make_demand({**pod.requests, **device_requests(g, index)})


def bound_demand(pod: Pod) -> Demand:
    """The snapshot demand of a bound pod (its devices included when it holds any)."""
    if pod.gpu is None or not pod.gpu.index:
        return make_demand(pod.requests)
    return demand_with(pod, pod.gpu.index)


def stable_hash(*parts: object) -> int:
    h = hashlib.blake2b(":".join(str(p) for p in parts).encode(), digest_size=8)
    return int.from_bytes(h.digest(), "big")


# ----------------------------------------------------------------------------- node view
@dataclass(slots=True)
class GpuView:
    """Per-node GPU state of the nodes ``idx`` (rows in ``idx`` order)."""

    idx: IDX
    free: I64  # (m, G) free milli per device; -1 where the node has no such device
    cpu: I64  # (m,) free milli-CPU
    mid: IDX  # (m,) node GPU model as an id of ``model_id`` (0: unlabelled)
    tags: dict[str, I64] = field(default_factory=dict)  # affinity tag -> pods per node
    # ``total`` and ``fully_free`` when the view was cut from the device table, which keeps them
    # per node (None: computed from ``free``)
    free_sum: I64 | None = None
    whole: I64 | None = None
    # per node a version of its state (``free``, ``cpu``, ``mid``) when cut from the device table
    # (``DeviceTable.ver``): equal versions, equal states (None: no versions)
    ver: I64 | None = None

    @property
    def models(self) -> list[str]:
        return [_MODEL_NAMES[int(i)] for i in self.mid]

    @property
    def total(self) -> I64:
        """(m,) free milli of the node's devices."""
        if self.free_sum is not None:
            return self.free_sum
        out: I64 = np.maximum(self.free, 0).sum(axis=1)
        return out

    @property
    def fully_free(self) -> I64:
        """(m,) the node's fully free devices."""
        if self.whole is not None:
            return self.whole
        out: I64 = (self.free == MILLI).sum(axis=1)
        return out


def view_of(snap: Snapshot, idx: IDX, with_tags: bool = False) -> GpuView:
    """The GPU view of the nodes ``idx``: rows of the snapshot's device table (``device_table``),
    as wide as the most devices one of them has."""
    t = device_table(snap)
    sub = t.cnt[idx]
    return _view(snap, t, idx, max(int(sub.max()) if len(sub) else 0, 1), with_tags)


def fitting_view(snap: Snapshot, ok: BOOL, g: GpuShare, with_tags: bool = False) -> tuple[BOOL, GpuView]:
    """``ok`` narrowed to the nodes whose devices and GPU model hold the request ``g``
    (``device_fit``), and the view of those nodes, as wide as ``view_of`` all the nodes of ``ok``."""
    t = device_table(snap)
    # the most devices of a node of ``ok``: the table's width when one has that many (one cheap
    # count instead of a masked maximum)
    if np.count_nonzero(ok & t.widest):
        w = t.free.shape[1]
    else:
        w = max(int(t.cnt.max(initial=0, where=ok)), 1)
    if g.count > 0 and g.milli > 0:
        ok = ok & device_fit(snap, t, g)
    return ok, _view(snap, t, ok.nonzero()[0], w, with_tags)


def _view(snap: Snapshot, t: DeviceTable, idx: IDX, w: int, with_tags: bool) -> GpuView:
    # ``take``: a copy the caller may change (cheaper than fancy indexing of the rows)
    free = t.free.take(idx, axis=0)
    if w < free.shape[1]:
        free = free[:, :w]
    tags: dict[str, I64] = {}
    if with_tags:
        for tag, row in t.tags:
            tags[tag] = -snap.free[row].take(idx)
    # the table's per-node rows (kept current with ``free``: ``cpu`` is the snapshot's free
    # milli-CPU, ``mid`` its ``model_id_column``), one ``take`` for the five
    c = t.per_node.take(idx, axis=1)
    d = DeviceTable
    return GpuView(idx, free, c[d.CPU], c[d.MID], tags, c[d.TOTAL], c[d.WHOLE], c[d.VER])


def model_id_column(snap: Snapshot) -> IDX:
    """Per node, the id of its GPU model (``model_id``; 0: unlabelled)."""
    mids = snap.caches.gpu_model_ids
    if mids is None:
        mids = snap.caches.gpu_model_ids = model_ids(nd.labels.get(GPU_MODEL, "") for nd in snap.nodes)
    return mids


def device_fit(snap: Snapshot, t: DeviceTable, g: GpuShare) -> BOOL:
    """Per node of the snapshot: do its devices (``count`` of them, each with ``milli`` free) and
    its GPU model hold the share request ``g`` (count and milli > 0)? One device: its most free
    one holds the milli; whole devices: enough fully free ones (no device has more than 1000)."""
    if g.count == 1:
        f: BOOL = t.top >= g.milli
    elif g.milli >= MILLI:
        f = t.whole >= g.count
    else:
        f = (t.free >= g.milli).sum(axis=1) >= g.count
    if g.models:
        mids = model_id_column(snap)  # first: it may name new models, which the table then knows
        f &= model_table(g.models)[mids]
    return f


@dataclass(slots=True)
class DeviceTable:
    """Free milli per device of every node (``-1`` where a node has no such device) and each
    node's device count, exact as of ``pos`` in the snapshot's change log of ``epoch``; with the
    rows of the device resources and of the affinity tags (both only change with the epoch)."""

    epoch: int
    pos: int
    free: I64  # (n, max devices or 1)
    cnt: I64  # (n,)
    cols: IDX  # devices that have a synthetic resource ...
    rows: IDX  # ... and its row in the snapshot
    tags: tuple[tuple[str, int], ...]  # (affinity tag, row)
    top: I64  # (n,) the most free milli of one device of the node (-1: no device)
    held: tuple[tuple[int, int], ...]  # (device, row) of ``cols`` and ``rows`` as Python ints
    counts: list[int]  # ``cnt`` as Python ints
    widest: BOOL  # (n,) the nodes with the most devices (``cnt`` = the width of ``free``)
    # (5, n): per node its free milli-CPU, GPU model id, free milli of its devices, fully free
    # devices and the version of its state (rows ``CPU`` .. ``VER``; the properties below), one
    # array so that a view takes its nodes' columns of all five at once. A version
    # (process-wide, ``_VERSIONS``) stands for one state of ``free``, CPU and model: a node logged
    # since gets a new one, a rebuilt table keeps the old one where the state is equal
    per_node: I64

    CPU, MID, TOTAL, WHOLE, VER = range(5)

    @property
    def cpu(self) -> I64:
        out: I64 = self.per_node[self.CPU]
        return out

    @property
    def mid(self) -> I64:
        out: I64 = self.per_node[self.MID]
        return out

    @property
    def total(self) -> I64:
        out: I64 = self.per_node[self.TOTAL]
        return out

    @property
    def whole(self) -> I64:
        out: I64 = self.per_node[self.WHOLE]
        return out

    @property
    def ver(self) -> I64:
        out: I64 = self.per_node[self.VER]
        return out


_VERSIONS = itertools.count()  # node state versions (process-wide; never part of a decision)


def device_table(snap: Snapshot) -> DeviceTable:
    """Every node's free milli per device, kept in the snapshot's caches and brought up to date
    from its change log (the nodes whose pods changed since the last use are read again; all of
    them after a new epoch or when many changed). Device i's free milli is 1000 plus its
    (negative) synthetic resource's free."""
    log = snap.log
    n = snap.n
    t = snap.caches.gpu_devices
    if t is None or t.epoch != snap.epoch or len(log) - t.pos > max(64, n // 8):
        ri = snap.res_index
        r = ri.get(NVIDIA_GPU)
        cnt = snap.alloc[r].copy() if r is not None else np.zeros(n, dtype=np.int64)
        w = max(int(cnt.max()) if n else 0, 1)
        held = [(i, row) for i in range(w) if (row := ri.get(device_resource(i))) is not None]
        tags = tuple(
            (nm[len(AFFINITY_PREFIX) :], row) for nm, row in ri.items() if nm.startswith(AFFINITY_PREFIX)
        )
        cols = np.array([i for i, _ in held], dtype=np.intp)
        rows = np.array([row for _, row in held], dtype=np.intp)
        free = np.full((n, w), MILLI, dtype=np.int64)
        if len(rows):
            free[:, cols] += snap.free[rows].T
        free[np.arange(w)[None, :] >= cnt[:, None]] = -1
        per_node = np.stack(
            [
                snap.free[R_CPU],
                model_id_column(snap),
                np.maximum(free, 0).sum(axis=1),
                (free == MILLI).sum(axis=1),
                np.fromiter(itertools.islice(_VERSIONS, n), dtype=np.int64, count=n),
            ]
        ).astype(np.int64, copy=False)
        if t is not None and t.free.shape == free.shape:
            cpu, mid = per_node[DeviceTable.CPU], per_node[DeviceTable.MID]
            same = (t.free == free).all(axis=1) & (t.cpu == cpu) & (t.mid == mid)
            per_node[DeviceTable.VER, same] = t.ver[same]
        t = DeviceTable(
            snap.epoch,
            len(log),
            free,
            cnt,
            cols,
            rows,
            tags,
            free.max(axis=1),
            tuple(held),
            cnt.tolist(),
            cnt == w,
            per_node,
        )
        snap.caches.gpu_devices = t
    elif t.pos < len(log):
        # the few values of a node as Python ints: cheaper than NumPy calls on so short a row
        w = t.free.shape[1]
        pairs, counts = t.held, t.counts
        pn = t.per_node
        cpu_r, total_r, whole_r, ver_r = (
            DeviceTable.CPU,
            DeviceTable.TOTAL,
            DeviceTable.WHOLE,
            DeviceTable.VER,
        )
        for i in {i if i >= 0 else ~i for i in log[t.pos :]}:
            col = snap.free[:, i].tolist()
            vals = [MILLI] * w  # a device without a synthetic resource: nothing held on it
            for j, r in pairs:
                vals[j] = MILLI + col[r]
            c = counts[i]
            if c < w:
                vals[c:] = [-1] * (w - c)
            t.free[i] = vals
            t.top[i] = max(vals)
            pn[cpu_r, i] = col[R_CPU]
            pn[total_r, i] = sum([v for v in vals if v > 0])
            pn[whole_r, i] = vals.count(MILLI)
            pn[ver_r, i] = next(_VERSIONS)
        t.pos = len(log)
    return t


# GPU models as small integer ids (process-wide, grows only; ids are never part of a decision)
_MODEL_IDS: dict[str, int] = {"": 0}
_MODEL_NAMES: list[str] = [""]
_OK_TABLES: dict[tuple[tuple[str, ...], int], BOOL] = {}


def model_id(name: str) -> int:
    i = _MODEL_IDS.get(name)
    if i is None:
        i = _MODEL_IDS[name] = len(_MODEL_NAMES)
        _MODEL_NAMES.append(name)
    return i


def model_ids(names: Iterable[str]) -> IDX:
    return np.array([model_id(n) for n in names], dtype=np.intp)


def model_table(models: tuple[str, ...]) -> BOOL:
    """Per model id: may a pod allowing ``models`` (empty: any) run on a node of that model?"""
    key = (models, len(_MODEL_NAMES))
    t = _OK_TABLES.get(key)
    if t is None:
        allowed = set(models)
        t = np.array([not models or (n != "" and n in allowed) for n in _MODEL_NAMES], dtype=np.bool_)
        _OK_TABLES[key] = t
    return t


def with_devices(pod: Pod, devices: tuple[int, ...] | None) -> tuple[Pod, tuple[int, ...] | None]:
    """``pod`` with the devices chosen for it recorded in its share (the pod as it is bound), and
    the devices for ``PodBound.gpus`` (None when no device was chosen)."""
    if not devices:
        return pod, None
    if pod.gpu is not None:
        g = pod.gpu  # GpuShare built directly: cheaper than dataclasses.replace, the same value
        pod = copy_pod(pod, gpu=GpuShare(g.milli, g.count, g.models, devices))
    return pod, devices


def shares(g: GpuShare | None) -> bool:
    """True if ``g`` asks for a share of a device (not for whole GPUs only, not for none)."""
    return g is not None and g.count > 0 and g.milli > 0


def device_filter(snap: Snapshot, g: GpuShare | None) -> FilterResult | None:
    """The device-level filter over every node for a share request (None for other pods):
    a node passes if its devices hold the request and its GPU model is allowed."""
    if g is None or not shares(g):
        return None
    ok = device_fit(snap, device_table(snap), g)
    return FilterResult(NAME, ok, [] if ok.all() else [(INSUFFICIENT_DEVICES, ~ok)])


# ----------------------------------------------------------------------------- device choice
def exclusive_devices(free_row: I64, count: int) -> tuple[int, ...]:
    """The first ``count`` fully free devices by index (the simulator's AllocateExclusiveGpuId)."""
    # a node's few devices as Python ints: cheaper than NumPy calls on so short a row
    return tuple([i for i, f in enumerate(free_row.tolist()) if f == MILLI][:count])


def best_fit_device(free_row: I64, milli: int) -> int:
    """The device with the least free milli that still holds ``milli`` (lowest index on ties)."""
    best, least = -1, 0
    for i, f in enumerate(free_row.tolist()):
        if f >= milli and (best < 0 or f < least):
            best, least = i, f
    return best


def random_device(free_row: I64, milli: int, key: str) -> int:
    cand = [i for i, f in enumerate(free_row.tolist()) if f >= milli]
    if not cand:
        return -1
    return cand[stable_hash("gpu-device", key) % len(cand)]


def devices_for(free_row: I64, g: GpuShare, share_device: int) -> tuple[int, ...]:
    if g.count <= 0 or g.milli <= 0:
        return ()
    if g.count == 1 and g.milli < MILLI:
        return (share_device if share_device >= 0 else best_fit_device(free_row, g.milli),)
    return exclusive_devices(free_row, g.count)


# ----------------------------------------------------------------------------- target workload
@dataclass(frozen=True, slots=True)
class PodType:
    """The simulator's PodResource: the key typical pods are counted by."""

    cpu: int
    milli: int
    count: int
    models: tuple[str, ...]


def pod_type(pod: Pod) -> PodType:
    return PodType(*_type_fields(pod))


def _type_fields(pod: Pod) -> tuple[int, int, int, tuple[str, ...]]:
    """``pod_type``'s fields as a plain tuple (what ``Workload`` counts by)."""
    cpu = int(pod.requests.get("cpu", 0)) or 100  # non-zero request, as upstream
    g = pod.gpu
    if g is None:
        return cpu, NO_GPU.milli, NO_GPU.count, NO_GPU.models
    return cpu, g.milli, g.count, g.models


class Workload:
    """Counts of pod types over every known pod (pending and bound): FGD's target workload.

    Every pod added or removed is counted, GPU sharing in use or not, but by its type's fields
    as a plain tuple (hashed by the interpreter, no PodType built): the fold adds and removes
    every pod of the log, while ``typical`` (FGD only) is rarely called."""

    def __init__(self) -> None:
        self._counts: dict[tuple[int, int, int, tuple[str, ...]], int] = {}  # type fields -> pods
        self.version = 0
        self._typical: tuple[int, tuple[tuple[PodType, float], ...]] | None = None
        self._counted: dict[tuple[int, int, int, tuple[str, ...]], int] = {}  # what ``_typical`` counted
        self.memo: object = None  # FGD's fragmentation memo (scheduler.gpufrag.Memo)

    def add(self, pod: Pod) -> None:
        t = _type_fields(pod)
        counts = self._counts
        counts[t] = counts.get(t, 0) + 1
        self.version += 1

    def remove(self, pod: Pod) -> None:
        t = _type_fields(pod)
        counts = self._counts
        c = counts.get(t, 0)
        if c <= 1:
            counts.pop(t, None)
        else:
            counts[t] = c - 1
        self.version += 1

    def typical(self) -> tuple[tuple[PodType, float], ...]:
        """Most frequent types covering ``TYPICAL_THRESHOLD`` % of the pods, renormalised."""
        if self._typical is not None and self._typical[0] == self.version:
            return self._typical[1]
        if self._typical is not None and self._counts == self._counted:  # e.g. a pod was bound
            self._typical = (self.version, self._typical[1])
            return self._typical[1]
        self._counted = dict(self._counts)
        total = sum(self._counts.values())
        # by count, then by (cpu, milli, count) descending and models ascending
        ranked = sorted(
            self._counts.items(), key=lambda kv: (-kv[1], -kv[0][0], -kv[0][1], -kv[0][2], kv[0][3])
        )
        chosen: list[tuple[PodType, int]] = []
        cum = 0
        for t, c in ranked:
            if cum * 100 >= TYPICAL_THRESHOLD * total:
                break
            chosen.append((PodType(*t), c))
            cum += c
        out = tuple((t, c / cum) for t, c in chosen) if cum else ()
        if self._typical is not None and self._typical[1] == out:
            out = self._typical[1]  # the same object while unchanged: FGD's memo keys on it
        self._typical = (self.version, out)
        return out
