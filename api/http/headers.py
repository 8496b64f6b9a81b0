"""Security headers on every response (pure ASGI middleware).

- ``Content-Security-Policy``: the dashboard loads only its own script, style and images (charts
  are inline SVG, no inline script or style), is never framed, posts forms only to itself;
  Swagger UI (``/docs``) needs its one inline bootstrap script, so it alone allows inline script.
- ``X-Frame-Options: DENY`` (older browsers' frame-ancestors), ``X-Content-Type-Options:
  nosniff``, ``Referrer-Policy: same-origin``.
- ``Strict-Transport-Security`` when the request came over https (TLS on the server, or a
  trusted proxy's ``X-Forwarded-Proto: https``, see ``PODLEDGER_TRUSTED_PROXIES``).
A header a route set itself is kept.
"""

from __future__ import annotations

from typing import Any

from api.http.auth import request_scheme

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DOCS_CSP = CSP.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'")
HSTS = "max-age=31536000"
_STATIC = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        csp = DOCS_CSP if path == "/docs" else CSP
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        peer = scope.get("client")
        proxies = scope["app"].state.ctx.proxies
        https = (
            request_scheme(scope.get("scheme", "http"), peer[0] if peer else None, headers, proxies)
            == "https"
        )

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _STATIC if k not in present]
                if b"content-security-policy" not in present:
                    extra.append((b"content-security-policy", csp.encode()))
                if https and b"strict-transport-security" not in present:
                    extra.append((b"strict-transport-security", HSTS.encode()))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


__all__ = ["CSP", "SecurityHeaders"]
