"""Resource paths with Kubernetes semantics, over podledger's log and ``objects`` projection.

Reads come from the projection in one REPEATABLE READ snapshot (the list's ``resourceVersion``
is the head of that snapshot). Writes run in one transaction that first takes the append lock,
then checks preconditions (existence, ``resourceVersion``, uid), then admits and appends through
podledger's own apply/delete: a refused or invalid write appends nothing but what podledger's
own apply appends (an ``AdmissionRejected`` record for an admission refusal).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
import yaml

from api.k8s import backend
from api.k8s import events as E
from api.k8s import table as T
from api.k8s.objects import Selector, as_quantities, manifest_from, timestamp, view
from api.k8s.resources import Resource
from api.k8s.status import K8sError, already_exists, conflict, invalid, not_found
from ledger.database import Database
from ledger.uow import UnitOfWork

MAX_BODY = 16 * 2**20


R = TypeVar("R")


@dataclass
class Target:
    res: Resource
    namespace: str | None  # None: all namespaces (lists) or a cluster-scoped resource
    name: str | None = None
    sub: str = ""  # "", "status", "binding"


# ----------------------------------------------------------------------------------- reads


def _objects(
    conn: Any, res: Resource, namespace: str | None, upto: int | None = None
) -> list[dict[str, Any]]:
    if res.kind == "Namespace":
        return [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns,
                    "resourceVersion": "0",
                    **({"creationTimestamp": timestamp(t)} if t else {}),
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }
            for ns, t in [("default", None), *backend.namespaces(conn)]  # deduplicated by the caller
        ]
    if res.kind == "Event":
        evs = E.derive(conn, upto if upto is not None else backend.head(conn), namespace)
        conv = E.events_v1 if res.group == "events.k8s.io" else E.core_event
        return [conv(e) for e in evs]
    return [view(res, r) for r in backend.rows(conn, res.kind, namespace if res.namespaced else None)]


def _dedupe_namespaces(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for o in items:
        name = o["metadata"]["name"]
        if name not in seen or "creationTimestamp" not in seen[name]["metadata"]:
            seen[name] = o
    return [seen[k] for k in sorted(seen)]


def _encode_continue(rv: int, ns: str, name: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "start": [ns, name]})).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        ns, name = raw["start"]
        return int(raw["rv"]), (str(ns), str(name))
    except Exception:
        raise K8sError(400, "continue key is not valid: not one this server handed out") from None


def _int(value: str | None, what: str) -> int | None:
    if value in (None, ""):
        return None
    assert value is not None
    if not value.isdigit() or len(value) > 18:
        raise K8sError(400, f"{what} must be a non-negative integer, not {value!r}")
    return int(value)


def _sort_key(o: dict[str, Any]) -> tuple[str, str]:
    return (o["metadata"].get("namespace", ""), o["metadata"]["name"])


def list_objects(db: Database, t: Target, q: dict[str, str], accept: str | None) -> dict[str, Any]:
    res = t.res
    sel = Selector(q.get("labelSelector"), q.get("fieldSelector"))
    limit = _int(q.get("limit"), "limit") or 0
    after: tuple[str, str] | None = None
    rv_fixed: int | None = None
    if q.get("continue"):
        rv_fixed, after = _decode_continue(q["continue"])
    exact = q.get("resourceVersionMatch") == "Exact"
    want_rv = _int(q.get("resourceVersion"), "resourceVersion")
    ctx: dict[str, Any] = {}
    with backend.snapshot(db) as conn:
        head = backend.head(conn)
        if exact and want_rv is not None and want_rv < head and res.stored:
            head = want_rv
            folded = backend.state_at(db, res.kind, want_rv)
            items = [
                view(res, r)
                for k, r in sorted(folded.items())
                if t.namespace is None or not res.namespaced or k[1] == t.namespace
            ]
        else:
            items = _objects(conn, res, t.namespace)
        if T.wants_table(accept) and res.kind == "PodGroup":
            ctx["group_pods"] = backend.group_pod_counts(conn)
    if res.kind == "Namespace":
        items = _dedupe_namespaces(items)
    items = [o for o in items if sel.matches(o)]
    items.sort(key=_sort_key)
    if after is not None:
        items = [o for o in items if _sort_key(o) > after]
    rv = rv_fixed if rv_fixed is not None else head
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    cont = None
    if limit and len(items) > limit:
        remaining = len(items) - limit
        items = items[:limit]
        cont = _encode_continue(rv, *_sort_key(items[-1]))
        meta["continue"] = cont
        meta["remainingItemCount"] = remaining
    if T.wants_table(accept):
        return T.table(
            res,
            items,
            resource_version=str(rv),
            cont=cont,
            include=q.get("includeObject", "Metadata"),
            ctx=ctx,
        )
    return {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta, "items": items}


def get_object(db: Database, t: Target, q: dict[str, str], accept: str | None) -> dict[str, Any]:
    res = t.res
    assert t.name is not None
    ctx: dict[str, Any] = {}
    with backend.snapshot(db) as conn:
        if res.stored:
            r = backend.row(conn, res.kind, t.namespace or "", t.name)
            obj = view(res, r) if r is not None else None
        else:
            found = [o for o in _objects(conn, res, t.namespace) if o["metadata"]["name"] == t.name]
            obj = found[0] if found else None
            if res.kind == "Namespace" and found:
                obj = _dedupe_namespaces(found)[0]
        if obj is not None and T.wants_table(accept) and res.kind == "PodGroup":
            ctx["group_pods"] = backend.group_pod_counts(conn)
    if obj is None:
        raise not_found(res, t.name)
    if T.wants_table(accept):
        return T.table(
            res,
            [obj],
            resource_version=obj["metadata"]["resourceVersion"],
            include=q.get("includeObject", "Metadata"),
            ctx=ctx,
        )
    return obj


# ----------------------------------------------------------------------------------- writes


def parse_body(body: bytes, content_type: str) -> Any:
    if len(body) > MAX_BODY:
        raise K8sError(413, "the request body is over 16 MiB")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise K8sError(400, "the request body is not UTF-8 text") from None
    try:
        if "yaml" in content_type:
            value = yaml.safe_load(text)
        else:
            value = orjson.loads(body) if body.strip() else None
    except (yaml.YAMLError, orjson.JSONDecodeError) as exc:
        raise K8sError(400, f"the request body could not be decoded: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise K8sError(400, "the request body is nested too deeply") from None
    return value


def _check_identity(t: Target, obj: Any, *, need_name: bool = True) -> dict[str, Any]:
    res = t.res
    if not isinstance(obj, dict):
        raise K8sError(400, "the request body must be a JSON or YAML object")
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind not in (None, res.kind) or api_version not in (None, res.api_version):
        raise K8sError(
            400,
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({res.api_version}) or kind {kind!r} is not {res.kind!r}",
        )
    if not isinstance(obj.get("metadata") or {}, dict):
        raise _not_object(res, "metadata", obj.get("metadata"))
    out: dict[str, Any] = {**obj, "apiVersion": res.api_version, "kind": res.kind}
    meta = dict(obj.get("metadata") or {})
    for key in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise _not_object(res, f"metadata.{key}", meta[key], "string")
    if res.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and t.namespace and body_ns != t.namespace:
            raise K8sError(
                400, "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = t.namespace or body_ns or "default"
    if t.name is not None:
        if meta.get("name") and meta["name"] != t.name:
            raise K8sError(
                400, f"the name of the object ({meta['name']}) does not match the name on the URL ({t.name})"
            )
        meta["name"] = t.name
    if need_name and not meta.get("name"):
        if meta.get("generateName"):
            digest = hashlib.sha256(orjson.dumps(out, option=orjson.OPT_SORT_KEYS)).hexdigest()
            meta["name"] = f"{meta['generateName']}{digest[:5]}"
        else:
            raise invalid(
                res,
                "",
                [{"field": "metadata.name", "message": "Required value: name or generateName is required"}],
            )
    out["metadata"] = meta
    return out


def _not_object(res: Resource, field: str, value: Any, want: str = "object") -> K8sError:
    """Upstream's decoding error for a field of the wrong JSON type (400, nothing read)."""
    got = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return K8sError(
        400,
        f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: json: cannot '
        f"unmarshal {got.get(type(value), 'value')} into Go struct field {field} of type {want}",
    )


