"""In-cluster configuration: ``attach`` running in a Pod, as its service account.

What a Pod is given (upstream's rest.InClusterConfig reads the same): ``KUBERNETES_SERVICE_HOST``
and ``KUBERNETES_SERVICE_PORT``, and in ``/var/run/secrets/kubernetes.io/serviceaccount/`` the
projected ``token`` and the cluster's ``ca.crt``. The kubelet rotates the projected token (it
expires, an hour by default); the token is re-read whenever its file changes (checked before
each request: one ``stat``), so a rotated token is used from the next request on.

``PODLEDGER_SERVICEACCOUNT_DIR`` moves the directory (tests, or a token mounted elsewhere).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class InClusterError(Exception):
    """Not in a Pod (no service host), or the service account's files are missing."""


class TokenFile:
    """The bearer token of a file, re-read when the file changes (mtime, size or inode)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self.token = ""
        self.reads = 0

    def current(self) -> str:
        try:
            st = self.path.stat()
        except OSError:
            return self.token  # a rotation in progress (the kubelet swaps a symlink): keep the last
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            if stamp != self._stamp:
                try:
                    self.token = self.path.read_text().strip()
                except OSError:
                    return self.token
                self._stamp = stamp
                self.reads += 1
            return self.token


def service_dir() -> Path:
    return Path(os.environ.get("PODLEDGER_SERVICEACCOUNT_DIR") or SERVICEACCOUNT_DIR)


def available() -> bool:
    """Whether this process looks like it runs in a Pod (the API server's service host is set)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def load_client() -> tuple[Any, TokenFile]:
    """An ``ApiClient`` for the cluster this Pod runs in, and its token file."""
    from kubernetes import client

    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise InClusterError(
            "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
            "(use --kubeconfig outside a Pod)"
        )
    d = service_dir()
    token, ca = d / "token", d / "ca.crt"
    for f in (token, ca):
        if not f.is_file():
            raise InClusterError(
                f"the service account file {f} is missing (automountServiceAccountToken off?)"
            )
    tokens = TokenFile(token)
    if not tokens.current():
        raise InClusterError(f"the service account token {token} is empty")
    cfg = client.Configuration()
    cfg.host = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    cfg.ssl_ca_cert = str(ca)
    cfg.api_key = {"authorization": tokens.current()}
    cfg.api_key_prefix = {"authorization": "Bearer"}

    def refresh(c: Any) -> None:  # called by the client before every request's auth header
        c.api_key = {"authorization": tokens.current()}

    cfg.refresh_api_key_hook = refresh  # type: ignore[assignment]
    return client.ApiClient(cfg), tokens
