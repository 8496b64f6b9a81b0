"""Objects: apply, delete, get, list (filters, cursor pagination), explain, history."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any

import orjson
import sqlalchemy as sa
from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.engine import Connection, Engine

from api import services
from api.app import ApiError, context
from api.auth import Principal
from api.routes.deps import COMMON_ERRORS, _err, reader, writer
from api.schemas import (
    ApplyLine,
    ApplyResponse,
    DeleteResponse,
    EventRef,
    Explanation,
    History,
    HistoryEntry,
    ObjectList,
)
from ledger.errors import ConcurrencyError, IdempotencyConflict, LedgerError
from ledger.resources.errors import DocumentParseError
from ledger.resources.kinds import KindInfo, UnknownKindError, resolve_kind
from ledger.store import StoredEvent

router = APIRouter(prefix="/podledger/v1", tags=["objects"])

MAX_BODY = 16 * 2**20
CLUSTER = "-"  # the namespace segment of cluster-scoped objects
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$"

KindPath = Annotated[str, Path(description="Plural lower-case kind: pods, nodes, podgroups, … (aliases accepted)", examples=["podgroups"])]
NsPath = Annotated[str, Path(description="Namespace; `-` for cluster-scoped kinds", examples=["team-a"])]
NamePath = Annotated[str, Path(description="Object name", examples=["llm-pretrain"])]

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


def kind_info(kind: str) -> KindInfo:
    try:
        return resolve_kind(kind)
    except UnknownKindError as exc:
        raise ApiError(404, "not_found", str(exc).strip("'\"")) from None


def object_ns(info: KindInfo, namespace: str) -> str:
    """The ``objects.namespace`` value for a path segment ('' for cluster-scoped kinds)."""
    if not info.namespaced:
        if namespace not in (CLUSTER, ""):
            raise ApiError(
                404, "not_found", f"{info.plural} are cluster-scoped: use {CLUSTER} as the namespace segment"
            )
        return ""
    return namespace


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


def event_ref(ev: StoredEvent) -> EventRef:
    return EventRef(position=ev.position, stream=ev.stream, version=ev.version, type=ev.type)


class _InTransaction:
    """An Engine stand-in whose ``begin()`` yields a connection already inside our transaction,
    so a service call joins it (used to hold the If-Match row lock across the write)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        yield self._conn


@contextmanager
def conditional(engine: Engine, stream: str, expected: int | None) -> Iterator[Any]:
    """Yield something to pass as the service's engine. With ``expected`` the stream row is
    locked and checked first, in the same transaction as the write: a concurrent writer waits
    for us or makes us fail with a conflict, never slips in between."""
    if expected is None:
        yield engine
        return
    with engine.begin() as conn:
        row = conn.execute(
            sa.text("SELECT version FROM streams WHERE stream = :s FOR UPDATE"), {"s": stream}
        ).first()
        actual = int(row[0]) if row else 0
        if actual != expected:
            raise ConcurrencyError(stream, expected, actual)
        yield _InTransaction(conn)


def _conflict(exc: LedgerError) -> ApiError:
    return ApiError(409, "conflict", str(exc))


def _problems_from_field_errors(errors: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "kind": e.kind,
            "namespace": e.namespace,
            "name": e.name,
            "field": e.field,
            "message": e.message,
            "document": e.index,
            "item": e.item,
        }
        for e in errors
    ]


def _stream_versions(conn: Connection, streams: list[str]) -> dict[str, int]:
    rows = conn.execute(sa.text("SELECT stream, version FROM streams WHERE stream = ANY(:s)"), {"s": streams})
    return {s: int(v) for s, v in rows}


# ------------------------------------------------------------------------------- apply


def _lines(lines: list[str]) -> list[ApplyLine]:
    out = []
    for line in lines:
        obj, _, action = line.rpartition(" ")
        out.append(ApplyLine(object=obj or line, action=action if obj else ""))
    return out