def _precondition_rv(obj: dict[str, Any]) -> int | None:
    if not isinstance(obj.get("metadata") or {}, dict):
        raise K8sError(400, f"metadata must be an object, not {type(obj['metadata']).__name__}")
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    if rv in (None, ""):
        return None
    if not str(rv).isdigit():
        raise K8sError(400, f"metadata.resourceVersion: invalid value {rv!r}: a log position is a number")
    return int(rv)


def _admit(
    uow: UnitOfWork, res: Resource, name: str, manifest: dict[str, Any], actor: str, meta: dict[str, Any]
) -> None:
    if (
        meta.get("operation") in ("Create", "Apply")
        and backend.row(uow.conn, res.kind, *_key(res, manifest)) is None
    ):
        _check_owner_refs(res, name, manifest)
    obj, errors = backend.validate_manifest(manifest_from(manifest), "request body")
    if errors or obj is None:
        raise invalid(
            res,
            name,
            [{"field": e.field, "message": e.message} for e in errors]
            or [{"field": "", "message": "invalid"}],
        )
    try:
        result = backend.apply(uow, [obj], actor=actor, meta=meta)
    except backend.ConflictErrors:
        raise conflict(res, name) from None
    if result.rejected:
        causes = []
        for rej in result.events[0].data.get("rejected") or []:
            for reason in rej.get("reasons") or [{"field": "", "message": rej.get("message", "")}]:
                causes.append({"field": reason.get("field", ""), "message": reason.get("message", "")})
        # podledger's own apply records a refusal as one AdmissionRejected event; so does this one
        raise _Rejected(invalid(res, name, causes or [{"field": "", "message": "refused by admission"}]))


