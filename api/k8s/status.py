"""``Status`` objects: how the Kubernetes API answers errors (upstream reasons and codes)."""

from __future__ import annotations

import re
from typing import Any

from api.k8s.resources import Resource

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


class K8sError(Exception):
    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


def _details(res: Resource, name: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": res.plural}
    if res.group:
        d["group"] = res.group
    if name:
        d["name"] = name
    return d


def not_found(res: Resource, name: str) -> K8sError:
    return K8sError(404, f'{res.gr()} "{name}" not found', details=_details(res, name))


def already_exists(res: Resource, name: str) -> K8sError:
    return K8sError(
        409, f'{res.gr()} "{name}" already exists', reason="AlreadyExists", details=_details(res, name)
    )


def conflict(res: Resource, name: str, why: str = "") -> K8sError:
    msg = f'Operation cannot be fulfilled on {res.gr()} "{name}": ' + (
        why or "the object has been modified; please apply your changes to the latest version and try again"
    )
    return K8sError(409, msg, reason="Conflict", details=_details(res, name))


_MAP_KEY = re.compile(
    r"\b(requests|limits|capacity|allocatable|overhead|nodeSelector|labels|annotations|min|max)\.([A-Za-z0-9_-]+)"
)


def field_path(path: str) -> str:
    """A field path in upstream's syntax: map keys bracketed (``resources.requests[cpu]``)."""
    return _MAP_KEY.sub(r"\1[\2]", path)


def invalid(res: Resource, name: str, causes: list[dict[str, str]]) -> K8sError:
    """422 Invalid as upstream: ``Pod "x2" is invalid: spec...requests[cpu]: ...`` with the
    Kind (not the resource) in ``details.kind``, which kubectl prints as ``The Pod "x2" is invalid``."""
    causes = [{**c, "field": field_path(c.get("field") or "")} for c in causes]
    parts = [f"{c.get('field') or '<object>'}: {c['message']}" for c in causes]
    msg = f'{res.kind} "{name}" is invalid: ' + ("[" + ", ".join(parts) + "]" if len(parts) > 1 else parts[0])
    d = _details(res, name)
    d["kind"] = res.kind
    d["causes"] = [
        {"reason": "FieldValueInvalid", "message": c["message"], "field": c.get("field", "")} for c in causes
    ]
    return K8sError(422, msg, reason="Invalid", details=d)


def forbidden(res: Resource | None, verb: str, role: str, namespace: str | None, sub: str = "") -> K8sError:
    what = res.plural + (f"/{sub}" if sub else "") if res else "this path"
    group = res.group if res else ""
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    msg = f'{what} is forbidden: User "{role}" cannot {verb} resource "{what}" in API group "{group}"{where}'
    return K8sError(403, msg, details=_details(res, None) if res else None)


def success(res: Resource, name: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
        "details": _details(res, name),
    }
