"""The HTTP routes of the Kubernetes-compatible API (one router; errors are ``Status`` objects)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response, StreamingResponse

from api.http.errors import RETRY_AFTER, ApiError, database_down
from api.k8s import (
    backend,
    binding,
    decode,
    discovery,
    events_watch,
    eviction,
    group_status,
    handlers,
    openapi,
    options,
    patching,
    reviews,
    watch,
)
from api.k8s import resources as R
from api.k8s import table as T
from api.k8s.objects import Selector
from api.k8s.status import K8sError, forbidden

log = logging.getLogger("podledger.k8s")
router = APIRouter(include_in_schema=False)

VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _json(body: Any, code: int = 200, content_type: str = "application/json") -> Response:
    return Response(orjson.dumps(body), status_code=code, media_type=content_type)


def _error(exc: K8sError) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="podledger"'} if exc.code == 401 else None
    return JSONResponse(exc.body(), status_code=exc.code, headers=headers)


def _principal(request: Request) -> Any:
    who = backend.caller(request)
    if who.principal is None:
        if who.retry_after is not None:
            raise ApiError(429, "TooManyRequests", who.reason, headers={"Retry-After": str(who.retry_after)})
        raise K8sError(401, f"Unauthorized: {who.reason}")
    return who.principal


async def _guard(request: Request, fn: Callable[[], Any]) -> Response:
    try:
        return await fn()  # type: ignore[no-any-return]
    except K8sError as exc:
        return _error(exc)
    except ApiError as exc:  # an input limit (e.g. a body over the size limit) or throttling
        response = _error(K8sError(exc.status, exc.message))
        response.headers.update(exc.headers)
        return response
    except Exception as exc:  # a Status, never a traceback, reaches the client
        if database_down(exc):
            response = _error(K8sError(503, "the database is unavailable; retry shortly"))
            response.headers["Retry-After"] = str(RETRY_AFTER)
            return response
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return _error(K8sError(500, "Internal error; see the server log"))


# ----------------------------------------------------------------------------------- discovery


@router.get("/version")
async def version() -> Response:
    return _json(discovery.version())


async def _discovery(request: Request, core: bool) -> Response:
    """``/api`` (core) or ``/apis`` (groups), in the aggregated form when kubectl asks for it."""

    async def run() -> Response:
        _principal(request)
        if discovery.wants_aggregated(request.headers.get("accept")):
            return _json(discovery.aggregated(core), content_type=discovery.AGGREGATED)
        return _json(discovery.core_versions() if core else discovery.group_list())

    return await _guard(request, run)


@router.get("/api")
async def core_api(request: Request) -> Response:
    return await _discovery(request, core=True)


@router.get("/apis")
async def apis(request: Request) -> Response:
    return await _discovery(request, core=False)


@router.get("/openapi/v3")
async def openapi_root(request: Request) -> Response:
    async def run() -> Response:
        _principal(request)
        return _json(openapi.root())

    return await _guard(request, run)


@router.get("/openapi/v3/{path:path}")
async def openapi_doc(request: Request, path: str) -> Response:
    async def run() -> Response:
        _principal(request)
        doc = openapi.by_path(path)
        if doc is None:
            raise K8sError(404, "the server could not find the requested resource")
        return _json(doc)

    return await _guard(request, run)


# ----------------------------------------------------------------------------------- resources


def _parse(group: str, version: str, parts: list[str]) -> handlers.Target | None:
    """The resource a path names, or None for a group/version's resource list."""
    if not parts:
        return None

    def res(plural: str) -> R.Resource:
        r = R.lookup(group, version, plural)
        if r is None:
            raise K8sError(404, "the server could not find the requested resource")
        return r

    if (
        parts[0] == "namespaces"
        and len(parts) >= 3
        and not (len(parts) == 3 and parts[2] in ("status", "finalize"))
    ):
        ns = parts[1]
        if group == "" and parts[2] == "bindings" and len(parts) == 3:  # POST namespaces/{ns}/bindings
            return handlers.Target(res("pods"), ns, None, "binding")
        r = res(parts[2])
        if not r.namespaced:
            raise K8sError(404, "the server could not find the requested resource")
        name = parts[3] if len(parts) > 3 else None
        sub = parts[4] if len(parts) > 4 else ""
        if len(parts) > 5:
            raise K8sError(404, "the server could not find the requested resource")
        return handlers.Target(r, ns, name, sub)
    r = res(parts[0])
    name = parts[1] if len(parts) > 1 else None
    sub = parts[2] if len(parts) > 2 else ""
    if len(parts) > 3 or (r.namespaced and name is not None):
        raise K8sError(404, "the server could not find the requested resource")
    return handlers.Target(r, None, name, sub)


