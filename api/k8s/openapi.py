"""``/openapi/v3``: one OpenAPI 3.0 document per group/version, as kubectl reads them.

kubectl checks in them that PATCH/POST/PUT of a kind take ``fieldValidation`` (then it lets the
server validate); the schemas are open objects (podledger's own models validate every write).
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

import orjson

from api.k8s import resources as R
from api.k8s.resources import Resource
from api.k8s.schemas import kind_schemas as schemas_of


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _all_gvs() -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for r in R.RESOURCES:
        if (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen


def _schema_name(r: Resource) -> str:
    group = r.group or "core"
    return f"io.podledger.{group}.{r.version}.{r.kind}"


def _param(name: str, where: str = "query", required: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": required,
        "schema": {"type": "string"},
        "uniqueItems": True,
    }


def _op(r: Resource, action: str, verb_params: list[str], body: bool) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{_schema_name(r)}"}
    op: dict[str, Any] = {
        "operationId": f"{action}{r.kind}",
        "parameters": [_param(p) for p in verb_params],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
    }
    if body:
        op["requestBody"] = {"content": {"*/*": {"schema": ref}}, "required": True}
    return op


WRITE_PARAMS = ["dryRun", "fieldManager", "fieldValidation"]


def _open_schema(r: Resource) -> dict[str, Any]:
    """A kind the official client has no model of: an open object (podledger's models
    validate every write)."""
    return {
        "type": "object",
        "description": f"{r.kind} (validated by podledger on write)",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.kind}],
    }


@cache
def document(group: str, version: str) -> dict[str, Any] | None:
    res = [r for r in R.in_group_version(group, version)]
    if not res:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    base = "/" + _gv_path(group, version)
    for r in res:
        found = schemas_of(r.kind, r.api_version)
        if found is not None:
            top, components = found
            schemas.update(components)
            schemas[_schema_name(r)] = {
                **components[top],
                "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.kind}],
            }
        else:
            schemas[_schema_name(r)] = _open_schema(r)
        coll = f"{base}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
        item = coll + "/{name}"
        writable = "create" in r.verbs
        paths[coll] = {
            "get": _op(r, "list", ["labelSelector", "fieldSelector", "limit", "continue", "watch"], False)
        }
        paths[item] = {"get": _op(r, "get", [], False)}
        if writable:
            paths[coll]["post"] = _op(r, "post", WRITE_PARAMS, True)
            paths[item]["put"] = _op(r, "put", WRITE_PARAMS, True)
            paths[item]["patch"] = _op(r, "patch", [*WRITE_PARAMS, "force"], True)
            paths[item]["delete"] = _op(r, "delete", ["dryRun"], False)
        if r.status:
            paths[item + "/status"] = {
                "get": _op(r, "get", [], False),
                "put": _op(r, "put", WRITE_PARAMS, True),
                "patch": _op(r, "patch", [*WRITE_PARAMS, "force"], True),
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "podledger (Kubernetes-compatible)", "version": "v1.37.0-podledger"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _hash(group: str, version: str) -> str:
    return (
        hashlib.sha256(orjson.dumps(document(group, version), option=orjson.OPT_SORT_KEYS))
        .hexdigest()[:32]
        .upper()
    )


def root() -> dict[str, Any]:
    return {
        "paths": {
            _gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}?hash={_hash(g, v)}"}
            for g, v in _all_gvs()
        }
    }


def by_path(path: str) -> dict[str, Any] | None:
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        return document("", parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return document(parts[1], parts[2])
    return None
