"""``podledger serve``: the HTTP API and dashboard (uvicorn)."""

from __future__ import annotations

import ipaddress
import os
from typing import Annotated

import typer

from api.cli.console import UserError, app, err


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    insecure_local: Annotated[
        bool,
        typer.Option(
            "--insecure-local",
            help="Serve without tokens (everyone is admin), bound to 127.0.0.1 only.",
        ),
    ] = False,
    metrics_public: Annotated[
        bool,
        typer.Option("--metrics-public", help="Serve /metrics without a token (default: a reader token)."),
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    tls_cert_file: Annotated[
        str | None, typer.Option(help="Serve https with this certificate (PEM).")
    ] = None,
    tls_private_key_file: Annotated[
        str | None, typer.Option(help="The certificate's private key (PEM).")
    ] = None,
    trusted_proxies: Annotated[
        str | None,
        typer.Option(
            "--trusted-proxies",
            help="Comma-separated addresses/networks of reverse proxies whose X-Forwarded-For and "
            "X-Forwarded-Proto are believed (default PODLEDGER_TRUSTED_PROXIES, else none).",
        ),
    ] = None,
    max_body: Annotated[
        str | None,
        typer.Option(
            "--max-body",
            help="Request body limit (bytes, or with Ki/Mi/Gi), answered 413 past it; "
            "default PODLEDGER_MAX_BODY or 3Mi, like kube-apiserver.",
        ),
    ] = None,
) -> None:
    """Serve the HTTP API (/podledger/v1, /docs, /metrics) and the dashboard (/).

    Tokens come from PODLEDGER_TOKENS="reader=TOKEN,writer=TOKEN,admin=TOKEN"; without them the
    server refuses to start unless --insecure-local is given.
    """
    import uvicorn

    from api.http.app import create_app
    from api.http.auth import TokenConfigError, tokens_from_env
    from api.http.limits import max_body_from_env, parse_size
    from ledger import db

    try:
        limit = parse_size(max_body) if max_body is not None else max_body_from_env()
    except ValueError as exc:
        raise UserError(f"--max-body: {exc}" if max_body is not None else str(exc)) from None

    try:
        tokens = tokens_from_env()
    except TokenConfigError as exc:
        raise UserError(str(exc)) from None
    if not tokens:
        if not insecure_local:
            raise UserError(
                "refusing to start: no tokens configured. Set PODLEDGER_TOKENS="
                '"reader=TOKEN,writer=TOKEN,admin=TOKEN", or pass --insecure-local to serve without '
                "authentication on 127.0.0.1 only"
            )
        if not _is_loopback(host):
            raise UserError(f"--insecure-local binds to 127.0.0.1 only; refusing --host {host}")
        host = "127.0.0.1"
        err.warning("--insecure-local: no authentication, every caller is admin")
    from api.http.auth import parse_proxies

    try:
        parse_proxies(
            trusted_proxies if trusted_proxies is not None else os.environ.get("PODLEDGER_TRUSTED_PROXIES")
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    database = db.get_database()  # migrates on start; fails here, not on the first request
    application = create_app(
        database,
        tokens,
        insecure_local=insecure_local and not tokens,
        metrics_public=metrics_public,
        max_body=limit,
        trusted_proxies=trusted_proxies,
    )
    if (tls_cert_file is None) != (tls_private_key_file is None):
        raise UserError("--tls-cert-file and --tls-private-key-file go together")
    scheme = "https" if tls_cert_file else "http"
    err.print(f"podledger API on {scheme}://{host}:{port}/ (docs at /docs, {len(tokens.entries)} token(s))")
    # uvicorn's access log shows method, path and status: never headers, so never a token.
    uvicorn.run(
        application,
        host=host,
        port=port,
        log_level=log_level,
        proxy_headers=False,
        ssl_certfile=tls_cert_file,
        ssl_keyfile=tls_private_key_file,
    )
