"""``podledger kubeconfig --role reader|writer``: a kubeconfig for kubectl and client libraries."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from api.cli.console import UserError, app


def token_for(role: str, spec: str | None) -> str:
    """The first token of ``role`` in a ``PODLEDGER_TOKENS`` value."""
    from api.http.auth import ENV_VAR, parse_tokens

    table = parse_tokens(spec or None)
    for secret, principal in table.entries:
        if principal.role == role:
            return secret.decode("utf-8", "surrogateescape")
    raise UserError(f"{ENV_VAR} holds no {role} token: set the same PODLEDGER_TOKENS as the server's")


def kubeconfig(server: str, token: str, role: str, ca_pem: bytes | None, insecure: bool) -> dict[str, object]:
    cluster: dict[str, object] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    elif insecure:
        cluster["insecure-skip-tls-verify"] = True
    name = f"podledger-{role}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "podledger", "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [
            {"name": name, "context": {"cluster": "podledger", "user": name, "namespace": "default"}}
        ],
        "current-context": name,
        "preferences": {},
    }


@app.command("kubeconfig")
def kubeconfig_cmd(
    role: Annotated[
        str, typer.Option(help="reader | writer: whose token the kubeconfig carries.")
    ] = "reader",
    server: Annotated[
        str, typer.Option(help="URL of the running `podledger serve` (kubectl sends tokens over https only).")
    ] = "https://127.0.0.1:8080",
    tls_cert_file: Annotated[
        Path | None,
        typer.Option(help="The server's certificate (--tls-cert-file of serve), trusted as the CA."),
    ] = None,
    insecure_skip_tls_verify: Annotated[
        bool, typer.Option(help="Do not verify the server's certificate (when no --tls-cert-file is given).")
    ] = False,
) -> None:
    """Print a kubeconfig for the running server, with a token of ROLE from PODLEDGER_TOKENS."""
    import yaml

    from api.http.auth import ENV_VAR

    if role not in ("reader", "writer", "admin"):
        raise UserError(f"--role must be reader or writer, not {role!r}")
    token = token_for(role, os.environ.get(ENV_VAR))
    ca = tls_cert_file.read_bytes() if tls_cert_file is not None else None
    doc = kubeconfig(server, token, role, ca, insecure_skip_tls_verify)
    sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