def _key(res: Resource, manifest: dict[str, Any]) -> tuple[str, str]:
    meta = manifest.get("metadata") or {}
    return (meta.get("namespace") or "default") if res.namespaced else "", meta.get("name") or ""


def _check_owner_refs(res: Resource, name: str, manifest: dict[str, Any]) -> None:
    """Owner references of a new object as upstream validates them: apiVersion, kind, name and
    uid required (a reference without uid is refused, never stored)."""
    refs = (manifest.get("metadata") or {}).get("ownerReferences") or []
    if not isinstance(refs, list):
        return  # the model reports the wrong type
    causes = []
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        for key in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(key):
                message = f'Invalid value: "": {key.lower() if key != "apiVersion" else "version"} must not be empty'
                causes.append({"field": f"metadata.ownerReferences.{key}", "message": message})
    if causes:
        raise invalid(res, name, causes)


class _Rejected(Exception):
    """Admission refused: commit the AdmissionRejected record, then answer the error."""

    def __init__(self, error: K8sError) -> None:
        self.error = error


def dry(q: dict[str, str]) -> bool:
    """A dry run (``dryRun=All``; routes refused any other value with 422 before this)."""
    return q.get("dryRun") == "All"


def _write(db: Database, fn: Callable[[UnitOfWork], R], dry_run: bool = False) -> R:
    """``fn`` as one request: one unit of work holding the append lock, committed when ``fn``
    returns (or raises _Rejected: the AdmissionRejected record stays, then the error). A dry
    run runs the same and is rolled back: nothing, not even the AdmissionRejected, stays."""
    rejected: _Rejected | None = None
    with backend.write_unit(db, dry_run=dry_run) as uow:
        try:
            out = fn(uow)
        except _Rejected as exc:
            rejected = exc
        except backend.EventTooLarge as exc:
            raise K8sError(413, f"Request entity too large: {exc}") from None
        uow.commit()
        if rejected is None:
            return out
    raise rejected.error


