"""A shared ASGI middleware in front of the Kubernetes-compatible API's writes: the request body
is read (within the body limit, BodyLimit being outside this one) and checked by
``ledger.resources.bounded.inspect_body`` before any handler decodes it:

- a YAML alias bomb (``document contains excessive aliasing``) or a body that cannot be read is
  answered 400 ``BadRequest`` at once (the check is linear in the text; before it, a 430-byte
  bomb cost a handler thread about 35 minutes);
- a key given twice is refused as upstream refuses it under ``fieldValidation=Strict`` (what
  kubectl sends by default): 400 ``... strict decoding error: duplicate field "spec.x"``. Under
  ``Warn``/``Ignore`` the body goes on to the handlers, which own field validation.

The body is then handed on unchanged, so handlers read exactly what the client sent.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from anyio import to_thread

from api.http.errors import ApiError
from ledger.resources.bounded import BodyError, inspect_body

_WRITES = frozenset({"POST", "PUT", "PATCH"})
_PREFIXES = ("/api/", "/apis/")


def _status(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    ).encode()


async def _answer(send: Any, code: int, reason: str, message: str) -> None:
    body = _status(code, reason, message)
    await send(
        {
            "type": "http.response.start",
            "status": code,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def problem(body: bytes, content_type: str, strict: bool) -> str | None:
    """The message to refuse ``body`` with (400), or None to let it through."""
    kind = content_type.lower()
    if not body.strip() or ("json" not in kind and "yaml" not in kind):
        return None  # nothing to decode, or a media type the handlers answer themselves (415)
    try:
        value, dups = inspect_body(body, content_type)
    except BodyError as exc:
        if "yaml" in content_type.lower():
            return f"error converting YAML to JSON: yaml: {exc.problem}"
        return f"the request body could not be decoded: {exc.problem}"
    if dups and strict:
        fields = ", ".join(f'duplicate field "{p}"' for p in dups)
        if (
            isinstance(value, dict)
            and isinstance(value.get("kind"), str)
            and isinstance(value.get("apiVersion"), str)
        ):
            kind, version = value["kind"], value["apiVersion"].rsplit("/", 1)[-1]
            return f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: {fields}'
        return f"strict decoding error: {fields}"
    return None


class KubeBodyGuard:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") not in _WRITES
            or not scope.get("path", "").startswith(_PREFIXES)
        ):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        try:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    break
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
        except ApiError as exc:  # BodyLimit: over the limit while reading
            await _answer(send, exc.status, "RequestEntityTooLarge", exc.message)
            return
        body = b"".join(chunks)
        headers = {k.lower(): v for k, v in scope.get("headers", ())}
        content_type = headers.get(b"content-type", b"application/json").decode("latin-1")
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        strict = query.get("fieldValidation") == "Strict"
        refused = await to_thread.run_sync(problem, body, content_type, strict)
        if refused is not None:
            await _answer(send, 400, "BadRequest", refused)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


__all__ = ["KubeBodyGuard", "problem"]
