"""A small, scriptable fake Kubernetes API server for the tests of ``attach`` against a broken or
hostile cluster (issue 37): every watched kind lists empty and watches with bookmarks, except
Pods, whose lists and watch streams the test scripts (endless ``continue`` pages, raw watch
lines, endless lines, oversize objects, 410s).

Plain HTTP on 127.0.0.1 (the kubeconfig points there with a bearer token); one thread per
connection; everything it was asked is kept in ``requests``.
"""

from __future__ import annotations

import json
import queue
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

Chunks = Iterator[bytes]


def pod(name: str, rv: int | str, ns: str = "hostile", **extra: Any) -> dict[str, Any]:
    """A minimal valid Pod as the API server returns it."""
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": str(rv)}
    meta.update(extra.pop("metadata", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
            **extra,
        },
    }


def line(typ: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": typ, "object": obj}).encode() + b"\n"


class Hostile:
    def __init__(self, tls: tuple[Path, Path] | None = None, tokens: set[str] | None = None) -> None:
        """``tls``: (certificate, key) to serve HTTPS; ``tokens``: the bearer tokens accepted
        (None: any), others answered 401 as kube-apiserver does."""
        self.tls = tls
        self.tokens = tokens
        self.auth: list[str] = []  # the bearer token of every request, in order
        self._lock = threading.Lock()
        # Pods: the list's items, and how many list calls answer with endless pages first
        self.pods: list[dict[str, Any]] = []
        self.list_rv = "10"
        self.endless_lists = 0
        # Pod watch connections take their script from here: each item is an iterator of raw
        # chunks written in order; None closes the connection
        self.watch_scripts: queue.Queue[Chunks | None] = queue.Queue()
        # only the newest pod watch takes scripts: an older one (of an attach that was stopped,
        # whose connection the server has not noticed closed yet) ends instead of taking them
        self.pod_watch_gen = 0
        self.requests: list[tuple[str, str]] = []
        self.pod_lists = 0
        self.missing: set[str] = set()  # path prefixes answered 404 (a version not served)
        self.sent = 0  # bytes written on watch streams
        self.stopping = threading.Event()
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hostile.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = int(self.httpd.server_address[1])
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def kubeconfig(self, path: Path) -> Path:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "hostile", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "hostile", "context": {"cluster": "hostile", "user": "u"}}],
            "current-context": "hostile",
        }
        path.write_text(json.dumps(cfg))
        return path

    def close(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- answers ------------------------------------------------------------------------------
    def handle(self, h: BaseHTTPRequestHandler) -> None:
        u = urlparse(h.path)
        qs = {k: v[-1] for k, v in parse_qs(u.query).items()}
        token = (h.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        with self._lock:  # the two lists stay aligned
            self.requests.append((u.path, u.query))
            self.auth.append(token)
        if self.tokens is not None and token not in self.tokens:
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "Unauthorized"}
            self._json(h, {**status, "reason": "Unauthorized", "code": 401}, 401)
            return
        if any(u.path.startswith(m) for m in self.missing):
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "not found"}
            self._json(h, {**status, "reason": "NotFound", "code": 404}, 404)
            return
        is_pods = u.path.rstrip("/").endswith("/pods")
        if qs.get("watch") == "true":
            if is_pods:
                self.pod_watch_gen += 1
            self._stream(h, self._watch_pods(self.pod_watch_gen) if is_pods else self._bookmarks())
        elif is_pods:
            self.pod_lists += 1 if not qs.get("continue") else 0
            self._json(h, self._pod_page(qs))
        else:
            self._json(
                h, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}
            )

    def _pod_page(self, qs: dict[str, str]) -> dict[str, Any]:
        if self.pod_lists <= self.endless_lists:
            n = int(qs.get("continue", "0") or 0)
            # always more: a page of the same objects and a continue token that never ends
            return {"metadata": {"resourceVersion": self.list_rv, "continue": str(n + 1)}, "items": self.pods}
        return {"metadata": {"resourceVersion": self.list_rv}, "items": self.pods}

    def _bookmarks(self) -> Chunks:
        while not self.stopping.wait(0.5):
            yield line("BOOKMARK", {"kind": "Status", "metadata": {"resourceVersion": "1"}})

    def _watch_pods(self, gen: int) -> Chunks:
        while not self.stopping.is_set():
            if gen != self.pod_watch_gen:
                return  # a newer pod watch takes the scripts
            try:
                script = self.watch_scripts.get(timeout=0.5)
            except queue.Empty:
                yield line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": self.list_rv}})
                continue
            if script is None:
                return
            yield from script

    def _json(self, h: BaseHTTPRequestHandler, doc: dict[str, Any], code: int = 200) -> None:
        body = json.dumps(doc).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _stream(self, h: BaseHTTPRequestHandler, chunks: Chunks) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        try:
            for c in chunks:
                h.wfile.write(c)
                h.wfile.flush()
                self.sent += len(c)
        except OSError:  # the client went away
            pass


def endless(chunk: bytes, total: int | None, then: bytes = b"") -> Chunks:
    """``chunk`` again and again (``total`` bytes, or forever), then ``then``."""
    sent = 0
    while total is None or sent < total:
        yield chunk
        sent += len(chunk)
    yield then


def script(*parts: bytes) -> Chunks:
    yield from parts


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MB."""
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) / 1024
    raise AssertionError("no VmHWM")


Cond = Callable[[list[str]], bool]
