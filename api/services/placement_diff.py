"""What-if, per pod and per node: where the recorded run and the re-run under another
configuration placed each pod, and the GPUs each allocates (``replay --config X --diff``).

A pod's placement is its last PodBound (node, devices) in the decisions, None when it never
bound (unschedulable, still pending). GPU milli of a pod: ``gpu-milli x gpu-count`` of the
GPU-share convention (``scheduler.gpushare``), else 1000 x its ``nvidia.com/gpu`` request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler import gpushare as gs
from scheduler.model import Pod

Placement = tuple[str, tuple[int, ...]] | None


def placements(decisions: Iterable[tuple[float, str, dict[str, Any]]]) -> dict[str, Placement]:
    out: dict[str, Placement] = {}
    for _when, typ, data in decisions:
        if typ == "PodBound":
            out[data["pod"]] = (data["node"], tuple(data.get("gpus") or ()))
        elif typ == "PodUnschedulable":
            out.setdefault(data["pod"], None)
    return out


def gpu_milli(pod: Pod | None) -> int:
    if pod is None:
        return 0
    if pod.gpu is not None:
        return pod.gpu.milli * pod.gpu.count if pod.gpu.count > 0 else 0
    return int(pod.requests.get(gs.NVIDIA_GPU, 0)) * gs.MILLI


def _where(p: Placement) -> dict[str, Any] | None:
    return None if p is None else {"node": p[0], "gpus": list(p[1])}


def diff(
    before: Mapping[str, Placement], after: Mapping[str, Placement], pods: Mapping[str, Pod]
) -> dict[str, Any]:
    """{pods: [each pod placed differently: pod, gpuMilli, before, after], nodes: [each node
    whose pods differ: node, before/after {pods, gpuMilli}, gpuMilliDelta, podsIn, podsOut],
    bound: {before, after}, gpuMilli: {before, after, extra}} (extra = after - before)."""
    rows: list[dict[str, Any]] = []
    per_node: dict[str, dict[str, Any]] = {}

    def node(name: str) -> dict[str, Any]:
        return per_node.setdefault(
            name,
            {
                "node": name,
                "before": {"pods": 0, "gpuMilli": 0},
                "after": {"pods": 0, "gpuMilli": 0},
                "podsIn": [],
                "podsOut": [],
            },
        )

    totals = {"before": 0, "after": 0}
    bound = {"before": 0, "after": 0}
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        milli = gpu_milli(pods.get(key))
        for side, p in (("before", b), ("after", a)):
            if p is not None:
                totals[side] += milli
                bound[side] += 1
                n = node(p[0])[side]
                n["pods"] += 1
                n["gpuMilli"] += milli
        if b == a:
            continue
        rows.append({"pod": key, "gpuMilli": milli, "before": _where(b), "after": _where(a)})
        if b is not None and (a is None or a[0] != b[0]):
            node(b[0])["podsOut"].append(key)
        if a is not None and (b is None or a[0] != b[0]):
            node(a[0])["podsIn"].append(key)
    nodes = []
    for name in sorted(per_node):
        n = per_node[name]
        if n["podsIn"] or n["podsOut"]:
            n["gpuMilliDelta"] = n["after"]["gpuMilli"] - n["before"]["gpuMilli"]
            nodes.append(n)
    return {
        "pods": rows,
        "nodes": nodes,
        "bound": bound,
        "gpuMilli": {**totals, "extra": totals["after"] - totals["before"]},
    }


def render(d: dict[str, Any], limit: int | None = None) -> list[str]:
    """Text lines of ``diff``: the totals, then per node and per pod (``limit`` lines each)."""
    g, b = d["gpuMilli"], d["bound"]
    moved = sum(
        1 for r in d["pods"] if r["before"] and r["after"] and r["before"]["node"] != r["after"]["node"]
    )
    lines = [
        f"placements: {len(d['pods'])} pod(s) placed differently ({moved} on another node); bound "
        f"{b['before']} -> {b['after']}; GPUs allocated {g['before'] / 1000:.2f} -> {g['after'] / 1000:.2f} "
        f"(extra {g['extra'] / 1000:+.2f})",
        f"  nodes whose pods differ: {len(d['nodes'])}",
    ]

    def side(x: dict[str, Any]) -> str:
        return f"{x['pods']} pods/{x['gpuMilli'] / 1000:.2f} GPUs"

    for n in d["nodes"][:limit]:
        lines.append(
            f"    {n['node']}: {side(n['before'])} -> {side(n['after'])} ({n['gpuMilliDelta'] / 1000:+.2f} GPUs; "
            f"+{len(n['podsIn'])} -{len(n['podsOut'])} pods)"
        )

    def at(w: dict[str, Any] | None) -> str:
        if w is None:
            return "unbound"
        return str(w["node"]) + (f"[{'-'.join(str(i) for i in w['gpus'])}]" if w["gpus"] else "")

    lines.append(f"  pods placed differently: {len(d['pods'])}")
    for r in d["pods"][:limit]:
        lines.append(
            f"    {r['pod']} ({r['gpuMilli'] / 1000:.2f} GPUs): {at(r['before'])} -> {at(r['after'])}"
        )
    return lines
