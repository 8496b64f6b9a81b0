"""OpenAPI v3 schemas with upstream's field descriptions, for ``kubectl explain``: built from
the official Python client's models (generated from upstream's OpenAPI document: the field
names, types and descriptions are upstream's), for every served kind the client knows. Kinds
it does not know keep an open schema (podledger's models validate every write)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from api.services.fields import _client_class, _client_models

PREFIX = "io.k8s.client."
_LIST = re.compile(r"^list\[(.+)\]$", re.IGNORECASE)
_DICT = re.compile(r"^dict\(str, (.+)\)$|^dict\[str, (.+)\]$", re.IGNORECASE)
_SCALAR = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "bytes": {"type": "string", "format": "byte"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
}


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    text = doc.strip().split("Attributes:")[0]
    return " ".join(text.split())


def _type(typ: str, out: dict[str, Any]) -> dict[str, Any]:
    if typ in _SCALAR:
        return dict(_SCALAR[typ])
    if typ == "object":
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    m = _LIST.match(typ)
    if m:
        return {"type": "array", "items": _type(m.group(1), out)}
    m = _DICT.match(typ)
    if m:
        return {"type": "object", "additionalProperties": _type(m.group(1) or m.group(2), out)}
    _component(typ, out)
    return {"allOf": [{"$ref": f"#/components/schemas/{PREFIX}{typ}"}]}


def _component(name: str, out: dict[str, Any]) -> None:
    if PREFIX + name in out:
        return
    cls = getattr(_client_models(), name, None)
    if cls is None or not hasattr(cls, "openapi_types"):
        out[PREFIX + name] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return
    schema: dict[str, Any] = {
        "type": "object",
        "description": _first_paragraph(cls.__doc__),
        "properties": {},
    }
    out[PREFIX + name] = schema
    fields = getattr(cls, "model_fields", {})
    for attr, typ in cls.openapi_types.items():
        prop = _type(typ, out)
        info = fields.get(attr)
        desc = getattr(info, "description", None)
        if not desc and "allOf" in prop:
            ref = getattr(_client_models(), typ, None)
            desc = _first_paragraph(getattr(ref, "__doc__", None))
        if desc:
            prop["description"] = desc
        schema["properties"][cls.attribute_map[attr]] = prop


@cache
def kind_schemas(kind: str, api_version: str) -> tuple[str, dict[str, Any]] | None:
    """(the kind's component name, every component it needs), or None if the client has no
    model of the kind at this version."""
    group = api_version.rpartition("/")[0]
    name = _client_class(kind, api_version)
    for version in ("v1", "v1beta1", "v1alpha3", "v1alpha2", "v1alpha1"):
        if name is None:  # a version the client does not have yet: the nearest one it has
            name = _client_class(kind, f"{group}/{version}" if group else version)
    if name is None:
        return None
    out: dict[str, Any] = {}
    _component(name, out)
    return PREFIX + name, out
