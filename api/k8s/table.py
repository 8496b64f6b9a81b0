"""``Table`` output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``) for ``kubectl get``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api.k8s.columns import AGE, NAME, _col, _meta, human_age
from api.k8s.printers import PRINTERS
from api.k8s.resources import Resource

__all__ = ["AGE", "NAME", "human_age", "table", "wants_table"]


def wants_table(accept: str | None) -> bool:
    return bool(accept) and "as=Table" in (accept or "")


def _pod_cells(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    containers = spec.get("containers") or []
    phase = status.get("reason") or status.get("phase") or "Pending"
    if any(
        c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    ):
        phase = "SchedulingGated"  # as upstream's printer: only the SchedulingGated reason
    return [
        _meta(o).get("name"),
        f"0/{len(containers)}",
        phase,
        0,
        human_age(_meta(o).get("creationTimestamp")),
        "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


POD_COLUMNS = [
    NAME,
    _col("Ready", desc="The number of ready containers"),
    _col("Status", desc="The status of the pod: its reason, SchedulingGated, or its phase"),
    _col("Restarts", "integer"),
    AGE,
    _col("IP", priority=1),
    _col("Node", priority=1, desc="The node the pod is bound to"),
    _col("Nominated Node", priority=1),
    _col("Readiness Gates", priority=1),
]


def _node_cells(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    labels = _meta(o).get("labels") or {}
    roles = sorted(k.rpartition("/")[2] for k in labels if k.startswith("node-role.kubernetes.io/"))
    status = "Ready" + (",SchedulingDisabled" if (o.get("spec") or {}).get("unschedulable") else "")
    info = (o.get("status") or {}).get("nodeInfo") or {}
    return [
        _meta(o).get("name"),
        status,
        ",".join(roles) or "<none>",
        human_age(_meta(o).get("creationTimestamp")),
        info.get("kubeletVersion") or "podledger",
        "<none>",
        "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


NODE_COLUMNS = [
    NAME,
    _col("Status"),
    _col("Roles"),
    AGE,
    _col("Version"),
    _col("Internal-IP", priority=1),
    _col("External-IP", priority=1),
    _col("OS-Image", priority=1),
    _col("Kernel-Version", priority=1),
    _col("Container-Runtime", priority=1),
]


def _group_reason(o: dict[str, Any]) -> str:
    for c in (o.get("status") or {}).get("conditions") or []:
        if str(c.get("type", "")).endswith("InitiallyScheduled"):
            return str(c.get("reason") or c.get("status") or "Pending")
    return "Pending"


def _podgroup_cells(o: dict[str, Any], ctx: dict[str, Any]) -> list[Any]:
    spec = o.get("spec") or {}
    gang = (spec.get("schedulingPolicy") or {}).get("gang") or {}
    counts = ctx.get("group_pods", {}).get((_meta(o).get("namespace"), _meta(o).get("name")), (0, 0))
    return [
        _meta(o).get("name"),
        gang.get("minCount") if gang.get("minCount") is not None else "<none>",
        f"{counts[1]}/{counts[0]}",
        _group_reason(o),
        human_age(_meta(o).get("creationTimestamp")),
    ]


PODGROUP_COLUMNS = [
    NAME,
    _col("MinCount", "integer", desc="spec.schedulingPolicy.gang.minCount"),
    _col("Scheduled", desc="Bound pods of the group / pods of the group"),
    _col("Status", desc="Reason of the PodGroupInitiallyScheduled condition (Pending when none)"),
    AGE,
]


def _generic_cells(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    return [_meta(o).get("name"), human_age(_meta(o).get("creationTimestamp"))]


TABLES: dict[str, tuple[list[dict[str, Any]], Callable[[dict[str, Any], dict[str, Any]], list[Any]]]] = {
    "Pod": (POD_COLUMNS, _pod_cells),
    "Node": (NODE_COLUMNS, _node_cells),
    "PodGroup": (PODGROUP_COLUMNS, _podgroup_cells),
}


def _row_object(o: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return o
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _meta(o)}


def table(
    res: Resource,
    objects: list[dict[str, Any]],
    *,
    resource_version: str,
    cont: str | None = None,
    include: str = "Metadata",
    ctx: dict[str, Any] | None = None,
    columns: bool = True,
) -> dict[str, Any]:
    cols, cells = TABLES.get(res.kind) or PRINTERS.get(res.kind) or ([NAME, AGE], _generic_cells)
    if res.group == "events.k8s.io" or (res.kind == "Event"):
        cols, cells = EVENT_COLUMNS, _event_cells
    meta: dict[str, Any] = {"resourceVersion": resource_version}
    if cont:
        meta["continue"] = cont
    rows = []
    for o in objects:
        r: dict[str, Any] = {"cells": cells(o, ctx or {})}
        obj = _row_object(o, include)
        if obj is not None:
            r["object"] = obj
        rows.append(r)
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "rows": rows}
    out["columnDefinitions"] = cols if columns else []
    return out


def _event_cells(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    involved = o.get("involvedObject") or o.get("regarding") or {}
    last = o.get("lastTimestamp") or o.get("eventTime") or _meta(o).get("creationTimestamp")
    if isinstance(last, str) and "." in last:
        last = last.split(".")[0] + "Z"
    return [
        human_age(last),
        o.get("type"),
        o.get("reason"),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        o.get("message") or o.get("note"),
    ]


EVENT_COLUMNS = [
    _col("Last Seen"),
    _col("Type"),
    _col("Reason"),
    _col("Object"),
    _col("Message"),
]
