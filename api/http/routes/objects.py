"""Objects: apply, delete, get, list (filters, cursor pagination). Each route parses the
request, calls a command (``api.services.commands.objects``, in a unit of work of its own) or a
read (``api.services.objects`` / ``api.services.listing``) and renders the answer."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from api.http.auth import Principal
from api.http.context import context
from api.http.errors import ApiError
from api.http.limits import too_large
from api.http.routes.deps import COMMON_ERRORS, _err, reader, writer
from api.http.routes.paths import PREFIX, KindPath, NamePath, NsPath, object_ns
from api.http.schemas import ApplyLine, ApplyResponse, DeleteResponse, EventRef, ObjectList
from api.services import listing
from api.services import objects as object_service
from api.services.commands import objects as object_commands
from api.services.objects import kind_info
from ledger.resources.kinds import KindInfo

router = APIRouter(prefix=PREFIX, tags=["objects"])


APPLY_YAML = """apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: job-1, namespace: team-a}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
---
apiVersion: v1
kind: Pod
metadata: {name: job-1-0, namespace: team-a}
spec:
  schedulingGroup: {podGroupName: job-1}
  containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""
APPLY_JSON = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
    "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
}
APPLY_LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "batch-low"},
            "value": 100,
        }
    ],
}

APPLY_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "Kubernetes-style manifests: one or more YAML documents, a JSON object, a JSON "
        "array of objects, or `kind: List`. The whole request applies atomically or not at all.",
        "content": {
            "application/yaml": {
                "schema": {"type": "string"},
                "examples": {"gang": {"summary": "A PodGroup and one of its pods", "value": APPLY_YAML}},
            },
            "application/json": {
                "schema": {
                    "oneOf": [
                        {"type": "object", "additionalProperties": True},
                        {"type": "array", "items": {"type": "object", "additionalProperties": True}},
                    ]
                },
                "examples": {
                    "node": {"summary": "One node", "value": APPLY_JSON},
                    "list": {"summary": "A kind: List", "value": APPLY_LIST},
                },
            },
        },
    }
}


# ------------------------------------------------------------------------------- helpers

DryRun = Annotated[
    bool,
    Query(
        alias="dryRun",
        description="Run validation, admission and projections and roll back: the answer is what "
        "would have been stored; nothing is appended (not even an AdmissionRejected record)",
    ),
]


def _ref(info: KindInfo, ns: str, name: str) -> str:
    return f"{info.singular}/{ns}/{name}" if ns else f"{info.singular}/{name}"


def parse_if_match(value: str | None) -> int | None:
    """``If-Match: "3"`` / ``3`` / ``W/"3"`` → 3 (the object's stream version; 0 = must not exist)."""
    if value is None:
        return None
    v = value.strip()
    if v.startswith("W/"):
        v = v[2:]
    v = v.strip('"')
    if not v.isdigit() or len(v) > 9:
        raise ApiError(400, "bad_request", 'If-Match must carry a stream version such as "3"')
    return int(v)


def check_idempotency_key(key: str | None) -> str | None:
    if key is None:
        return None
    if not (1 <= len(key) <= 200) or not key.isprintable():
        raise ApiError(400, "bad_request", "Idempotency-Key must be 1 to 200 printable characters")
    return key


def _event(ref: object_commands.EventRef) -> EventRef:
    return EventRef(position=ref.position, stream=ref.stream, version=ref.version, type=ref.type)


# ------------------------------------------------------------------------------- apply


def _apply_sync(
    ctx: Any,
    text: str,
    principal: Principal,
    request_id: str,
    key: str | None,
    expected: int | None,
    dry_run: bool = False,
) -> ApplyResponse:
    with ctx.db.unit_of_work(dry_run=dry_run) as uow:
        applied = object_commands.apply_manifests(
            uow,
            text,
            actor=principal.actor,
            source="http",
            meta={"request_id": request_id, "via": "http"},
            idempotency_key=key,
            idempotency_scope=principal.scope,
            expected_version=expected,
            timed=ctx.metrics.append_seconds.labels("apply").time,
        )
    return ApplyResponse(
        results=[ApplyLine(object=obj, action=action) for obj, action in applied.results],
        events=[_event(e) for e in applied.events],
        replayed=applied.replayed,
        dryRun=dry_run,
    )


