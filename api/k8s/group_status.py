"""The ``status`` subresource of PodGroup and CompositePodGroup (scheduling.k8s.io).

Their status is ``conditions`` (metav1.Condition, a list map keyed by ``type``), which podledger
derives from its log: a write of the status subresource (PUT, or PATCH as a merge, strategic
merge or apply patch) is recorded as one ``PodGroupConditionChanged`` /
``CompositePodGroupConditionChanged`` event per condition whose status, reason or message
changes, with ``meta.observed = true`` and the caller as the actor (no ``cycle``: replay folds it
as an input, and podledger's scheduler reads it as the newest condition, as kube-scheduler reads
the object from its cache). The object's spec and metadata are left as they are (upstream
resets them on a status write).

Conditions are validated as the API server validates metav1.Condition (type a qualified name,
status True/False/Unknown, reason required in CamelCase, lastTransitionTime required, message at
most 32 KiB, no duplicate type): a bad body is a 422 naming the field. What podledger does not
record is refused with a 422 too: removing a condition, and ``resourceClaimStatuses``.
A condition's ``lastTransitionTime`` shown back is the time podledger recorded the change of
status (metav1 semantics: it moves only when the status flips); ``observedGeneration`` is not
kept. A write that changes no condition appends nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from api.k8s import backend, jsonpatch
from api.k8s.handlers import (
    Target,
    _check_identity,
    _meta,
    _precondition_rv,
    _read_back,
    _write,
    dry,
)
from api.k8s.objects import merge_patch, view
from api.k8s.patching import read_patch
from api.k8s.status import K8sError, conflict, invalid, not_found
from ledger.database import Database
from ledger.uow import UnitOfWork

KINDS = ("PodGroup", "CompositePodGroup")
STATUSES = ("False", "True", "Unknown")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
MAX_REASON, MAX_MESSAGE = 1024, 32 * 1024


def handles(t: Target) -> bool:
    return t.sub == "status" and t.res.kind in KINDS


# ----------------------------------------------------------------------------------- validation


def condition_problems(conditions: Any, path: str = "status.conditions") -> list[dict[str, str]]:
    """metav1 ValidateConditions, as (field, message) causes."""
    if not isinstance(conditions, list):
        return [{"field": path, "message": "Invalid value: must be a list of conditions"}]
    out: list[dict[str, str]] = []
    seen: set[str] = set()

    def bad(field: str, message: str) -> None:
        out.append({"field": field, "message": message})

    for i, c in enumerate(conditions):
        at = f"{path}[{i}]"
        if not isinstance(c, dict):
            bad(at, "Invalid value: must be an object")
            continue
        ctype = c.get("type")
        if not isinstance(ctype, str) or not ctype:
            bad(f"{at}.type", "Required value: name part must be non-empty")
        else:
            problem = backend.qualified_name_problem(ctype)
            if problem:
                bad(f"{at}.type", f"Invalid value: {ctype!r}: {problem}")
            elif ctype in seen:
                bad(f"{at}.type", f'Duplicate value: "{ctype}"')
            seen.add(ctype)
        if c.get("status") not in STATUSES:
            bad(
                f"{at}.status",
                f'Unsupported value: "{c.get("status")}": supported values: "False", "True", "Unknown"',
            )
        gen = c.get("observedGeneration")
        if gen is not None and (not isinstance(gen, int) or isinstance(gen, bool) or gen < 0):
            bad(f"{at}.observedGeneration", f"Invalid value: {gen!r}: must be greater than or equal to zero")
        ltt = c.get("lastTransitionTime")
        if not ltt:
            bad(f"{at}.lastTransitionTime", "Required value: must be set")
        elif not isinstance(ltt, str) or _time(ltt) is None:
            bad(f"{at}.lastTransitionTime", f"Invalid value: {ltt!r}: must be an RFC 3339 time")
        reason = c.get("reason")
        if not reason:
            bad(f"{at}.reason", "Required value: must be set")
        elif not isinstance(reason, str) or not _REASON.match(reason):
            bad(
                f"{at}.reason",
                f"Invalid value: {reason!r}: a condition reason must start with alphabetic character, "
                "optionally followed by a string of alphanumeric characters or '_,:', and must end with "
                "an alphanumeric character or '_'",
            )
        elif len(reason) > MAX_REASON:
            bad(f"{at}.reason", f"Too long: may not be more than {MAX_REASON} bytes")
        message = c.get("message", "")
        if not isinstance(message, str):
            bad(f"{at}.message", "Invalid value: must be a string")
        elif len(message.encode()) > MAX_MESSAGE:
            bad(f"{at}.message", f"Too long: may not be more than {MAX_MESSAGE} bytes")
    return out


def _time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


# ----------------------------------------------------------------------------------- merging


def merge_conditions(current: list[dict[str, Any]], patch: Any) -> Any:
    """A strategic merge of ``conditions`` (patchMergeKey ``type``): a patch item is merged into
    the current condition of its type or appended; ``$patch: delete`` removes it."""
    if not isinstance(patch, list):
        return patch
    out = [dict(c) for c in current]
    for item in patch:
        if not isinstance(item, dict) or "type" not in item:
            out.append(item)
            continue
        at = next((i for i, c in enumerate(out) if c.get("type") == item["type"]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                out.pop(at)
            continue
        clean = {k: v for k, v in item.items() if not k.startswith("$")}
        if at is None:
            out.append(clean)
        else:
            out[at] = merge_patch(out[at], clean)
    return out


def strategic_status(current: dict[str, Any], patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out = merge_patch(
        current, {k: v for k, v in patch.items() if k != "conditions" and not k.startswith("$")}
    )
    if "conditions" in patch:
        merged = merge_conditions(current.get("conditions") or [], patch["conditions"])
        if merged is None:
            out.pop("conditions", None)
        else:
            out["conditions"] = merged
    return out


# ----------------------------------------------------------------------------------- writing


def _changes(t: Target, name: str, old: list[dict[str, Any]], new: Any) -> list[dict[str, str]]:
    """The conditions of ``new`` that differ from ``old`` (status, reason or message), after
    checking ``new``; a K8sError(422) for a bad status."""
    if not isinstance(new, dict):
        raise invalid(t.res, name, [{"field": "status", "message": "Invalid value: must be an object"}])
    if new.get("resourceClaimStatuses"):
        raise invalid(
            t.res,
            name,
            [
                {
                    "field": "status.resourceClaimStatuses",
                    "message": "Forbidden: podledger does not record resource claim statuses",
                }
            ],
        )
    conditions = new.get("conditions") or []
    problems = condition_problems(conditions)
    if problems:
        raise invalid(t.res, name, problems)
    by_type = {c["type"]: c for c in conditions}
    removed = [c["type"] for c in old if c.get("type") not in by_type]
    if removed:
        raise invalid(
            t.res,
            name,
            [
                {
                    "field": "status.conditions",
                    "message": f"Forbidden: condition {ctype!r} cannot be removed: podledger records "
                    "condition changes, not removals (set its status instead)",
                }
                for ctype in removed
            ],
        )
    before = {c.get("type"): c for c in old}
    out = []
    for c in conditions:
        cond = {
            "type": c["type"],
            "status": c["status"],
            "reason": c["reason"],
            "message": c.get("message", ""),
        }
        was = before.get(c["type"])
        if was is None or any(was.get(k, "") != cond[k] for k in ("status", "reason", "message")):
            out.append(cond)
    return out


def _run(
    db: Database,
    t: Target,
    q: dict[str, str],
    actor: str,
    rid: str,
    operation: str,
    rv: int | None,
    new_status: Callable[[dict[str, Any]], Any],
) -> tuple[int, dict[str, Any]]:
    res, name = t.res, t.name or ""
    ns = (t.namespace or "default") if res.namespaced else ""

    def run(uow: UnitOfWork) -> dict[str, Any]:
        cur = backend.row(uow.conn, res.kind, ns, name)
        if cur is None:
            raise not_found(res, name)
        if rv is not None and rv != cur["updated_position"]:
            raise conflict(res, name)
        status = view(res, cur).get("status") or {}
        changes = _changes(t, name, list(status.get("conditions") or []), new_status(status))
        if changes:
            meta = {**_meta(actor, operation, q, rid), "subresource": "status"}
            backend.record_conditions(uow, res.kind, ns, name, changes, actor=actor, meta=meta)
        return _read_back(uow, res, ns, name, cur)

    return 200, _write(db, run, dry(q))


def update(
    db: Database, t: Target, body: Any, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    """PUT .../NAME/status: the body's status replaces the status."""
    obj = _check_identity(t, body)
    return _run(db, t, q, actor, rid, "Update", _precondition_rv(obj), lambda _cur: obj.get("status") or {})