def _replay_apply(engine: Engine, key: str, n_objects: int) -> ApplyResponse | None:
    """The events a previous request with this Idempotency-Key appended, if any."""
    ids = [services.request_event_id(key, i) for i in range(n_objects)]
    ids.append(services.request_event_id(key, "rejected"))
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT position, stream, version, type, data FROM events WHERE event_id = ANY(:ids) ORDER BY position"
            ),
            {"ids": ids},
        ).all()
    if not rows:
        return None
    if rows[0].type == "AdmissionRejected":
        raise _rejected_error(rows[0].data, rows[0].position)
    lines = []
    for r in rows:
        kind_name, _, rest = r.stream.partition("/")
        name = rest.rpartition("/")[2]
        info = kind_info(kind_name)
        action = "created" if r.type.endswith("Created") else "updated"
        lines.append(ApplyLine(object=info.display(name), action=action))
    return ApplyResponse(
        results=lines,
        events=[EventRef(position=r.position, stream=r.stream, version=r.version, type=r.type) for r in rows],
        replayed=True,
    )


def _rejected_error(data: dict[str, Any], position: int) -> ApiError:
    details = []
    for rej in data.get("rejected") or []:
        reasons = rej.get("reasons") or [{"field": "", "message": rej.get("message", "")}]
        for reason in reasons:
            details.append(
                {
                    "kind": rej.get("kind", ""),
                    "namespace": rej.get("namespace"),
                    "name": rej.get("name", ""),
                    "field": reason.get("field", ""),
                    "message": reason.get("message", ""),
                }
            )
    n = len(data.get("rejected") or [])
    return ApiError(
        422,
        "rejected",
        f"admission refused {n} object(s): nothing applied (recorded as AdmissionRejected at position {position})",
        details=details,
        position=position,
    )


def _apply_sync(
    ctx: Any, text: str, principal: Principal, request_id: str, key: str | None, expected: int | None
) -> ApplyResponse:
    from ledger.resources.parse import parse_documents, validate

    try:
        docs = parse_documents(text, "request body")
    except DocumentParseError as exc:
        raise ApiError(
            422,
            "invalid",
            f"the request body could not be parsed: {exc.problem}",
            details=[{"field": "", "message": exc.problem, "document": exc.index, "line": exc.line}],
        ) from None
    objects = []
    errors = []
    for doc in docs:
        obj, errs = validate(doc)
        if obj is not None and not errs:
            objects.append(obj)
        errors.extend(errs)
    if errors:
        raise ApiError(
            422,
            "invalid",
            f"{len(errors)} invalid field(s): nothing applied",
            details=_problems_from_field_errors(errors),
        )
    if not objects:
        raise ApiError(422, "invalid", "the request body holds no objects")
    engine = ctx.engine
    if key is not None:
        replay = _replay_apply(engine, key, len(objects))
        if replay is not None:
            return replay
    stream = None
    if expected is not None:
        if len(objects) != 1:
            raise ApiError(400, "bad_request", "If-Match needs a request with exactly one object")
        o = objects[0]
        stream = services.stream_for(o.KIND, o.metadata.namespace or ("default" if kind_info(o.KIND).namespaced else None), o.name)
    with ctx.metrics.append_seconds.labels("apply").time():
        try:
            with conditional(engine, stream or "", expected) as target:
                result = services.apply_objects(
                    target,
                    objects,
                    actor=principal.actor,
                    source="http",
                    meta={"request_id": request_id, "via": "http"},
                    idempotency_key=key,
                )
        except (ConcurrencyError, IdempotencyConflict) as exc:
            raise _conflict(exc) from None
    if result.rejected:
        ev = result.events[0]
        raise _rejected_error(ev.data, ev.position)
    return ApplyResponse(results=_lines(result.lines), events=[event_ref(e) for e in result.events])


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
        413: _err("The body is over 16 MiB"),
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
        Header(alias="If-Match", description='Expected stream version of the (single) object, e.g. "3"; "0" = must not exist'),
    ] = None,
) -> ApplyResponse:
    key = check_idempotency_key(idempotency_key)
    expected = parse_if_match(if_match)
    body = await request.body()
    if len(body) > MAX_BODY:
        raise ApiError(413, "too_large", "the request body is over 16 MiB")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(422, "invalid", "the request body is not UTF-8 text") from None
    ctx = context(request)
    return await run_in_threadpool(_apply_sync, ctx, text, principal, request.state.request_id, key, expected)


