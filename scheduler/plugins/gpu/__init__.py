"""GPU placement policies of the FGD paper as score plugins (``docs/paper.md`` has the sources).

A policy is enabled by a plugin weight > 0 in SchedulerConfig (``pluginWeights: {FGD: 1}``); at
most one is meant to be on (the first enabled in ``POLICIES`` order wins). While one is on, it
alone ranks the nodes every pod passes (profile filters, NodeResourcesFit, GPU devices), as in
the paper's runs where every other score plugin is disabled. Each module has ``NAME``,
``DEVICE`` (how a share pod's device is chosen on the winning node: ``best``, ``random`` or
``own`` = the policy's per-node choice) and ``score(ctx) -> (scores, devices | None)``; one that
reads the view's affinity tag counts says so with ``TAGS = True`` (the others get a view
without them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import numpy.typing as npt

from scheduler import gpushare as gs
from scheduler.model import GpuShare, Pod
from scheduler.snapshot import Snapshot

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]


@dataclass(slots=True)
class Ctx:
    """What a policy scores: the candidate nodes' GPU view and the pod."""

    view: gs.GpuView
    pod: Pod
    g: GpuShare
    cpu: int  # the pod's milli-CPU request
    key: str
    workload: gs.Workload


def policies() -> dict[str, ModuleType]:
    from scheduler.plugins.gpu import best_fit, dot_product, fgd, gpu_clustering, gpu_packing, random_fit

    mods = (random_fit, dot_product, gpu_clustering, gpu_packing, best_fit, fgd)
    return {m.NAME: m for m in mods}


POLICY_NAMES = ("Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD")


def wants_tags(policy: object) -> bool:
    """Does ``policy`` (a module of ``policies()``, or None) read ``GpuView.tags``?"""
    return bool(getattr(policy, "TAGS", False))


def active(weights: Mapping[str, int]) -> ModuleType | None:
    for name in POLICY_NAMES:
        if int(weights.get(name, 0)) > 0:
            return policies()[name]
    return None


def gpu_fit(snap: Snapshot, pod: Pod, ok: BOOL, with_tags: bool = True) -> tuple[BOOL, gs.GpuView]:
    """``ok`` narrowed to the nodes whose devices (and GPU model) hold the pod's request, and the
    GPU view of those nodes (``with_tags``: GpuClustering's tag counts too)."""
    return gs.fitting_view(snap, ok, gs.request_of(pod), with_tags)


def place(policy: ModuleType, v: gs.GpuView, pod: Pod, workload: gs.Workload) -> tuple[int, tuple[int, ...]]:
    """(node index, devices) chosen by ``policy`` among the nodes of ``v`` (-1 when empty)."""
    if len(v.idx) == 0:
        return -1, ()
    g = gs.request_of(pod)
    ctx = Ctx(v, pod, g, int(pod.requests.get("cpu", 0)), pod.key, workload)
    scores, devs = policy.score(ctx)
    r = int(scores.argmax())  # equal scores: the lowest node index, as everywhere in the core
    return int(v.idx[r]), choose_devices(policy.DEVICE, v.free[r], g, pod.key, devs, r)


def choose_devices(
    rule: str, free_row: I64, g: GpuShare, key: str, devs: I64 | None, r: int
) -> tuple[int, ...]:
    share = -1
    if g.count == 1 and 0 < g.milli < gs.MILLI:
        if rule == "own" and devs is not None:
            share = int(devs[r])
        elif rule == "random":
            share = gs.random_device(free_row, g.milli, key)
    return gs.devices_for(free_row, g, share)
