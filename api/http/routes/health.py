"""/healthz (the process answers), /readyz (database reachable, migrated and writable), /metrics."""

from __future__ import annotations

import threading

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from api.http.context import context
from api.http.metrics import render
from api.http.routes.deps import AUTH_ERRORS, authenticate, bearer
from api.http.schemas import Health
from ledger.queries import schema as schema_q

router = APIRouter(tags=["health"])

_heads: tuple[str, ...] | None = None
_heads_lock = threading.Lock()


def migration_heads() -> tuple[str, ...]:
    """Head revisions of the migrations shipped with this code."""
    global _heads
    with _heads_lock:
        if _heads is None:
            from alembic.config import Config
            from alembic.script import ScriptDirectory

            from ledger import db

            cfg = Config(str(db.ROOT / "alembic.ini"))
            cfg.set_main_option("script_location", str(db.ROOT / "alembic"))
            cfg.set_main_option("version_locations", str(db.ROOT / "migrations" / "versions"))
            _heads = tuple(sorted(ScriptDirectory.from_config(cfg).get_heads()))
        return _heads


@router.get("/healthz", response_model=Health, summary="Liveness: the process answers")
async def healthz() -> Health:
    return Health(status="ok")


def _ready(request: Request) -> tuple[bool, dict[str, str]]:
    checks: dict[str, str] = {}
    try:
        db = context(request).db
        with db.transaction() as conn:  # migration_revisions may SET LOCAL ROLE
            schema_q.ping(conn)
            checks["database"] = "ok"
            blockers = schema_q.write_blockers(conn)  # before migration_revisions changes the role
            checks["writes"] = "; ".join(blockers) or "ok"
            current = schema_q.migration_revisions(conn)
    except Exception as exc:
        if checks.get("database") == "ok":
            checks["migrations"] = f"not migrated ({type(exc).__name__})"
        else:
            checks["database"] = f"unreachable ({type(exc).__name__})"
            checks["migrations"] = "unknown"
        return False, checks
    heads = migration_heads()
    if current == heads:
        checks["migrations"] = "ok"
        return not blockers, checks
    checks["migrations"] = f"at {','.join(current) or 'nothing'}, expected {','.join(heads)}"
    return False, checks


@router.get(
    "/readyz",
    response_model=Health,
    summary="Readiness: the database is reachable, migrated, and the ledger can be written",
    responses={503: {"model": Health, "description": "Not ready"}},
)
async def readyz(request: Request) -> JSONResponse:
    ok, checks = await run_in_threadpool(_ready, request)
    body = Health(status="ok" if ok else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)


@router.get(
    "/metrics",
    summary="Prometheus metrics (a reader token unless the server runs with --metrics-public)",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Exposition format"},
        **AUTH_ERRORS,
    },
)
async def metrics(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
) -> Response:
    ctx = context(request)
    if not ctx.metrics_public:  # a reader token unless the server runs with --metrics-public
        authenticate(request, credentials)
    body, content_type = await run_in_threadpool(render, context(request).metrics)
    return Response(body, media_type=content_type)
