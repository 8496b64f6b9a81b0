"""Errors answered as JSON ``{"error", "message", "details"}``, and the handlers that map
service errors, HTTP errors, validation errors and crashes to that shape."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.services.errors import Rejected, ServiceError
from ledger.errors import EventValidationError

log = logging.getLogger("podledger.api")

# the status code of each service error code
SERVICE_STATUS = {"bad_request": 400, "not_found": 404, "invalid": 422, "rejected": 422, "conflict": 409}


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


def error_body(
    code: str, message: str, details: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": message, "details": details or []}
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


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
        429: "too_many_requests",
        503: "unavailable",
    }.get(status, "error")


RETRY_AFTER = 5  # seconds a client should wait before retrying while the database is down


def database_down(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) means the database cannot be reached right now: a
    broken or refused connection (``psycopg.OperationalError``, ``InterfaceError``), or no
    pooled connection free in time (``psycopg_pool.PoolTimeout``)."""
    import psycopg
    from psycopg_pool import PoolTimeout

    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (PoolTimeout, psycopg.OperationalError, psycopg.InterfaceError, ConnectionError)):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _unstorable(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.DataError) and "NUL" in str(exc)


def install_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` in the one JSON shape."""

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            error_body(exc.code, exc.message, exc.details, position=exc.position),
            status_code=exc.status,
            headers=exc.headers,
        )

    @app.exception_handler(ServiceError)
    async def service_error(_request: Request, exc: ServiceError) -> JSONResponse:
        position = exc.position if isinstance(exc, Rejected) else None
        return JSONResponse(
            error_body(exc.code, exc.message, exc.details, position=position),
            status_code=SERVICE_STATUS.get(exc.code, 400),
        )

    @app.exception_handler(EventValidationError)
    async def event_invalid(_request: Request, exc: EventValidationError) -> JSONResponse:
        # a payload the ledger refuses (over 1 MiB, not JSON-able): the request's fault, nothing appended
        return JSONResponse(error_body("invalid", str(exc)), status_code=422)

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
        if database_down(exc):
            log.warning(
                "database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__
            )
            return JSONResponse(
                error_body("unavailable", "the database is unavailable; retry shortly"),
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER)},
            )
        if _unstorable(exc):  # e.g. a NUL byte that slipped past the checks of a route
            return JSONResponse(
                error_body("bad_request", "the request holds a value the database cannot store or compare"),
                status_code=400,
            )
        # Logged without headers: a token must never reach the log.
        log.error(
            "unhandled error on %s %s (request %s)",
            request.method,
            request.url.path,
            getattr(request.state, "request_id", "-"),
            exc_info=exc,
        )
        return JSONResponse(error_body("internal", "internal error; see the server log"), status_code=500)


__all__ = ["RETRY_AFTER", "ApiError", "SERVICE_STATUS", "database_down", "error_body", "install_handlers"]
