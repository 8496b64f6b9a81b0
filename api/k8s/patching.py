"""PATCH of an object: JSON merge patch, strategic merge patch, JSON patch (RFC 6902) and
server-side apply, each as one request through the same admission as create and update."""

from __future__ import annotations

from typing import Any

from api.k8s import apply as ssa
from api.k8s import backend, jsonpatch, strategic
from api.k8s.handlers import (
    Target,
    _admit,
    _check_identity,
    _keep_status,
    _meta,
    _precondition_rv,
    _read_back,
    _require_writable,
    _status_only,
    _write,
    dry,
    parse_body,
    stored,
)
from api.k8s.objects import merge_patch, view
from api.k8s.status import K8sError, conflict, not_found
from ledger.database import Database
from ledger.uow import UnitOfWork

PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
)


def read_patch(t: Target, body: bytes, content_type: str, q: dict[str, str]) -> tuple[str, Any]:
    """A PATCH request's media type and parsed body: 415 for an unknown type; an apply patch
    needs ``fieldManager`` and is checked as a whole object (kind, name, namespace)."""
    ctype = content_type.split(";")[0].strip().lower()
    if ctype not in PATCH_TYPES:
        raise K8sError(
            415,
            f"the body of the request was in an unknown format ({ctype or 'none'}); accepted: "
            + ", ".join(PATCH_TYPES),
        )
    value = parse_body(body, "yaml" if ctype.endswith("yaml") else "json")
    if ctype == "application/apply-patch+yaml":
        if not q.get("fieldManager"):
            raise K8sError(
                400,
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            )
        value = _check_identity(t, value)
    return ctype, value


def patch(
    db: Database, t: Target, body: bytes, content_type: str, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    res = t.res
    _require_writable(res)
    ctype, value = read_patch(t, body, content_type, q)
    assert t.name is not None
    ns = (t.namespace or "default") if res.namespaced else ""
    if ctype == "application/apply-patch+yaml":
        obj = value
        rv = _precondition_rv(obj)

        def run_apply(uow: UnitOfWork) -> tuple[int, dict[str, Any]]:
            cur = backend.row(uow.conn, res.kind, ns, t.name or "")
            if rv is not None and (cur is None or rv != cur["updated_position"]):
                raise conflict(res, t.name or "")
            if t.sub == "status":
                if cur is None:
                    raise not_found(res, t.name or "")
                manifest = _status_only(
                    stored(cur),
                    merge_patch((stored(cur).get("status") or {}), obj.get("status") or {}),
                    cur["status"] or {},
                )
            else:
                config = ssa.config_of(obj)
                manager = q.get("fieldManager", "")[:128]
                if cur is None:
                    manifest = obj
                else:
                    configs = ssa.applied_configs(uow.conn, res.kind, ns, t.name or "")
                    base = {**stored(cur), "apiVersion": res.api_version}
                    force = q.get("force") in ("true", "True", "1")
                    merged = ssa.merge(res, t.name or "", base, config, manager, configs, force=force)
                    manifest = (
                        _keep_status(merged, stored(cur))
                        if "status" not in obj
                        else {**merged, "status": obj["status"]}
                    )
            meta = _meta(actor, "Apply", q, rid)
            if t.sub != "status":
                meta["applied"] = config
            _admit(uow, res, t.name or "", manifest, actor, meta)
            return (201 if cur is None else 200), _read_back(uow, res, ns, t.name or "", cur)

        return _write(db, run_apply, dry(q))
    if ctype == "application/json-patch+json":
        return _write(db, lambda uow: _json_patch(uow, t, value, q, actor, rid), dry(q))
    if not isinstance(value, dict):
        raise K8sError(400, "a merge patch must be a JSON object")
    rv = _precondition_rv(value)

    def run_merge(uow: UnitOfWork) -> tuple[int, dict[str, Any]]:
        cur = backend.row(uow.conn, res.kind, ns, t.name or "")
        if cur is None:
            raise not_found(res, t.name or "")
        if rv is not None and rv != cur["updated_position"]:
            raise conflict(res, t.name or "")
        patch_value = {k: v for k, v in value.items()}
        patch_value["metadata"] = {
            k: v
            for k, v in (value.get("metadata") or {}).items()
            if k not in ("resourceVersion", "uid", "creationTimestamp")
        }
        if t.sub == "status":
            merged_status = merge_patch(stored(cur).get("status") or {}, value.get("status") or {})
            manifest = _status_only(stored(cur), merged_status, cur["status"] or {})
        else:
            patch_value.pop("status", None)
            base = {**stored(cur), "apiVersion": res.api_version}
            if ctype == "application/strategic-merge-patch+json":
                manifest = strategic.apply(base, patch_value)
            else:
                manifest = merge_patch(base, patch_value)
        manifest = _check_identity(t, manifest)
        _admit(uow, res, t.name or "", manifest, actor, _meta(actor, "Update", q, rid))
        return 200, _read_back(uow, res, ns, t.name or "", cur)

    return _write(db, run_merge, dry(q))


def _json_patch(
    uow: UnitOfWork, t: Target, ops: Any, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    """RFC 6902 on the object as the client sees it, then stored like an update."""
    res, name = t.res, t.name or ""
    ns = (t.namespace or "default") if res.namespaced else ""
    cur = backend.row(uow.conn, res.kind, ns, name)
    if cur is None:
        raise not_found(res, name)
    result = jsonpatch.apply(view(res, cur), ops)
    obj = _check_identity(t, result)
    if t.sub == "status":
        manifest = _status_only(stored(cur), obj.get("status"), cur["status"] or {})
    else:
        manifest = _keep_status(obj, stored(cur))
    _admit(uow, res, name, manifest, actor, _meta(actor, "Update", q, rid))
    return 200, _read_back(uow, res, ns, name, cur)
