"""Request bodies of the Kubernetes API decoded as kube-apiserver decodes them: duplicate
fields found (``duplicate field "metadata.name"`` for JSON, ``line 5: key "name" already set
in map`` for YAML, upstream's texts), YAML aliases capped, and unknown fields found
(``api.services.fields``); ``fieldValidation`` decides whether they are an error (Strict),
``Warning`` headers (Warn) or nothing (Ignore)."""

from __future__ import annotations

import json
from typing import Any

import yaml

from api.k8s.status import K8sError
from api.services.fields import unknown_field_messages

MAX_ALIASES = 100  # kubectl refuses "excessive aliasing" far below what a bomb needs


class _DupDict(dict[str, Any]):
    dupes: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> _DupDict:
    out = _DupDict()
    out.dupes = []
    for k, v in pairs:
        if k in out and k not in out.dupes:
            out.dupes.append(k)
        out[k] = v
    return out


def _json_dupes(value: Any, path: str, out: list[str]) -> Any:
    """``value`` as plain dicts and lists, with the duplicate fields' paths in ``out``."""
    if isinstance(value, dict):
        plain = {}
        for k in getattr(value, "dupes", []):
            out.append(f'duplicate field "{path}.{k}"' if path else f'duplicate field "{k}"')
        for k, v in value.items():
            plain[k] = _json_dupes(v, f"{path}.{k}" if path else k, out)
        return plain
    if isinstance(value, list):
        return [_json_dupes(v, f"{path}[{i}]", out) for i, v in enumerate(value)]
    return value


class _Loader(yaml.SafeLoader):
    """The safe loader, noting duplicate keys (upstream's yaml text) and counting aliases."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.dupes: list[str] = []
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise K8sError(400, "the request body could not be decoded: excessive aliasing")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                key = key_node.value
                if key in seen:
                    self.dupes.append(f'line {key_node.start_mark.line + 1}: key "{key}" already set in map')
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def decode(body: bytes, content_type: str) -> tuple[Any, list[str]]:
    """The body's value and its duplicate-field problems (upstream's texts)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise K8sError(400, "the request body is not UTF-8 text") from None
    dupes: list[str] = []
    try:
        if "yaml" in content_type and not text.lstrip().startswith("{"):  # JSON is YAML: the fast path
            loader = _Loader(text)
            try:
                value = loader.get_single_data()
            finally:
                loader.dispose()
            dupes = loader.dupes
        else:
            value = (
                _json_dupes(json.loads(text, object_pairs_hook=_pairs), "", dupes) if text.strip() else None
            )
    except (yaml.YAMLError, ValueError) as exc:
        raise K8sError(400, f"the request body could not be decoded: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise K8sError(400, "the request body is nested too deeply") from None
    return value, dupes


def problems(value: Any, dupes: list[str], kind: str, api_version: str) -> list[str]:
    """Duplicate then unknown fields of an object body, in upstream's order."""
    out = list(dupes)
    if isinstance(value, dict):
        out += unknown_field_messages(value, kind=kind, api_version=api_version)
    return out


def strict_error(kind: str, api_version: str, found: list[str]) -> K8sError:
    version = api_version.rpartition("/")[2]
    return K8sError(
        400,
        f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: '
        + ", ".join(found),
    )


def warning_header(found: list[str]) -> str:
    """The ``Warning`` header value (RFC 7234 code 299) carrying each problem."""
    return ", ".join("299 - " + json.dumps(f) for f in found)
