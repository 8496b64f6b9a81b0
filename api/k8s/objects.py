"""Projection rows as Kubernetes objects, and label/field selectors over them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from api.k8s import backend
from api.k8s.resources import Resource
from api.k8s.status import K8sError

SERVER_FIELDS = ("resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink", "uid")


def timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def view(res: Resource, row: dict[str, Any], rv: int | None = None) -> dict[str, Any]:
    """The object as the Kubernetes API shows it: manifest + projected status, with
    ``resourceVersion`` = the log position of its last change."""
    obj = dict(row["object"])
    obj["apiVersion"] = res.api_version
    obj["kind"] = res.kind
    meta = dict(obj.get("metadata") or {})
    meta["name"] = row["name"]
    if res.namespaced:
        meta["namespace"] = row["namespace"]
    else:
        meta.pop("namespace", None)
    if row.get("uid"):
        meta["uid"] = row["uid"]
    meta["resourceVersion"] = str(rv if rv is not None else row["updated_position"])
    meta["creationTimestamp"] = timestamp(row.get("created_at"))
    obj["metadata"] = meta
    status = dict(obj.get("status") or {})
    status.update({k: v for k, v in (row.get("status") or {}).items() if v is not None})
    if res.kind == "Pod":
        node = status.get("nodeName")
        spec = dict(obj.get("spec") or {})
        if node and not spec.get("nodeName"):
            spec["nodeName"] = node
        elif not node and status.get("phase") == "Preempted":
            spec.pop("nodeName", None)
        obj["spec"] = spec
        status = _upstream_pod_status(obj, meta, status)
    if isinstance(status.get("conditions"), list):
        status["conditions"] = [_rfc3339_condition(c) for c in status["conditions"]]
    if status:
        obj["status"] = status
    return as_quantities(obj)  # type: ignore[no-any-return]


# podledger's own facts about a pod, shown as annotations (never as upstream status fields)
PHASE, BOUND_AT, PREEMPTED_BY, PREEMPTED_AT, GATED_BY = (
    "podledger.io/phase",
    "podledger.io/bound-at",
    "podledger.io/preempted-by",
    "podledger.io/preempted-at",
    "podledger.io/gated-by",
)
PROJECTED_ANNOTATIONS = (PHASE, BOUND_AT, PREEMPTED_BY, PREEMPTED_AT, GATED_BY)
_UPSTREAM_POD_STATUS = frozenset(
    {
        "phase",
        "conditions",
        "message",
        "reason",
        "nominatedNodeName",
        "hostIP",
        "hostIPs",
        "podIP",
        "podIPs",
        "startTime",
        "initContainerStatuses",
        "containerStatuses",
        "ephemeralContainerStatuses",
        "qosClass",
        "resize",
        "resourceClaimStatuses",
        "observedGeneration",
    }
)


def _upstream_pod_status(obj: dict[str, Any], meta: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """A pod's status as kube-apiserver shows it with no kubelet: a bound pod stays ``Pending``
    with ``PodScheduled=True``; a preempted one is ``Failed`` (reason ``Preempted``) with its
    ``DisruptionTarget`` condition. podledger's own facts (its phase, when it was bound, who
    preempted it, which plugin gates it) go to ``podledger.io/`` annotations."""
    facts = {
        PHASE: status.get("phase"),
        BOUND_AT: status.get("boundAt"),
        PREEMPTED_BY: status.get("preemptedBy"),
        PREEMPTED_AT: status.get("preemptedAt"),
        GATED_BY: (status.get("gated") or {}).get("plugin")
        if isinstance(status.get("gated"), dict)
        else None,
    }
    facts = {k: str(v) for k, v in facts.items() if v}
    if facts:
        meta["annotations"] = {**(meta.get("annotations") or {}), **facts}
    out = {k: v for k, v in status.items() if k in _UPSTREAM_POD_STATUS}
    phase = status.get("phase")
    if phase in (None, "Bound"):
        out["phase"] = "Pending"
    elif phase == "Preempted":
        out["phase"] = "Failed"
        out["reason"] = "Preempted"
    return out


RESOURCE_MAPS = frozenset({"requests", "limits", "allocatable", "capacity", "min", "max", "overhead"})


def as_quantities(value: Any) -> Any:
    """Resource maps of a normalized manifest (exact integers) as Kubernetes quantity strings."""
    if isinstance(value, list):
        return [as_quantities(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if v is None:
            continue  # null means absent in Kubernetes objects
        if k == "ownerReferences" and isinstance(v, list):
            # uid is required upstream; podledger accepts references without one
            v = [{**r, "uid": r.get("uid") or ""} if isinstance(r, dict) else r for r in v]
        if (
            k in RESOURCE_MAPS
            and isinstance(v, dict)
            and v
            and all(isinstance(x, int) and not isinstance(x, bool) for x in v.values())
        ):
            out[k] = backend.format_resources(v)
        else:
            out[k] = as_quantities(v)
    return out


def _rfc3339_condition(cond: Any) -> Any:
    """``lastTransitionTime`` as Kubernetes writes it (RFC 3339, seconds, Z)."""
    if not isinstance(cond, dict) or not isinstance(cond.get("lastTransitionTime"), str):
        return cond
    try:
        t = datetime.fromisoformat(cond["lastTransitionTime"].replace("Z", "+00:00"))
    except ValueError:
        return cond
    return {**cond, "lastTransitionTime": timestamp(t)}


def manifest_from(obj: dict[str, Any]) -> dict[str, Any]:
    """A client's object back to a podledger manifest: server-populated metadata dropped."""
    out = {k: v for k, v in obj.items()}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS and v is not None}
    if isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k not in PROJECTED_ANNOTATIONS}
    for key in ("labels", "annotations"):
        if key in meta and not meta[key]:
            del meta[key]
    refs = meta.get("ownerReferences")
    if isinstance(refs, list):
        meta["ownerReferences"] = [
            {k: v for k, v in r.items() if not (k == "uid" and v == "")} if isinstance(r, dict) else r
            for r in refs
        ]
    out["metadata"] = meta
    return out