def _check_sub(t: handlers.Target, method: str) -> None:
    if not t.sub:
        return
    if t.sub == "status" and t.res.status and method in ("GET", "PUT", "PATCH"):
        return
    if t.sub in ("binding", "eviction") and t.res.kind == "Pod" and method == "POST":
        return
    raise K8sError(404, "the server could not find the requested resource")


async def _resource(request: Request, group: str, version: str, rest: str) -> Response:
    parts = [p for p in rest.split("/") if p]
    principal = _principal(request)
    if (group and group not in R.groups()) or (not group and version != "v1"):
        raise K8sError(404, "the server could not find the requested resource")
    t = _parse(group, version, parts)
    method = request.method
    if t is None:
        if method != "GET":
            raise K8sError(405, "method not allowed", reason="MethodNotAllowed")
        listing = discovery.resource_list(group, version)
        if listing is None:
            raise K8sError(404, "the server could not find the requested resource")
        return _json(listing)
    _check_sub(t, method)
    if t.res.group in R.REVIEW_GROUPS:
        if method != "POST" or t.name is not None:
            raise K8sError(405, "reviews are only created", reason="MethodNotAllowed")
        raw = await request.body()
        if len(raw) > 1 << 20:
            raise K8sError(413, "the request body is over 1 MiB")
        if t.res.kind == "SelfSubjectReview":
            return _json(reviews.whoami(principal), 201)
        ctype = request.headers.get("content-type", "application/json")
        value: Any
        if ctype.startswith(reviews.PROTOBUF):
            value = reviews.from_protobuf(raw)
        else:
            value, _ = decode.decode(raw, ctype) if raw.strip() else (None, [])
        return _json(reviews.access_review(principal, value), 201)
    if t.res.kind == "Pod" and not t.res.group and t.sub in ("binding", "eviction"):
        needed = "writer"
    else:
        needed = "reader" if method == "GET" else "writer"
    if not principal.allows(needed):
        raise forbidden(t.res, VERBS.get(method, method.lower()), principal.actor, t.namespace, t.sub)
    q = dict(request.query_params)
    accept = request.headers.get("accept")
    db = backend.database(request)
    rid = getattr(request.state, "request_id", "")
    actor = principal.actor
    if method == "GET":
        options.check_read(q)
        # reads may be served by a standby (ledger.replica.route waits: not on the event loop)
        db = await run_in_threadpool(backend.read_database, request)
        if t.name is None:
            if options.boolean(q, "watch"):
                return await _watch(request, db, t, q, accept)
            return _json(await run_in_threadpool(handlers.list_objects, db, t, q, accept))
        if options.boolean(q, "watch"):
            return await _watch(request, db, t, q, accept)
        return _json(await run_in_threadpool(handlers.get_object, db, t, q, accept))
    if options.dry_run(request.query_params, method):
        q["dryRun"] = "All"
    validation = options.field_validation(q, method)
    body = await request.body()
    if len(body) > handlers.MAX_BODY:
        raise K8sError(413, "the request body is over 16 MiB")
    ctype = request.headers.get("content-type", "application/json")
    value, found = None, []
    if body.strip():
        value, dupes = decode.decode(body, ctype)
        if method == "DELETE" and isinstance(value, dict) and value.get("dryRun") is not None:
            dry_values = value["dryRun"]  # DeleteOptions in the body (kubectl sends them there)
            if not isinstance(dry_values, list) or not all(isinstance(v, str) for v in dry_values):
                raise K8sError(400, "DeleteOptions.dryRun must be a list of strings")
            if options.dry_run_values(dry_values, "DeleteOptions"):
                q["dryRun"] = "All"
        if validation == "Strict" and dupes and method != "DELETE":
            found = dupes  # refused on its duplicates alone, before the schema is consulted
        elif validation != "Ignore" and t.sub not in ("binding", "eviction") and method != "DELETE":
            found = decode.problems(value, dupes, t.res.kind, t.res.api_version)
        if found and validation == "Strict":
            raise decode.strict_error(t.res.kind, t.res.api_version, found)
    response = await _write(request, db, t, method, body, ctype, value, q, actor, rid)
    for warning in found:
        response.headers.append("Warning", decode.warning_header([warning]))
    return response