# ------------------------------------------------------------------------------- delete


def _delete_sync(
    ctx: Any, info: KindInfo, ns: str, name: str, principal: Principal, key: str | None, expected: int | None
) -> DeleteResponse:
    engine = ctx.engine
    ref = _ref(info, ns, name)
    if key is not None:
        eid = services.request_event_id(key, 0)
        with engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT position, stream, version, type FROM events WHERE event_id = :e"), {"e": eid}
            ).first()
        if row is not None:
            return DeleteResponse(
                deleted=ref,
                event=EventRef(position=row.position, stream=row.stream, version=row.version, type=row.type),
                replayed=True,
            )
    stream = services.stream_for(info.kind, ns or None, name)
    with ctx.metrics.append_seconds.labels("delete").time():
        try:
            with conditional(engine, stream, expected) as target:
                ev = services.delete_object(
                    target, info.kind, ns or None, name, actor=principal.actor, idempotency_key=key
                )
        except LookupError as exc:
            raise ApiError(404, "not_found", str(exc).strip("'\"")) from None
        except (ConcurrencyError, IdempotencyConflict) as exc:
            raise _conflict(exc) from None
    return DeleteResponse(deleted=ref, event=event_ref(ev))


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
) -> DeleteResponse:
    key = check_idempotency_key(idempotency_key)
    expected = parse_if_match(if_match)
    info = kind_info(kind)
    ns = object_ns(info, namespace)
    return await run_in_threadpool(_delete_sync, context(request), info, ns, name, principal, key, expected)


# ------------------------------------------------------------------------------- list / get

_SELECTOR = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)?\s*([A-Za-z0-9._-]*)\s*$")


def parse_selector(selector: str | None) -> list[tuple[str, str, str | None]]:
    """``app=x,tier!=db,gpu`` → [(key, op, value)]; equality, inequality and existence."""
    if not selector:
        return []
    out: list[tuple[str, str, str | None]] = []
    for part in selector.split(","):
        if not part.strip():
            continue
        if part.strip().startswith("!"):
            m = _SELECTOR.match(part.strip()[1:])
            if not m or m.group(2):
                raise ApiError(400, "bad_request", f"labelSelector: cannot read {part.strip()!r}")
            out.append((m.group(1), "!exists", None))
            continue
        m = _SELECTOR.match(part)
        if not m:
            raise ApiError(400, "bad_request", f"labelSelector: cannot read {part.strip()!r}")
        k, op, v = m.group(1), m.group(2), m.group(3)
        if op is None:
            if v:
                raise ApiError(400, "bad_request", f"labelSelector: cannot read {part.strip()!r}")
            out.append((k, "exists", None))
        else:
            out.append((k, "!=" if op == "!=" else "=", v))
    return out


def encode_cursor(ns: str, name: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([ns, name])).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        ns, name = orjson.loads(raw)
        if not isinstance(ns, str) or not isinstance(name, str):
            raise ValueError
        return ns, name
    except Exception:
        raise ApiError(400, "bad_request", "cursor is not one this server handed out") from None


STATUS_SQL = {
    # phase of pods; the InitiallyScheduled condition's reason for groups ("Pending" when none)
    "Pod": "coalesce(status->>'phase', 'Pending')",
    "group": (
        "coalesce((SELECT c->>'reason' FROM jsonb_array_elements(coalesce(status->'conditions', '[]')) c "
        "WHERE c->>'type' LIKE '%InitiallyScheduled' LIMIT 1), 'Pending')"
    ),
}


