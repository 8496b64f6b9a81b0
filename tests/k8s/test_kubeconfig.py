"""``podledger kubeconfig``: a kubeconfig with a token of the asked role, and clear refusals."""

from __future__ import annotations

import base64
import subprocess

import yaml

from tests.k8s.conftest import PODLEDGER, TOKENS


def _run(*args: str, tokens: str | None = TOKENS) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != "PODLEDGER_TOKENS"}
    if tokens is not None:
        env["PODLEDGER_TOKENS"] = tokens
    return subprocess.run(
        [PODLEDGER, "kubeconfig", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_kubeconfig_carries_the_roles_token_and_the_servers_certificate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cert = tmp_path / "cert.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    res = _run("--role", "reader", "--server", "https://127.0.0.1:9443", "--tls-cert-file", str(cert))
    assert res.returncode == 0, res.stderr
    doc = yaml.safe_load(res.stdout)
    assert doc["current-context"] == "podledger-reader"
    assert doc["users"][0]["user"]["token"] == "reader-token-k8s-0123456789"
    cluster = doc["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:9443"
    assert base64.b64decode(cluster["certificate-authority-data"]).decode() == cert.read_text()
    writer = yaml.safe_load(_run("--role", "writer", "--insecure-skip-tls-verify").stdout)
    assert writer["users"][0]["user"]["token"] == "writer-token-k8s-0123456789"
    assert writer["clusters"][0]["cluster"]["insecure-skip-tls-verify"] is True


def test_kubeconfig_refuses_an_unknown_role_or_a_missing_token() -> None:
    res = _run("--role", "root")
    assert res.returncode == 1 and "--role must be reader or writer" in res.stderr
    res = _run("--role", "writer", tokens="reader=reader-token-k8s-0123456789")
    assert res.returncode == 1 and "holds no writer token" in res.stderr
    assert "reader-token" not in res.stderr + res.stdout