@router.post(
    "/apply",
    response_model=ApplyResponse,
    summary="Create or update objects from manifests",
    description="Like `podledger apply -f`: YAML or JSON manifests, applied in one transaction. "
    "Invalid documents or an admission refusal apply nothing (422, with field paths); a refusal is "
    "recorded as one AdmissionRejected event.",
    responses={
        **COMMON_ERRORS,
        409: _err("If-Match did not match the object's stream version, or a concurrent write won"),
        413: _err("The body is over the limit (3 MiB unless the server sets PODLEDGER_MAX_BODY)"),
        422: _err("Invalid manifests (field paths in details) or refused by admission (error: rejected)"),
    },
    openapi_extra=APPLY_OPENAPI,
)
async def apply(
    request: Request,
    principal: Annotated[Principal, Depends(writer)],
    idempotency_key: Annotated[
        str | None,
        Header(alias="Idempotency-Key", description="Retries with the same key append nothing new"),
    ] = None,
    if_match: Annotated[
        str | None,
        Header(
            alias="If-Match",
            description='Expected stream version of the (single) object, e.g. "3"; "0" = must not exist',
        ),
    ] = None,
    dry_run: DryRun = False,
) -> ApplyResponse:
    key = check_idempotency_key(idempotency_key)
    expected = parse_if_match(if_match)
    limit = context(request).max_body
    body = await request.body()  # BodyLimit refuses a body over the limit while it is read
    if len(body) > limit:
        raise too_large(limit)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(422, "invalid", "the request body is not UTF-8 text") from None
    ctx = context(request)
    return await run_in_threadpool(
        _apply_sync, ctx, text, principal, request.state.request_id, key, expected, dry_run
    )


# ------------------------------------------------------------------------------- delete


def _delete_sync(
    ctx: Any,
    info: KindInfo,
    ns: str,
    name: str,
    principal: Principal,
    key: str | None,
    expected: int | None,
    dry_run: bool = False,
) -> DeleteResponse:
    with ctx.db.unit_of_work(dry_run=dry_run) as uow:
        ref, replayed = object_commands.delete_one(
            uow,
            info,
            ns,
            name,
            actor=principal.actor,
            idempotency_key=key,
            idempotency_scope=principal.scope,
            expected_version=expected,
            timed=ctx.metrics.append_seconds.labels("delete").time,
        )
    return DeleteResponse(deleted=_ref(info, ns, name), event=_event(ref), replayed=replayed, dryRun=dry_run)


@router.delete(
    "/{kind}/{namespace}/{name}",
    response_model=DeleteResponse,
    summary="Delete one object",
    responses={**COMMON_ERRORS, 409: _err("If-Match did not match the object's stream version")},
)
async def delete(
    request: Request,
    kind: KindPath,
    namespace: NsPath,
    name: NamePath,
    principal: Annotated[Principal, Depends(writer)],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
    if_match: Annotated[str | None, Header(alias="If-Match")] = None,
    dry_run: DryRun = False,
) -> DeleteResponse:
    key = check_idempotency_key(idempotency_key)
    expected = parse_if_match(if_match)
    info = kind_info(kind)
    ns = object_ns(info, namespace)
    return await run_in_threadpool(
        _delete_sync, context(request), info, ns, name, principal, key, expected, dry_run
    )


# ------------------------------------------------------------------------------- list / get


def _list_sync(ctx: Any, info: KindInfo, **kw: Any) -> ObjectList:
    items, cursor = listing.list_page(ctx.read_db, info, **kw)
    return ObjectList(items=items, metadata={"count": len(items), "continue": cursor})  # type: ignore[arg-type]


@router.get(
    "/{kind}",
    response_model=ObjectList,
    response_model_by_alias=True,
    summary="List objects of a kind",
    description="Pages of at most `limit` objects in (namespace, name) order; pass "
    "`metadata.continue` back as `cursor` for the next page.",
    responses=COMMON_ERRORS,
)
async def list_kind(
    request: Request,
    kind: KindPath,
    _p: Annotated[Principal, Depends(reader)],
    namespace: Annotated[str | None, Query(description="Only this namespace", max_length=253)] = None,
    status: Annotated[
        str | None,
        Query(
            description="Pods: phase (Pending, Bound, Preempted). Groups: reason of the InitiallyScheduled "
            "condition (Scheduled, Unschedulable, …) or Pending",
            max_length=64,
        ),
    ] = None,
    label_selector: Annotated[
        str | None,
        Query(
            alias="labelSelector", description="`k=v`, `k!=v`, `k`, `!k`, comma-separated", max_length=1024
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[
        str | None, Query(description="Opaque cursor from metadata.continue", max_length=2048)
    ] = None,
) -> ObjectList:
    return await run_in_threadpool(
        _list_sync,
        context(request),
        kind_info(kind),
        namespace=namespace,
        status=status,
        label_selector=label_selector,
        limit=limit,
        cursor=cursor,
    )


@router.get(
    "/{kind}/{namespace}/{name}",
    response_model=dict[str, Any],
    summary="Get one object (manifest + projected status)",
    description="The `ETag` header carries the object's stream version, for `If-Match` on writes.",
    responses={
        **COMMON_ERRORS,
        200: {"headers": {"ETag": {"schema": {"type": "string"}, "description": "Stream version"}}},
    },
)
async def get_object(
    request: Request,
    response: Response,
    kind: KindPath,
    namespace: NsPath,
    name: NamePath,
    _p: Annotated[Principal, Depends(reader)],
) -> dict[str, Any]:
    info = kind_info(kind)
    ns = object_ns(info, namespace)
    ctx = context(request)
    obj, version = await run_in_threadpool(lambda: object_service.get_one(ctx.read_db, info, ns, name))
    response.headers["ETag"] = f'"{version}"'
    return obj


__all__ = ["check_idempotency_key", "parse_if_match", "router"]