def list_page(
    conn: Connection,
    info: KindInfo,
    *,
    namespace: str | None,
    status: str | None,
    selector: list[tuple[str, str, str | None]],
    limit: int,
    after: tuple[str, str] | None,
) -> tuple[list[services.ObjectRow], tuple[str, str] | None]:
    where = ["kind = :k"]
    params: dict[str, Any] = {"k": info.kind, "lim": limit + 1}
    if namespace is not None and info.namespaced:
        where.append("namespace = :ns")
        params["ns"] = namespace
    if status:
        expr = STATUS_SQL["Pod"] if info.kind == "Pod" else STATUS_SQL["group"] if "Group" in info.kind else None
        if expr is None:
            raise ApiError(400, "bad_request", f"status filters apply to pods and groups, not {info.plural}")
        where.append(f"lower({expr}) = lower(:st)")
        params["st"] = status
    for i, (k, op, v) in enumerate(selector):
        params[f"lk{i}"] = k
        labels = "coalesce(object->'metadata'->'labels', '{}')"
        if op == "=":
            where.append(f"{labels}->>:lk{i} = :lv{i}")
            params[f"lv{i}"] = v
        elif op == "!=":
            where.append(f"{labels}->>:lk{i} IS DISTINCT FROM :lv{i}")
            params[f"lv{i}"] = v
        elif op == "exists":
            where.append(f"{labels} ? :lk{i}")
        else:
            where.append(f"NOT ({labels} ? :lk{i})")
    if after is not None:
        where.append("(namespace, name) > (:an, :am)")
        params["an"], params["am"] = after
    q = (
        "SELECT kind, namespace, name, object, status, created_at, updated_position FROM objects "
        f"WHERE {' AND '.join(where)} ORDER BY namespace, name LIMIT :lim"
    )
    rows = [services.ObjectRow(*r) for r in conn.execute(sa.text(q), params)]
    nxt = None
    if len(rows) > limit:
        rows = rows[:limit]
        nxt = (rows[-1].namespace, rows[-1].name)
    return rows, nxt


def _list_sync(ctx: Any, info: KindInfo, **kw: Any) -> ObjectList:
    with ctx.engine.connect() as conn:
        rows, nxt = list_page(conn, info, **kw)
    return ObjectList(
        items=[r.full() for r in rows],
        metadata={"count": len(rows), "continue": encode_cursor(*nxt) if nxt else None},  # type: ignore[arg-type]
    )


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
        Query(alias="labelSelector", description="`k=v`, `k!=v`, `k`, `!k`, comma-separated", max_length=1024),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(description="Opaque cursor from metadata.continue", max_length=2048)] = None,
) -> ObjectList:
    info = kind_info(kind)
    after = decode_cursor(cursor) if cursor else None
    return await run_in_threadpool(
        _list_sync,
        context(request),
        info,
        namespace=namespace,
        status=status,
        selector=parse_selector(label_selector),
        limit=limit,
        after=after,
    )


def _get_sync(ctx: Any, info: KindInfo, ns: str, name: str) -> tuple[dict[str, Any], int]:
    with ctx.engine.connect() as conn:
        rows = services.list_objects(conn, info.kind, ns, name)
        if not rows:
            where = f"{ns}/{name}" if ns else name
            raise ApiError(404, "not_found", f'{info.kind} "{where}" not found')
        version = _stream_versions(conn, [services.stream_for(info.kind, ns or None, name)])
    return rows[0].full(), next(iter(version.values()), 0)