async def _write(
    request: Request,
    db: Any,
    t: handlers.Target,
    method: str,
    body: bytes,
    ctype: str,
    value: Any,
    q: dict[str, str],
    actor: str,
    rid: str,
) -> Response:
    if method == "PATCH":
        if t.name is None:
            raise K8sError(405, "PATCH needs an object name", reason="MethodNotAllowed")
        patch = group_status.patch if group_status.handles(t) else patching.patch
        code, obj = await run_in_threadpool(patch, db, t, body, ctype, q, actor, rid)
        return _json(obj, code)
    if method == "POST":
        if t.sub == "binding":
            code, obj = await run_in_threadpool(binding.bind, db, t, value, q, actor, rid)
        elif t.sub == "eviction":
            code, obj = await run_in_threadpool(eviction.evict, db, t, value, q, actor, rid)
        elif t.name is not None:
            raise K8sError(405, "POST goes to a collection", reason="MethodNotAllowed")
        else:
            code, obj = await run_in_threadpool(handlers.create, db, t, value, q, actor, rid)
        return _json(obj, code)
    if t.name is None:
        raise K8sError(
            405,
            f"{method} needs an object name (collection deletes are not served)",
            reason="MethodNotAllowed",
        )
    if method == "PUT":
        update = group_status.update if group_status.handles(t) else handlers.update
        code, obj = await run_in_threadpool(update, db, t, value, q, actor, rid)
        return _json(obj, code)
    if method == "DELETE":
        code, obj = await run_in_threadpool(handlers.delete, db, t, value, q, actor, rid)
        return _json(obj, code)
    raise K8sError(405, "method not allowed", reason="MethodNotAllowed")


async def _watch(
    request: Request, db: Any, t: handlers.Target, q: dict[str, str], accept: str | None
) -> Response:
    if not t.res.stored and t.res.kind != "Event":
        raise K8sError(405, f"watching {t.res.plural} is not served", reason="MethodNotAllowed")
    start = handlers._int(q.get("resourceVersion"), "resourceVersion")
    if start == 0:
        start = None  # "any": as upstream, the current objects as ADDED, then the changes
    timeout = handlers._int(q.get("timeoutSeconds"), "timeoutSeconds")
    params = watch.WatchParams(
        namespace=t.namespace,
        selector=Selector(q.get("labelSelector"), q.get("fieldSelector")),
        start=start,
        bookmarks=options.boolean(q, "allowWatchBookmarks"),
        timeout=float(timeout) if timeout else None,
        as_table=T.wants_table(accept),
        include=q.get("includeObject", "Metadata"),
    )
    if t.name is not None:
        params.selector.fields.append(("metadata.name", "=", t.name))
    source = events_watch.stream if t.res.kind == "Event" else watch.stream
    return StreamingResponse(
        source(db, t.res, params, request),
        media_type="application/json",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


@router.api_route("/api/{version}", methods=METHODS)
async def core_version(request: Request, version: str) -> Response:
    return await _guard(request, lambda: _resource(request, "", version, ""))


@router.api_route("/api/{version}/{rest:path}", methods=METHODS)
async def core_resource(request: Request, version: str, rest: str) -> Response:
    return await _guard(request, lambda: _resource(request, "", version, rest))


@router.get("/apis/{group}")
async def api_group(request: Request, group: str) -> Response:
    async def run() -> Response:
        _principal(request)
        g = discovery.group(group)
        if g is None:
            raise K8sError(404, "the server could not find the requested resource")
        return _json(g)

    return await _guard(request, run)


@router.api_route("/apis/{group}/{version}", methods=METHODS)
async def group_version(request: Request, group: str, version: str) -> Response:
    return await _guard(request, lambda: _resource(request, group, version, ""))


@router.api_route("/apis/{group}/{version}/{rest:path}", methods=METHODS)
async def group_resource(request: Request, group: str, version: str, rest: str) -> Response:
    return await _guard(request, lambda: _resource(request, group, version, rest))
