"""Input limits enforced before a route sees the request.

:class:`BodyLimit` is a pure ASGI middleware: a declared ``Content-Length`` over the limit is
answered 413 at once, without reading the body; a chunked (or lying) body is counted while it is
read, and the read fails with 413 as soon as the limit is passed, so at most ``limit`` bytes are
ever held, whatever the client sends. Query parameters holding NUL or another control character
are answered 422 naming the parameter (like a path parameter failing its pattern) (PostgreSQL text cannot hold NUL, and no podledger name,
namespace or cursor contains a control character).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import parse_qsl

from api.http.errors import ApiError

# kube-apiserver's default --max-request-body-bytes (3 MiB); PODLEDGER_MAX_BODY or
# `podledger serve --max-body` change it (bytes, or with a Ki/Mi/Gi suffix)
MAX_BODY = 3 * 2**20
ENV_VAR = "PODLEDGER_MAX_BODY"
_CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F))
_SIZE = re.compile(r"^\s*(\d+)\s*(|k|ki|kib|m|mi|mib|g|gi|gib)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def parse_size(text: str) -> int:
    """``"3Mi"``, ``"3MiB"``, ``"512Ki"`` or ``"3145728"`` → bytes (binary units). ValueError otherwise."""
    m = _SIZE.match(text)
    if m is None or int(m.group(1)) < 1:
        raise ValueError(f"{text!r} is not a size (a positive number of bytes, or with Ki, Mi or Gi)")
    return int(m.group(1)) * _UNITS[m.group(2)[:1].lower()]


def max_body_from_env() -> int:
    """The body limit: ``PODLEDGER_MAX_BODY`` when set, else 3 MiB."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return MAX_BODY
    try:
        return parse_size(raw)
    except ValueError as exc:
        raise ValueError(f"{ENV_VAR}: {exc}") from None


def human_size(limit: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def has_control(text: str) -> bool:
    return any(ch in _CONTROL for ch in text)


def too_large(limit: int) -> ApiError:
    return ApiError(413, "too_large", f"the request body is over {human_size(limit)}")


async def _answer(send: Any, status: int, code: str, message: str, field: str | None = None) -> None:
    details = [{"field": field, "message": message}] if field else []
    body = json.dumps({"error": code, "message": message, "details": details}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """One limit for every route of the app (podledger's JSON API, the Kubernetes-compatible
    API, the dashboard's forms): like kube-apiserver's ``--max-request-body-bytes``."""

    def __init__(self, app: Any, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
            if has_control(key) or has_control(value):
                name = key if not has_control(key) else "(a parameter name)"
                message = f"query parameter {name!r} must not contain NUL or control characters"
                await _answer(send, 422, "invalid", message, f"query.{name}")
                return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _answer(send, 400, "bad_request", "Content-Length is not a number")
                    return
                if declared > self.limit:
                    await _answer(send, 413, "too_large", too_large(self.limit).message)
                    return
        seen = 0
        limit = self.limit

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise too_large(limit)
            return message

        await self.app(scope, counted, send)


__all__ = [
    "ENV_VAR",
    "MAX_BODY",
    "BodyLimit",
    "has_control",
    "human_size",
    "max_body_from_env",
    "parse_size",
    "too_large",
]