@router.get(
    "/{kind}/{namespace}/{name}",
    response_model=dict[str, Any],
    summary="Get one object (manifest + projected status)",
    description="The `ETag` header carries the object's stream version, for `If-Match` on writes.",
    responses={**COMMON_ERRORS, 200: {"headers": {"ETag": {"schema": {"type": "string"}, "description": "Stream version"}}}},
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
    obj, version = await run_in_threadpool(_get_sync, context(request), info, ns, name)
    response.headers["ETag"] = f'"{version}"'
    return obj


# ------------------------------------------------------------------------------- explain / history


def _audit_unavailable(exc: Exception) -> ApiError:
    return ApiError(501, "not_implemented", f"the audit service is not available in this build ({exc})")


def position_at(engine: Engine, at: str | None) -> int | None:
    """``at`` as a log position (digits) or an ISO-8601 time (the last position at or before it)."""
    if at is None or at == "":
        return None
    if at.isdigit():
        return int(at)
    try:
        t = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(400, "bad_request", "at must be a log position or an ISO-8601 time") from None
    if t.tzinfo is None:
        raise ApiError(400, "bad_request", "at: give the time with a zone, e.g. 2026-01-01T00:00:00Z")
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.text("SELECT coalesce(max(position), 0) FROM events WHERE effective_at <= :t"), {"t": t}
            ).scalar_one()
        )


def _explain_sync(ctx: Any, info: KindInfo, ns: str, name: str, at: str | None, nodes: bool) -> Explanation:
    from api import audit

    pos = position_at(ctx.engine, at)
    try:
        doc = audit.explain(ctx.engine, info.singular, ns, name, at=pos, nodes=nodes)
    except LookupError as exc:
        raise ApiError(404, "not_found", str(exc).strip("'\"")) from None
    except (ImportError, AttributeError, NotImplementedError) as exc:
        raise _audit_unavailable(exc) from None
    try:
        text = audit.render_explain(doc)
    except (ImportError, AttributeError, NotImplementedError):
        text = None
    return Explanation.model_validate({**doc, "text": text})


@router.get(
    "/{kind}/{namespace}/{name}/explain",
    response_model=Explanation,
    summary="Why a PodGroup or Pod is where it is",
    description="`kind` is podgroups or pods. `at` = a log position or an ISO-8601 time (default: now).",
    responses={**COMMON_ERRORS, 501: _err("The audit service is not part of this build")},
)
async def explain(
    request: Request,
    kind: KindPath,
    namespace: NsPath,
    name: NamePath,
    _p: Annotated[Principal, Depends(reader)],
    at: Annotated[str | None, Query(description="Position or ISO-8601 time", max_length=64)] = None,
    nodes: Annotated[bool, Query(description="Add the per-node table (recomputed)")] = False,
) -> Explanation:
    info = kind_info(kind)
    if info.kind not in ("PodGroup", "Pod"):
        raise ApiError(404, "not_found", "explain is served for podgroups and pods")
    return await run_in_threadpool(_explain_sync, context(request), info, namespace, name, at, nodes)


def _history_sync(ctx: Any, info: KindInfo, ns: str, name: str) -> History:
    from api import audit

    try:
        items = audit.history(ctx.engine, info.singular, ns, name)
    except LookupError as exc:
        raise ApiError(404, "not_found", str(exc).strip("'\"")) from None
    except (ImportError, AttributeError, NotImplementedError) as exc:
        raise _audit_unavailable(exc) from None
    if not items:
        where = f"{ns}/{name}" if ns else name
        raise ApiError(404, "not_found", f'{info.kind} "{where}" has no history')
    return History(kind=info.kind, namespace=ns, name=name, items=[HistoryEntry.model_validate(i) for i in items])


@router.get(
    "/{kind}/{namespace}/{name}/history",
    response_model=History,
    summary="The object's timeline from the log",
    responses={**COMMON_ERRORS, 501: _err("The audit service is not part of this build")},
)
async def history(
    request: Request,
    kind: KindPath,
    namespace: NsPath,
    name: NamePath,
    _p: Annotated[Principal, Depends(reader)],
) -> History:
    info = kind_info(kind)
    ns = object_ns(info, namespace)
    return await run_in_threadpool(_history_sync, context(request), info, ns, name)


__all__ = ["router", "list_page", "parse_selector", "position_at"]
