"""Comparing the cluster (read with kubectl) and the ledger (read from its projection, shown as
the Kubernetes API would show it)."""

from __future__ import annotations

import json
from typing import Any

from api.attach.kinds import WATCHED, Watched
from api.k8s.objects import view
from api.k8s.resources import lookup
from ledger.queries.objects import projection_rows
from tests.attach.conftest import Ledger
from tests.k8s.conftest import Server

DROP_META = ("resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")


def comparable(w: Watched, obj: dict[str, Any]) -> dict[str, Any]:
    """What both sides must agree on: the object without server metadata and, except for a
    Node's capacity and a Pod's node, without the status each side derives itself."""
    out = {k: v for k, v in obj.items() if k != "status"}
    out["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in DROP_META}
    # each ledger's own facts (when it bound the pod...) are annotations: derived, like status
    annotations = {
        k: v
        for k, v in (out["metadata"].get("annotations") or {}).items()
        if not k.startswith("podledger.io/")
    }
    out["metadata"].pop("annotations", None)
    if annotations:
        out["metadata"]["annotations"] = annotations
    status = obj.get("status") or {}
    if w.kind == "Node":
        out["status"] = {k: status[k] for k in ("capacity", "allocatable") if k in status}
    if w.kind == "Pod":
        out["boundTo"] = (obj.get("spec") or {}).get("nodeName")
    return out


def remote_objects(srv: Server, w: Watched, namespace: str | None = None) -> dict[tuple[str, str], Any]:
    scope = ["-n", namespace] if namespace else (["-A"] if w.namespaced else [])
    # resource.version.group: the version attach watches (scheduling.k8s.io serves Workload and
    # PodGroup at v1 and v1beta1, and kubectl would otherwise pick the group's preferred one)
    res = srv.kubectl(
        "get",
        f"{w.plural}.{w.version}.{w.group}" if w.group else w.plural,
        *scope,
        "-o",
        "json",
        role="reader",
    )
    out = {}
    for item in json.loads(res.stdout)["items"]:
        meta = item["metadata"]
        out[(meta.get("namespace") or "", meta["name"])] = comparable(w, item)
    return out


def local_objects(led: Ledger, w: Watched, namespace: str | None = None) -> dict[tuple[str, str], Any]:
    res = lookup(w.group, w.version, w.plural)
    assert res is not None
    with led.database.connect() as conn:
        rows = projection_rows(conn, w.kind, namespace if w.namespaced else None)
    return {(r["namespace"], r["name"]): comparable(w, view(res, r)) for r in rows}


def differences(srv: Server, led: Ledger, namespace: str | None = None) -> list[str]:
    """Every object that is not the same on both sides (empty: the mirror is exact)."""
    out = []
    for w in WATCHED:
        remote, local = remote_objects(srv, w, namespace), local_objects(led, w, namespace)
        for key in sorted(set(remote) | set(local)):
            if remote.get(key) != local.get(key):
                out.append(f"{w.kind} {key}: cluster {remote.get(key)!r} != ledger {local.get(key)!r}")
    return out