# ----------------------------------------------------------------------------------- selectors

_LABEL_SET = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_LABEL_OP = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s*(?:(==|=|!=)\s*([A-Za-z0-9._-]*))?\s*$")


def _split(selector: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    if selector.strip() and any(not p.strip() for p in parts):
        raise K8sError(400, f"unable to parse requirement: found ',', expected: identifier in {selector!r}")
    return [p for p in parts if p.strip()]


def parse_label_selector(selector: str | None) -> list[tuple[str, str, tuple[str, ...]]]:
    """``app=x,tier!=db,gpu,!spot,env in (a,b)`` → [(key, op, values)]."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for part in _split(selector or ""):
        m = _LABEL_SET.match(part)
        if m:
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            out.append((m.group(1), m.group(2), values))
            continue
        m = _LABEL_OP.match(part)
        if not m or (m.group(1) and m.group(3)):
            raise K8sError(400, f"unable to parse requirement: {part.strip()!r} in labelSelector")
        neg, key, op, value = m.groups()
        if op is None:
            out.append((key, "!exists" if neg else "exists", ()))
        else:
            out.append((key, "!=" if op == "!=" else "=", (value or "",)))
    return out


def labels_match(labels: dict[str, Any], reqs: list[tuple[str, str, tuple[str, ...]]]) -> bool:
    for key, op, values in reqs:
        have = key in labels
        val = labels.get(key)
        if op == "=" and not (have and val == values[0]):
            return False
        if op == "!=" and have and val == values[0]:
            return False
        if op == "exists" and not have:
            return False
        if op == "!exists" and have:
            return False
        if op == "in" and not (have and val in values):
            return False
        if op == "notin" and have and val in values:
            return False
    return True


def parse_field_selector(selector: str | None) -> list[tuple[str, str, str]]:
    out = []
    for part in _split(selector or ""):
        m = re.match(r"^\s*([A-Za-z0-9._-]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise K8sError(400, f"invalid field selector: {part.strip()!r}")
        out.append((m.group(1), "!=" if m.group(2) == "!=" else "=", m.group(3)))
    return out


def field_value(obj: dict[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    return str(cur)


def fields_match(obj: dict[str, Any], reqs: list[tuple[str, str, str]]) -> bool:
    for path, op, value in reqs:
        have = field_value(obj, path)
        if (op == "=") != (have == value):
            return False
    return True


class Selector:
    def __init__(self, label_selector: str | None, field_selector: str | None) -> None:
        self.labels = parse_label_selector(label_selector)
        self.fields = parse_field_selector(field_selector)

    def __bool__(self) -> bool:
        return bool(self.labels or self.fields)

    def matches(self, obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return labels_match(labels, self.labels) and fields_match(obj, self.fields)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out
