"""Unknown fields of a manifest, as kube-apiserver's strict decoding finds them.

A field is known if upstream's schema of the kind has it (the official Python client's models,
generated from upstream's OpenAPI document, are the source: ``V1Pod``, ``V1beta1PodGroup``...)
or podledger's own model of the kind does (podledger's kinds and fields the client does not
know yet). A subtree neither describes (a free-form map, ``x-kubernetes-preserve-unknown-fields``)
is not looked into. Paths are upstream's: ``spec.containers[0].resource``.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel

Desc = tuple[str, Any]  # ("c", client type string) or ("p", a Python annotation)
ANY: Desc = ("any", None)

_LIST = re.compile(r"^list\[(.+)\]$", re.IGNORECASE)
_DICT = re.compile(r"^dict\(str, (.+)\)$", re.IGNORECASE)
_SCALARS = {"str", "int", "float", "bool", "bytes", "datetime", "date", "object"}


def _client_models() -> Any:
    import kubernetes.client.models as models

    return models


def _client_class(kind: str, api_version: str) -> str | None:
    version = api_version.rpartition("/")[2]
    name = version[:1].upper() + version[1:] + kind
    return name if hasattr(_client_models(), name) else None


@cache
def _client_fields(name: str) -> dict[str, Desc] | None:
    cls = getattr(_client_models(), name, None)
    if cls is None or not hasattr(cls, "attribute_map"):
        return None
    return {cls.attribute_map[attr]: ("c", typ) for attr, typ in cls.openapi_types.items()}


@cache
def _model_fields(cls: type[BaseModel]) -> dict[str, Desc]:
    out: dict[str, Desc] = {}
    for name, info in cls.model_fields.items():
        out[info.alias or name] = ("p", info.annotation)
    return out


def _shape(desc: Desc) -> tuple[str, Any]:
    """The shape of a descriptor (memoised: the schemas are fixed for the process)."""
    try:
        return _shape_cached(desc)
    except TypeError:  # an unhashable annotation
        return _shape_of(desc)


@cache
def _shape_cached(desc: Desc) -> tuple[str, Any]:
    return _shape_of(desc)


def _shape_of(desc: Desc) -> tuple[str, Any]:
    """("obj", fields) | ("list", [inner]) | ("map", [inner]) | ("any", None) | ("scalar", None)."""
    tag, value = desc
    if tag == "any":
        return "any", None
    if tag == "c":
        m = _LIST.match(value)
        if m:
            return "list", [("c", m.group(1))]
        m = _DICT.match(value)
        if m:
            return "map", [("c", m.group(1))]
        if value in _SCALARS:
            return ("any", None) if value == "object" else ("scalar", None)
        fields = _client_fields(value)
        return ("obj", fields) if fields is not None else ("any", None)
    ann = value
    origin: Any = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(ann) if a is not type(None)]
        shapes = [_shape(("p", a)) for a in members]
        objs = [s for s in shapes if s[0] == "obj"]
        if any(s[0] in ("any", "map") for s in shapes) or not objs:
            kinds = {s[0] for s in shapes}
            if kinds == {"list"}:
                return "list", [d for s in shapes for d in s[1]]
            return ("scalar", None) if kinds == {"scalar"} else ("any", None)
        merged: dict[str, Desc] = {}
        for _, f in objs:
            merged.update(f)
        return "obj", merged
    if origin in (list, tuple, set, frozenset):
        args = typing.get_args(ann)
        return "list", [("p", args[0])] if args else [ANY]
    if origin in (dict, Mapping) or ann in (dict, typing.Any):
        args = typing.get_args(ann)
        return "map", [("p", args[1])] if len(args) == 2 else [ANY]
    if origin is typing.Literal:
        return "scalar", None
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return "obj", _model_fields(ann)
    if isinstance(ann, type):
        return "scalar", None
    return "any", None


def _walk(value: Any, descs: list[Desc], path: str, out: list[str]) -> None:
    if not descs:
        return
    shapes = [_shape(d) for d in descs]
    if any(s[0] == "any" for s in shapes):
        return
    if isinstance(value, list):
        inner = [d for s in shapes if s[0] == "list" for d in s[1]]
        for i, item in enumerate(value):
            _walk(item, inner, f"{path}[{i}]", out)
        return
    if not isinstance(value, dict):
        return
    maps = [d for s in shapes if s[0] == "map" for d in s[1]]
    objs = [s[1] for s in shapes if s[0] == "obj"]
    if maps:
        for k, v in value.items():
            _walk(v, maps, f"{path}.{k}" if path else str(k), out)
        return
    if not objs:
        return
    for key, child in value.items():
        where = f"{path}.{key}" if path else str(key)
        if isinstance(key, str) and key.startswith("$"):
            continue  # strategic-merge-patch directives ($patch, $retainKeys, ...)
        found = [f[key] for f in objs if key in f]
        if not found:
            out.append(where)
            continue
        _walk(child, found, where, out)


def unknown_fields(raw: Mapping[str, Any], *, kind: str, api_version: str) -> list[str]:
    """The paths of ``raw``'s fields that neither upstream's schema of ``kind`` at
    ``api_version`` nor podledger's model knows, in document order."""
    from ledger.resources.models.registry import MODELS

    top: list[Desc] = []
    name = _client_class(kind, api_version)
    if name is not None:
        top.append(("c", name))
    model = MODELS.get(kind)
    if model is not None:
        top.append(("p", model))
    if not top:
        return []
    out: list[str] = []
    for key, child in raw.items():
        if key in ("apiVersion", "kind"):
            continue
        descs = [("c", "V1ObjectMeta")] if key == "metadata" else []
        for d in top:
            shape = _shape(d)
            if shape[0] == "obj" and key in shape[1]:
                descs.append(shape[1][key])
        if not descs:
            out.append(str(key))
            continue
        _walk(child, descs, str(key), out)
    return out


def unknown_field_messages(raw: Mapping[str, Any], *, kind: str, api_version: str) -> list[str]:
    """``unknown field "spec.containers[0].resource"`` for each unknown field (upstream's text)."""
    return [f'unknown field "{p}"' for p in unknown_fields(raw, kind=kind, api_version=api_version)]
