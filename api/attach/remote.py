"""The cluster's Kubernetes API through the official ``kubernetes`` client.

Requests go through ``ApiClient.call_api`` with ``_preload_content=False`` and the JSON is parsed
here: the client's typed models would drop fields they do not know (``spec.schedulingGroup``,
the scheduling.k8s.io kinds), and a mirror must copy objects exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from api.attach.kinds import Watched


class Gone(Exception):
    """410 Gone: the resourceVersion is older than the server keeps; list again."""


class RemoteError(Exception):
    """The API server answered with an error other than 410 (or could not be reached)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Listed:
    items: list[dict[str, Any]]
    resource_version: str


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
    def __init__(self, api_client: Any, request_timeout: float = 30.0) -> None:
        self.api = api_client
        self.request_timeout = request_timeout

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
        from urllib3.exceptions import HTTPError

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
        resp = self._call("GET", path, query or [])
        try:
            return json.loads(resp.data)  # type: ignore[no-any-return]
        finally:
            resp.release_conn()

    def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self._call("POST", path, [], body=body)
        try:
            return json.loads(resp.data) if resp.data else {}
        finally:
            resp.release_conn()

    def patch_json(
        self, path: str, body: dict[str, Any], content_type: str = "application/strategic-merge-patch+json"
    ) -> dict[str, Any]:
        resp = self._call("PATCH", path, [], body=body, content_type=content_type)
        try:
            return json.loads(resp.data) if resp.data else {}
        finally:
            resp.release_conn()

    def list(self, w: Watched, namespace: str | None, page: int = 500) -> Listed:
        """Every object of ``w`` (in ``namespace``), paging with limit/continue."""
        items: list[dict[str, Any]] = []
        cont: str | None = None
        rv = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", page)]
            if cont:
                query.append(("continue", cont))
            doc = self.get_json(w.path(namespace), query)
            meta = doc.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "")
            for item in doc.get("items") or []:
                # list items carry no apiVersion/kind upstream
                item.setdefault("apiVersion", f"{w.group}/{w.version}" if w.group else w.version)
                item.setdefault("kind", w.kind)
                items.append(item)
            cont = meta.get("continue") or None
            if not cont:
                return Listed(items, rv)

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
        from urllib3.exceptions import HTTPError

        resp = self._call("GET", w.path(namespace), query, timeout=(10.0, self.request_timeout))
        try:
            for line in _lines(resp):
                ev = json.loads(line)
                typ, obj = ev.get("type"), ev.get("object") or {}
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


def _lines(resp: Any) -> Iterator[str]:
    buf = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            line, buf = buf[:i], buf[i + 1 :]
            if line.strip():
                yield line.decode("utf-8")
    if buf.strip():
        yield buf.decode("utf-8")
