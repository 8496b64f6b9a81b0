"""Printer columns of the kinds beyond pods, nodes and groups, as upstream's printers
(``pkg/printers/internalversion``) define them: namespaces, priority classes,
PodDisruptionBudgets and Jobs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from api.k8s.columns import AGE, NAME, _col, _meta, human_age

Cells = Callable[[dict[str, Any], dict[str, Any]], list[Any]]


def _age(o: dict[str, Any]) -> str:
    return human_age(_meta(o).get("creationTimestamp"))


def _namespace(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    return [_meta(o).get("name"), (o.get("status") or {}).get("phase") or "Active", _age(o)]


def _priority_class(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    return [
        _meta(o).get("name"),
        o.get("value", 0),
        bool(o.get("globalDefault", False)),
        _age(o),
        o.get("preemptionPolicy") or "PreemptLowerPriority",
    ]


def _pdb(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    return [
        _meta(o).get("name"),
        str(spec["minAvailable"]) if spec.get("minAvailable") is not None else "N/A",
        str(spec["maxUnavailable"]) if spec.get("maxUnavailable") is not None else "N/A",
        int(status.get("disruptionsAllowed") or 0),
        _age(o),
    ]


def _job_status(status: dict[str, Any], spec: dict[str, Any]) -> str:
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("status") == "True":
            if cond.get("type") in ("Complete", "Failed", "Suspended", "FailureTarget", "SuccessCriteriaMet"):
                return "Suspended" if cond["type"] == "Suspended" else str(cond["type"])
    return "Suspended" if spec.get("suspend") else "Running"


def _duration(status: dict[str, Any]) -> str:
    start = status.get("startTime")
    if not isinstance(start, str):
        return ""
    t0 = datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    end = status.get("completionTime")
    t1 = datetime.strptime(end, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) if isinstance(end, str) else None
    secs = int(((t1 or datetime.now(UTC)) - t0).total_seconds())
    return f"{secs}s" if secs < 120 else f"{secs // 60}m"


def _job(o: dict[str, Any], _ctx: dict[str, Any]) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    completions = spec.get("completions")
    succeeded = int(status.get("succeeded") or 0)
    shown = (
        f"{succeeded}/{completions}"
        if completions is not None
        else f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    )
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    return [
        _meta(o).get("name"),
        _job_status(status, spec),
        shown,
        _duration(status),
        _age(o),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


PRINTERS: dict[str, tuple[list[dict[str, Any]], Cells]] = {
    "Namespace": ([NAME, _col("Status"), AGE], _namespace),
    "PriorityClass": (
        [NAME, _col("Value", "integer"), _col("Global-Default", "boolean"), AGE, _col("PreemptionPolicy")],
        _priority_class,
    ),
    "PodDisruptionBudget": (
        [NAME, _col("Min Available"), _col("Max Unavailable"), _col("Allowed Disruptions", "integer"), AGE],
        _pdb,
    ),
    "Job": (
        [
            NAME,
            _col("Status"),
            _col("Completions"),
            _col("Duration"),
            AGE,
            _col("Containers", priority=1),
            _col("Images", priority=1),
            _col("Selector", priority=1),
        ],
        _job,
    ),
}
