"""Shared route dependencies: who is calling (bearer token → role) and error responses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.http.auth import Principal
from api.http.context import context
from api.http.errors import ApiError
from api.http.schemas import Error

bearer = HTTPBearer(auto_error=False, scheme_name="bearer", description="A token from PODLEDGER_TOKENS")

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="podledger"'}


def _err(description: str) -> dict[str, Any]:
    return {"model": Error, "description": description}


AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _err("No valid bearer token"),
    403: _err("The token's role may not do this"),
    429: _err(
        "Too many failed token attempts from this client (see Retry-After); tokens that already worked from it are still accepted"
    ),
}
COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    **AUTH_ERRORS,
    400: _err("A malformed parameter or header"),
    404: _err("No such kind or object"),
    422: _err("Invalid request"),
}


def authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    outcome = context(request).authenticate(request, credentials.credentials if credentials else None)
    if outcome.principal is not None:
        return outcome.principal
    if outcome.status == 429:
        raise ApiError(
            429, "too_many_requests", outcome.reason, headers={"Retry-After": str(outcome.retry_after)}
        )
    raise ApiError(401, "unauthorized", outcome.reason, headers=_CHALLENGE)


def require(role: str) -> Callable[..., Principal]:
    def dependency(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> Principal:
        principal = authenticate(request, credentials)
        if not principal.allows(role):
            raise ApiError(
                403, "forbidden", f"this needs the {role} role; the token has the {principal.role} role"
            )
        request.state.actor = principal.actor
        return principal

    dependency.__name__ = f"require_{role}"
    return dependency


reader = require("reader")
writer = require("writer")
admin = require("admin")
