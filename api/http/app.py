"""The FastAPI application: podledger's JSON API under ``/podledger/v1``, health, metrics and
the dashboard.

``create_app(db, tokens)`` builds one app. ``db=None`` uses the configured ledger
(``PODLEDGER_DATABASE_URL`` or the embedded server), opened on first use; ``tokens=None`` reads
``PODLEDGER_TOKENS``. With no tokens at all the app refuses every request unless
``insecure_local=True`` (``podledger serve --insecure-local``, bound to 127.0.0.1), where every
caller is the local admin.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from api.http.auth import PROXIES_ENV, AuthThrottle, TokenTable, parse_tokens, tokens_from_env
from api.http.context import AppContext
from api.http.errors import install_handlers
from api.http.headers import SecurityHeaders
from api.http.limits import BodyLimit, max_body_from_env
from api.http.routes import admin, audit, checkpoint, dashboard, events, health, jobs, objects
from api.http.routes.dashboard import DASHBOARD_DIR
from api.http.routes.paths import PREFIX
from api.k8s import routes as k8s_routes
from ledger import replica

if TYPE_CHECKING:
    from ledger.database import Database

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

DESCRIPTION = f"""
podledger's HTTP API: the same operations as the CLI over one PostgreSQL event log. Its own
routes live under `{PREFIX}/` (the Kubernetes-compatible paths `/api`, `/apis` are not these).

**Auth**: `Authorization: Bearer TOKEN`. Tokens come from `PODLEDGER_TOKENS`
(`reader=…,writer=…,admin=…`). Readers may GET; writers may also apply, delete and start
what-if jobs; admins may do everything, including the operations under `{PREFIX}/admin/`. No
token → 401, too weak a role → 403; after 10 wrong tokens from one client within a minute →
429 with `Retry-After` for any token that has not already worked from that client (the right
token of someone else at the same address is never refused for another's failures). Tokens have at least 16 characters. `/metrics` needs a token too unless
the server runs with `--metrics-public`. The actor of every write is recorded in the event's
`meta.actor`.

**Writes**: `Idempotency-Key` makes a retried apply/delete append nothing new (the original
events are returned with `replayed: true`). `If-Match: "<version>"` makes a single-object
write conditional on the object's stream version (the `ETag` of its GET): 409 on mismatch.

**Errors** all have the shape `{{"error", "message", "details": [{{kind, namespace, name, field,
message, document}}]}}`; invalid manifests and admission refusals are 422 with field paths.

Cluster-scoped kinds (nodes, priorityclasses, schedulerconfigs) use `-` as the namespace
segment, e.g. `{PREFIX}/nodes/-/node-1`.
"""


class RequestContext:
    """Gives every request an id (``X-Request-ID``, echoed or made up), counts it in the
    metrics by method, route template and status, and tracks its WAL positions
    (``ledger.replica``): ``X-Podledger-Min-LSN`` is the position its reads must see; the
    response says the position its writes committed at (``X-Podledger-Commit-LSN``) and which
    server answered its reads as of which position (``X-Podledger-Served-By``,
    ``X-Podledger-Read-LSN``)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = ""
        min_lsn: str | None = None
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                incoming = value.decode("latin-1")
            elif name == b"x-podledger-min-lsn":
                min_lsn = value.decode("latin-1").strip() or None
        rid = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        if min_lsn is not None:
            try:
                replica.lsn_int(min_lsn)
            except ValueError as exc:
                await _bad_request(send, rid, f"header X-Podledger-Min-LSN: {exc}")
                return
        scope.setdefault("state", {})["request_id"] = rid
        status = 500
        t0 = time.perf_counter()

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
                headers.append((b"x-request-id", rid.encode()))
                if pos.commit_lsn:
                    headers.append((b"x-podledger-commit-lsn", pos.commit_lsn.encode()))
                if pos.read_lsn and pos.served_by:
                    headers.append((b"x-podledger-served-by", pos.served_by.encode()))
                    headers.append((b"x-podledger-read-lsn", pos.read_lsn.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            with replica.tracking(min_lsn) as pos:
                await self.app(scope, receive, send_with_id)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            try:
                scope["app"].state.ctx.metrics.observe_request(
                    scope["method"], path, status, time.perf_counter() - t0
                )
            except Exception:  # metrics never break a request (e.g. the DB is down)
                pass


async def _bad_request(send: Any, rid: str, message: str) -> None:
    body = json.dumps({"error": "BadRequest", "message": message, "details": []}).encode()
    headers = [(b"content-type", b"application/json"), (b"x-request-id", rid.encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def create_app(
    db: Database | None = None,
    tokens: TokenTable | str | Mapping[str, Any] | None = None,
    *,
    insecure_local: bool = False,
    metrics_public: bool = False,
    throttle: AuthThrottle | None = None,
    max_body: int | None = None,
    trusted_proxies: str | None = None,
) -> FastAPI:
    """``max_body``: the request body limit in bytes (default: ``PODLEDGER_MAX_BODY`` or 3 MiB).
    ``trusted_proxies``: addresses/networks whose ``X-Forwarded-For``/``-Proto`` are believed
    (default: ``PODLEDGER_TRUSTED_PROXIES``, else none)."""
    limit = max_body if max_body is not None else max_body_from_env()
    table = (
        tokens
        if isinstance(tokens, TokenTable)
        else (parse_tokens(tokens) if tokens is not None else tokens_from_env())
    )
    app = FastAPI(
        title="podledger",
        version="1.0.0",
        description=DESCRIPTION,
        docs_url=None,  # served below from the packaged Swagger UI, not from a CDN
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.ctx = AppContext(
        db,
        table,
        insecure_local,
        metrics_public=metrics_public,
        throttle=throttle,
        max_body=limit,
        trusted_proxies=trusted_proxies if trusted_proxies is not None else os.environ.get(PROXIES_ENV),
    )

    install_handlers(app)
    app.include_router(health.router)
    app.include_router(events.router)  # before objects: {PREFIX}/events shadows /{kind}
    app.include_router(audit.router)  # before objects: {PREFIX}/state shadows /{kind}
    app.include_router(jobs.router)
    app.include_router(checkpoint.router)  # anchored history; before objects ({PREFIX}/{kind})
    app.include_router(admin.router)  # before objects ({PREFIX}/{kind})
    app.include_router(objects.router)
    app.include_router(dashboard.router)
    app.include_router(k8s_routes.router)  # the Kubernetes-compatible API (api/k8s)
    # Pure ASGI middlewares (not BaseHTTPMiddleware): an error raised while a route reads the body
    # (BodyLimit's 413) reaches the exception handlers in the route's own task.
    app.add_middleware(SecurityHeaders)  # CSP, X-Frame-Options, nosniff, HSTS over https
    app.add_middleware(RequestContext)
    app.add_middleware(BodyLimit, limit=limit)  # outermost: limits hold before anything reads the request
    app.mount("/static", StaticFiles(directory=str(DASHBOARD_DIR / "static")), name="static")
    install_docs(app)

    return app


SWAGGER_STATIC = "/docs/static"
# an inline SVG: the default favicon is fetched from fastapi.tiangolo.com
_FAVICON = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3C/svg%3E"


def install_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from the ``swagger-ui-bundle-v2`` package's files (Swagger UI 5, which
    renders OpenAPI 3.1), so the page works on a machine without internet access."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from swagger_ui_bundle import swagger_ui_path

    app.mount(SWAGGER_STATIC, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{SWAGGER_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_STATIC}/swagger-ui.css",
            swagger_favicon_url=_FAVICON,
        )


__all__ = ["create_app", "install_docs"]
