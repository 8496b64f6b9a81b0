"""The cluster's Kubernetes API through the official ``kubernetes`` client.

Requests go through ``ApiClient.call_api`` with ``_preload_content=False`` and the JSON is parsed
here: the client's typed models would drop fields they do not know (``spec.schedulingGroup``,
the scheduling.k8s.io kinds), and a mirror must copy objects exactly.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from urllib3.exceptions import HTTPError

from api.attach.kinds import Watched

# Bounds on what one answer of the server may cost (issue 37): a page's body, a watch line (one
# event: an object is at most ~1.5 MiB in etcd), the objects of one list. Past them the page is
# asked again smaller, the line is skipped (reported INVALID), the list is abandoned and retried.
MAX_BODY_BYTES = 32 << 20
MAX_LINE_BYTES = 4 << 20
MAX_LIST_OBJECTS = 200_000
PAGE_SIZE = 250
INVALID = "INVALID"  # a watch "event" type of our own: a line attach could not use
OPENED = "OPENED"  # a watch "event" type of our own: the server accepted the watch


class Gone(Exception):
    """410 Gone: the resourceVersion is older than the server keeps; list again."""


class TooLarge(Exception):
    """An answer over one of the bounds above."""


class RemoteError(Exception):
    """The API server answered with an error other than 410 (or could not be reached)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Listed:
    items: list[dict[str, Any]]
    resource_version: str
    whole: bool = True  # the list's only page (no continue before or after it)


def load_client(kubeconfig: str, context: str | None = None) -> Any:
    """An ``ApiClient`` for the kubeconfig's (or ``context``'s) cluster and user."""
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
    return client.ApiClient(cfg)


def cluster_name(kubeconfig: str, context: str | None = None) -> str:
    """The kubeconfig cluster name of ``context`` (or the current context)."""
    from kubernetes import config

    contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    chosen = current
    if context is not None:
        chosen = next((c for c in contexts if c.get("name") == context), None)
        if chosen is None:
            raise RemoteError(f"the kubeconfig {kubeconfig} has no context {context!r}")
    return str((chosen or {}).get("context", {}).get("cluster") or (chosen or {}).get("name") or "cluster")


