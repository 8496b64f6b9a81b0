"""The audit trail: explain, an object's history, and every object as of a log position."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool

from api.http.auth import Principal
from api.http.context import context
from api.http.errors import ApiError
from api.http.routes.deps import AUTH_ERRORS, COMMON_ERRORS, _err, reader
from api.http.routes.paths import PREFIX, KindPath, NamePath, NsPath, object_ns
from api.http.schemas import Explanation, History, HistoryEntry, StateAt
from api.services import explain as explain_service
from api.services import history as history_service
from api.services import log as log_service
from api.services.objects import kind_info
from api.services.state import position_at, state_at
from ledger.resources.kinds import KindInfo

router = APIRouter(prefix=PREFIX, tags=["audit"])


def _explain_sync(ctx: Any, info: KindInfo, ns: str, name: str, at: str | None, nodes: bool) -> Explanation:
    database = ctx.read_db
    pos = position_at(database, at)
    doc = explain_service.explain(database, info.singular, ns, name, at=pos, nodes=nodes)
    return Explanation.model_validate({**doc, "text": explain_service.render_explain(doc)})


@router.get(
    "/{kind}/{namespace}/{name}/explain",
    response_model=Explanation,
    summary="Why a PodGroup or Pod is where it is",
    description="`kind` is podgroups or pods. `at` = a log position or an ISO-8601 time (default: now).",
    responses=COMMON_ERRORS,
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
    items = history_service.history(ctx.read_db, info.singular, ns, name)  # NotFound when the log has none
    return History(
        kind=info.kind, namespace=ns, name=name, items=[HistoryEntry.model_validate(i) for i in items]
    )


@router.get(
    "/{kind}/{namespace}/{name}/history",
    response_model=History,
    summary="The object's timeline from the log",
    responses=COMMON_ERRORS,
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


@router.get(
    "/state",
    response_model=StateAt,
    summary="Every live object as of a log position",
    responses={**AUTH_ERRORS, 422: _err("Invalid request")},
)
async def state(
    request: Request,
    _p: Annotated[Principal, Depends(reader)],
    at: Annotated[int | None, Query(ge=0, le=2**62, description="Log position (default: the head)")] = None,
) -> StateAt:
    ctx = context(request)

    def run() -> StateAt:
        db = ctx.read_db
        pos = log_service.head(db) if at is None else at
        return StateAt.model_validate(state_at(db, pos))

    return await run_in_threadpool(run)


__all__ = ["router"]
