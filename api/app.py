"""The FastAPI application: JSON API under ``/api/v1``, health, metrics and the dashboard.

``create_app(engine, tokens)`` builds one app. ``engine=None`` uses the configured ledger
(``PODLEDGER_DATABASE_URL`` or the embedded server), opened on first use; ``tokens=None`` reads
``PODLEDGER_TOKENS``. With no tokens at all the app refuses every request unless
``insecure_local=True`` (``podledger serve --insecure-local``, bound to 127.0.0.1), where every
caller is the local admin.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.engine import Engine
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.auth import TokenTable, parse_tokens, tokens_from_env
from api.metrics import Metrics

log = logging.getLogger("podledger.api")
DASHBOARD_DIR = Path(__file__).resolve().parent / "dashboard"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

DESCRIPTION = """
podledger's HTTP API: the same operations as the CLI over one PostgreSQL event log.

**Auth**: `Authorization: Bearer TOKEN`. Tokens come from `PODLEDGER_TOKENS`
(`reader=…,writer=…,admin=…`). Readers may GET; writers may also apply, delete and start
what-if jobs; admins may do everything. No token → 401, too weak a role → 403. The actor of
every write is recorded in the event's `meta.actor`.

**Writes**: `Idempotency-Key` makes a retried apply/delete append nothing new (the original
events are returned with `replayed: true`). `If-Match: "<version>"` makes a single-object
write conditional on the object's stream version (the `ETag` of its GET): 409 on mismatch.

**Errors** all have the shape `{"error", "message", "details": [{kind, namespace, name, field,
message, document}]}`; invalid manifests and admission refusals are 422 with field paths.

Cluster-scoped kinds (nodes, priorityclasses, schedulerconfigs) use `-` as the namespace
segment, e.g. `/api/v1/nodes/-/node-1`.
"""


class ApiError(Exception):
    """An error answered as JSON ``{"error", "message", "details"}``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: list[dict[str, Any]] | None = None,
        headers: Mapping[str, str] | None = None,
        position: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.headers = dict(headers or {})
        self.position = position


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": message, "details": details or []}
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


class AppContext:
    """What the routes share: the engine (opened lazily), tokens, metrics, jobs."""

    def __init__(self, engine: Engine | None, tokens: TokenTable, insecure_local: bool) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self.tokens = tokens
        self.insecure_local = insecure_local
        self._metrics: Metrics | None = None
        from api.routes.jobs import JobStore

        self.jobs = JobStore()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    from ledger import db

                    self._engine = db.get_engine()
        return self._engine

    @property
    def metrics(self) -> Metrics:
        if self._metrics is None:
            with self._lock:
                if self._metrics is None:
                    self._metrics = Metrics(lambda: self.engine)
        return self._metrics


def context(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


def _status_code_text(status: int) -> str:
    return {
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        406: "not_acceptable",
        409: "conflict",
        413: "too_large",
        415: "unsupported_media_type",
        422: "invalid",
        501: "not_implemented",
        503: "unavailable",
    }.get(status, "error")


def create_app(
    engine: Engine | None = None,
    tokens: TokenTable | str | Mapping[str, Any] | None = None,
    *,
    insecure_local: bool = False,
) -> FastAPI:
    from api.routes import checkpoint, dashboard, events, health, jobs, objects

    table = tokens if isinstance(tokens, TokenTable) else (parse_tokens(tokens) if tokens is not None else tokens_from_env())
    app = FastAPI(
        title="podledger",
        version="1.0.0",
        description=DESCRIPTION,
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.ctx = AppContext(engine, table, insecure_local)

    @app.middleware("http")
    async def request_context(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        incoming = request.headers.get("x-request-id", "")
        rid = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        request.state.request_id = rid
        t0 = time.perf_counter()
        response = await call_next(request)
        response.headers["X-Request-ID"] = rid
        route = request.scope.get("route")
        path = getattr(route, "path", None) or "unmatched"
        try:
            context(request).metrics.observe_request(
                request.method, path, response.status_code, time.perf_counter() - t0
            )
        except Exception:  # metrics never break a request (e.g. the DB is down)
            pass
        return response

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            error_body(exc.code, exc.message, exc.details, position=exc.position),
            status_code=exc.status,
            headers=exc.headers,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            error_body(_status_code_text(exc.status_code), str(exc.detail)),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = []
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ())]
            details.append({"field": ".".join(loc), "message": str(e.get("msg", "invalid"))})
        return JSONResponse(error_body("invalid", "the request is invalid", details), status_code=422)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        # Logged without headers: a token must never reach the log.
        log.error(
            "unhandled error on %s %s (request %s)",
            request.method,
            request.url.path,
            getattr(request.state, "request_id", "-"),
            exc_info=exc,
        )
        return JSONResponse(error_body("internal", "internal error; see the server log"), status_code=500)

    app.include_router(health.router)
    app.include_router(checkpoint.router)  # anchored history; before objects (/{kind})
    app.include_router(events.router)  # before objects: /api/v1/events and /state shadow /{kind}
    app.include_router(jobs.router)
    app.include_router(objects.router)
    app.include_router(dashboard.router)
    app.mount("/static", StaticFiles(directory=str(DASHBOARD_DIR / "static")), name="static")

    return app


__all__ = ["ApiError", "AppContext", "context", "create_app", "error_body"]
