"""Request bodies of the Kubernetes API decoded as kube-apiserver decodes them: duplicate
fields found (``duplicate field "metadata.name"``, upstream's text), YAML aliases capped (both
by the shared bounded parser, ``ledger.resources.bounded``), and unknown fields found
(``api.services.fields``); ``fieldValidation`` decides whether they are an error (Strict),
``Warning`` headers (Warn) or nothing (Ignore)."""

from __future__ import annotations

import json
from typing import Any

from api.k8s.status import K8sError
from api.services.fields import unknown_field_messages
from ledger.resources.bounded import BodyError, duplicate_message, inspect_body


def decode(body: bytes, content_type: str) -> tuple[Any, list[str]]:
    """The body's value (read once, by ``ledger.resources.bounded``: YAML aliases capped as
    go-yaml caps them) and its duplicate fields (``duplicate field "path"``, upstream's text);
    an unreadable body is 400 with kube-apiserver's words."""
    try:
        value, paths = inspect_body(body, content_type)
    except BodyError as exc:
        if "yaml" in content_type.lower():
            raise K8sError(400, f"error converting YAML to JSON: yaml: {exc.problem}") from None
        raise K8sError(400, f"the request body could not be decoded: {exc.problem}") from None
    return value, [duplicate_message(p) for p in paths]


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