class Remote:
    def __init__(
        self,
        api_client: Any,
        request_timeout: float = 30.0,
        *,
        page_size: int = PAGE_SIZE,
        max_body: int = MAX_BODY_BYTES,
        max_line: int = MAX_LINE_BYTES,
        max_list_objects: int = MAX_LIST_OBJECTS,
    ) -> None:
        self.api = api_client
        self.request_timeout = request_timeout
        self.page_size = page_size
        self.max_body = max_body
        self.max_line = max_line
        self.max_list_objects = max_list_objects
        self._main_calls = 0

    @property
    def waiting(self) -> bool:
        """The main thread is in a call to the cluster (a signal handler may abandon it)."""
        return self._main_calls > 0

    @contextmanager
    def _call_scope(self) -> Iterator[None]:
        main = threading.current_thread() is threading.main_thread()
        self._main_calls += main
        try:
            yield
        finally:
            self._main_calls -= main

    def _call(
        self,
        method: str,
        path: str,
        query: list[tuple[str, Any]],
        body: Any = None,
        timeout: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        """The urllib3 response of one request (not read yet); Gone on 410, RemoteError on any
        other error status or a connection that fails."""
        from kubernetes.client.exceptions import ApiException

        try:
            params = self.api.param_serialize(
                method=method,
                resource_path=path,
                query_params=query,
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
            )
            resp = self.api.call_api(
                *params, _request_timeout=timeout if timeout is not None else self.request_timeout
            )
        except ApiException as exc:
            if exc.status == 410:
                raise Gone(exc.reason or "Gone") from None
            raise RemoteError(f"{method} {path}: {exc.status} {exc.reason}", exc.status) from None
        except (HTTPError, OSError) as exc:
            raise RemoteError(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        raw = resp.response
        if raw.status >= 400:
            text = raw.data
            raw.release_conn()
            if raw.status == 410:
                raise Gone(_message(text) or "Gone")
            raise RemoteError(f"{method} {path}: {raw.status} {_message(text) or raw.reason}", raw.status)
        return raw

    def get_json(self, path: str, query: list[tuple[str, Any]] | None = None) -> dict[str, Any]:
        """The JSON object of a GET; TooLarge past ``max_body`` bytes (read no further),
        RemoteError when the body is not a JSON object."""
        with self._call_scope():
            return self._get_json(path, query)

    def _get_json(self, path: str, query: list[tuple[str, Any]] | None) -> dict[str, Any]:
        resp = self._call("GET", path, query or [])
        try:
            body = _read_bounded(resp, self.max_body)
            doc = json.loads(body)
        except (OSError, HTTPError) as exc:
            raise RemoteError(f"GET {path}: {type(exc).__name__}: {exc}") from None
        except ValueError as exc:
            raise RemoteError(f"GET {path}: the answer is not JSON: {exc}") from None
        finally:
            resp.release_conn()
            resp.close()
        if not isinstance(doc, dict):
            raise RemoteError(f"GET {path}: the answer is not a JSON object")
        return doc

    def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._call_scope():
            resp = self._call("POST", path, [], body=body)
            try:
                return json.loads(resp.data) if resp.data else {}
            finally:
                resp.release_conn()

    def patch_json(
        self, path: str, body: dict[str, Any], content_type: str = "application/strategic-merge-patch+json"
    ) -> dict[str, Any]:
        with self._call_scope():
            resp = self._call("PATCH", path, [], body=body, content_type=content_type)
            try:
                return json.loads(resp.data) if resp.data else {}
            finally:
                resp.release_conn()

    def list_pages(
        self, w: Watched, namespace: str | None, stop: Callable[[], bool] | None = None
    ) -> Iterator[Listed]:
        """Every object of ``w`` (in ``namespace``), one page at a time (limit/continue; each
        ``Listed`` carries the list's resourceVersion). A page over ``max_body`` is asked again
        with a quarter of the limit (down to 1); a list past ``max_list_objects`` objects or
        ``max_list_objects / limit + 2`` pages (a server that keeps answering ``continue``)
        raises TooLarge; ``stop()`` true ends it between pages."""
        cont: str | None = None
        rv = ""
        limit = self.page_size
        objects = pages = 0
        while True:
            if stop is not None and stop():
                return
            query: list[tuple[str, Any]] = [("limit", limit)]
            if cont:
                query.append(("continue", cont))
            try:
                doc = self.get_json(w.path(namespace), query)
            except TooLarge:
                if limit == 1:
                    raise
                limit = max(1, limit // 4)
                continue
            pages += 1
            meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
            rv = rv or str(meta.get("resourceVersion") or "")
            raw = doc.get("items")
            items = [i for i in raw if isinstance(i, dict)] if isinstance(raw, list) else []
            for item in items:
                # list items carry no apiVersion/kind upstream
                item.setdefault("apiVersion", f"{w.group}/{w.version}" if w.group else w.version)
                item.setdefault("kind", w.kind)
            objects += len(items)
            if objects > self.max_list_objects or pages > self.max_list_objects // limit + 2:
                raise TooLarge(
                    f"list {w.plural}: the server kept paging past {objects} objects in {pages} pages "
                    f"(at most {self.max_list_objects} objects)"
                )
            whole = pages == 1 and not meta.get("continue")
            cont = str(meta.get("continue") or "") or None
            yield Listed(items, rv, whole)
            if not cont:
                return

    def watch(
        self, w: Watched, namespace: str | None, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Watch events ``(type, object)`` after ``resource_version`` (BOOKMARKs included).
        Raises Gone (410, at the start or as an ERROR event) or RemoteError; returns when the
        server ends the watch (its timeout)."""
        query: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        # the read timeout is what notices a server that went silent: bookmarks keep a live watch busy
        resp = self._call("GET", w.path(namespace), query, timeout=(10.0, self.request_timeout))
        try:
            yield OPENED, {}
            for line in _lines(resp, self.max_line):
                if isinstance(line, int):
                    reason = f"a watch line of {line} bytes, over the {self.max_line}-byte line limit"
                    yield INVALID, {"reason": reason, "size": line}
                    continue
                try:
                    ev = json.loads(line)
                except ValueError as exc:
                    yield (
                        INVALID,
                        {
                            "reason": f"a watch line that is not JSON: {exc}",
                            "size": len(line),
                            "digest": _digest(line),
                        },
                    )
                    continue
                typ = ev.get("type") if isinstance(ev, dict) else None
                obj = ev.get("object") if isinstance(ev, dict) else None
                if typ not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR") or not isinstance(
                    obj, dict
                ):
                    reason = "a watch line that is not a watch event"
                    yield INVALID, {"reason": reason, "size": len(line), "digest": _digest(line)}
                    continue
                if typ == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone(obj.get("message") or "Gone")
                    raise RemoteError(f"watch {w.plural}: {obj.get('message')}", obj.get("code"))
                yield typ, obj
        except (OSError, ValueError, HTTPError) as exc:  # a dropped connection, a cut-off line
            raise RemoteError(f"watch {w.plural}: {type(exc).__name__}: {exc}") from None
        finally:
            resp.release_conn()
            resp.close()

    def scheduled_by(self, namespace: str, pod: str) -> str | None:
        """Who bound a pod, from its ``Scheduled`` Event (reportingInstance, then the controller
        or component that reported it); None if the cluster kept no such Event."""
        try:
            doc = self.get_json(f"/api/v1/namespaces/{namespace}/events")
        except RemoteError:
            return None
        found = None
        for e in doc.get("items") or []:
            inv = e.get("involvedObject") or e.get("regarding") or {}
            if e.get("reason") != "Scheduled" or inv.get("name") != pod or inv.get("kind", "Pod") != "Pod":
                continue
            src = e.get("source") or {}
            found = (
                e.get("reportingInstance")
                or e.get("reportingController")
                or e.get("reportingComponent")
                or src.get("component")
                or found
            )
        return found


def _message(body: Any) -> str:
    try:
        return str(json.loads(body).get("message") or "")
    except (TypeError, ValueError, AttributeError):
        return ""


def _digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()[:16]


def _pieces(resp: Any, decode: bool) -> Iterator[bytes]:
    """The body as it arrives, at most 64 KiB a piece (``read1``: what the socket has, chunked
    or not; ``stream`` would wait for 64 KiB, or read a whole chunk however large)."""
    while True:
        data = resp.read1(1 << 16, decode_content=decode)
        if not data:
            return
        yield data


def _read_bounded(resp: Any, limit: int) -> bytes:
    """The whole body of ``resp``, or TooLarge as soon as it passes ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    for chunk in _pieces(resp, decode=True):
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"an answer of over {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


def _lines(resp: Any, limit: int) -> Iterator[bytes | int]:
    """The non-empty lines of a streamed body; a line longer than ``limit`` is not kept: its
    bytes are dropped as they come and its length (an int) is yielded in its place."""
    buf = bytearray()
    skipping = 0  # bytes dropped of an over-long line, 0 when not in one
    for chunk in _pieces(resp, decode=False):
        start = 0
        while True:
            i = chunk.find(b"\n", start)
            part = chunk[start:] if i < 0 else chunk[start:i]
            if skipping:
                skipping += len(part)
            elif len(buf) + len(part) > limit:
                skipping = len(buf) + len(part)
                buf.clear()
            else:
                buf += part
            if i < 0:
                break
            if skipping:
                yield skipping
                skipping = 0
            elif buf.strip():
                yield bytes(buf)
            buf.clear()
            start = i + 1
    if skipping:
        yield skipping
    elif buf.strip():
        yield bytes(buf)