def patch(
    db: Database, t: Target, body: bytes, content_type: str, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    """PATCH .../NAME/status: merge patch (lists replaced), strategic merge or apply (conditions
    merged by ``type``), JSON patch (on the object's ``status``)."""
    ctype, value = read_patch(t, body, content_type, q)
    if ctype == "application/json-patch+json":  # RFC 6902 on {"status": current status}
        return _run(db, t, q, actor, rid, "Update", None, lambda cur: _json_patched(cur, value))
    if not isinstance(value, dict):
        raise K8sError(400, "a merge patch must be a JSON object")
    rv = _precondition_rv(value)
    patch_status = value.get("status") or {}
    if ctype == "application/merge-patch+json":
        return _run(db, t, q, actor, rid, "Update", rv, lambda cur: merge_patch(cur, patch_status))
    operation = "Apply" if ctype == "application/apply-patch+yaml" else "Update"
    return _run(db, t, q, actor, rid, operation, rv, lambda cur: strategic_status(cur, patch_status))


def _json_patched(status: dict[str, Any], ops: Any) -> Any:
    out = jsonpatch.apply({"status": status}, ops)
    if not isinstance(out, dict) or not isinstance(out.get("status", {}), dict):
        raise K8sError(422, "the JSON patch must leave status an object", reason="Invalid")
    return out.get("status") or {}