def _meta(actor: str, operation: str, q: dict[str, str], request_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {"via": "k8s", "operation": operation, "request_id": request_id}
    if q.get("fieldManager"):
        out["fieldManager"] = q["fieldManager"][:128]
    return out


def _read_back(
    uow: UnitOfWork, res: Resource, ns: str, name: str, before: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The object as stored by this request. In a dry run, as upstream answers it: what would
    be stored, with the resourceVersion it has now (none for a create)."""
    r = backend.row(uow.conn, res.kind, ns, name)
    assert r is not None
    if not uow.dry_run:
        return view(res, r)
    if before is None:
        out = view(res, r)
        out["metadata"].pop("resourceVersion", None)
        return out
    return view(res, r, rv=before["updated_position"])


def _require_writable(res: Resource) -> None:
    if not res.stored:
        raise K8sError(
            405, f"{res.plural} are derived from the log and read-only here", reason="MethodNotAllowed"
        )


def create(
    db: Database, t: Target, body: Any, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    res = t.res
    _require_writable(res)
    obj = _check_identity(t, body)
    ns = obj["metadata"].get("namespace", "") if res.namespaced else ""
    name = obj["metadata"]["name"]
    rv = _precondition_rv(obj)

    def run(uow: UnitOfWork) -> dict[str, Any]:
        cur = backend.row(uow.conn, res.kind, ns, name)
        if cur is not None:
            raise already_exists(res, name)
        if rv is not None:
            raise conflict(res, name, f"resourceVersion {rv} is stale: the object does not exist")
        _admit(uow, res, name, obj, actor, _meta(actor, "Create", q, rid))
        return _read_back(uow, res, ns, name)

    return 201, _write(db, run, dry(q))


def stored(row: dict[str, Any]) -> dict[str, Any]:
    """The stored manifest with Kubernetes quantities (the stored one holds exact base units,
    which re-validation would read as quantities)."""
    return as_quantities(row["object"])  # type: ignore[no-any-return]


def _keep_status(manifest: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in manifest.items() if k != "status"}
    if "status" in stored:
        out["status"] = stored["status"]
    return out


def _status_only(stored: dict[str, Any], status: Any, projected: dict[str, Any]) -> dict[str, Any]:
    out = dict(stored)
    if isinstance(status, dict):
        manifest_status = {k: v for k, v in status.items() if k not in projected}
        if manifest_status:
            out["status"] = manifest_status
        else:
            out.pop("status", None)
    return out


def update(
    db: Database, t: Target, body: Any, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    res = t.res
    _require_writable(res)
    obj = _check_identity(t, body)
    ns = obj["metadata"].get("namespace", "") if res.namespaced else ""
    assert t.name is not None
    rv = _precondition_rv(obj)

    def run(uow: UnitOfWork) -> dict[str, Any]:
        cur = backend.row(uow.conn, res.kind, ns, t.name or "")
        if cur is None:
            raise not_found(res, t.name or "")
        if rv is not None and rv != cur["updated_position"]:
            raise conflict(res, t.name or "")
        if t.sub == "status":
            manifest = _status_only(stored(cur), obj.get("status"), cur["status"] or {})
        else:
            manifest = _keep_status(obj, stored(cur))
        _admit(uow, res, t.name or "", manifest, actor, _meta(actor, "Update", q, rid))
        return _read_back(uow, res, ns, t.name or "", cur)

    return 200, _write(db, run, dry(q))


def delete(
    db: Database, t: Target, body: Any, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    res = t.res
    _require_writable(res)
    assert t.name is not None
    ns = (t.namespace or "default") if res.namespaced else ""
    if body is not None and not isinstance(body, dict):
        raise K8sError(400, "the request body must be a DeleteOptions object")
    pre = (body or {}).get("preconditions") or {}
    if not isinstance(pre, dict):
        raise K8sError(400, "preconditions must be an object (Preconditions: uid, resourceVersion)")
    want_rv = (
        _int(str(pre["resourceVersion"]), "preconditions.resourceVersion")
        if pre.get("resourceVersion")
        else None
    )
    want_uid = pre.get("uid")

    def run(uow: UnitOfWork) -> dict[str, Any]:
        cur = backend.row(uow.conn, res.kind, ns, t.name or "")
        if cur is None:
            raise not_found(res, t.name or "")
        if want_rv is not None and want_rv != cur["updated_position"]:
            raise conflict(
                res,
                t.name or "",
                f"Precondition failed: ResourceVersion: {want_rv}, current: {cur['updated_position']}",
            )
        if want_uid and want_uid != cur["uid"]:
            raise conflict(
                res,
                t.name or "",
                f"Precondition failed: UID in precondition: {want_uid}, UID in object meta: {cur['uid']}",
            )
        try:
            ev = backend.delete(uow, res.kind, ns, t.name or "", actor=actor)
        except LookupError:
            raise not_found(res, t.name or "") from None
        except backend.ConflictErrors:
            raise conflict(res, t.name or "") from None
        return view(res, cur) if uow.dry_run else view(res, cur, rv=ev.position)

    return 200, _write(db, run, dry(q))
