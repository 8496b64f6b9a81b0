"""Query parameters of the Kubernetes API, checked as kube-apiserver checks them.

A request whose options are invalid is refused before anything is read or written: ``dryRun``
and ``fieldValidation`` are validated as ``CreateOptions``/``UpdateOptions``/``PatchOptions``/
``DeleteOptions`` (422, upstream's ``... is invalid`` text), and the query parameters of reads
(``watch``, ``resourceVersionMatch``, booleans) as upstream's conversion refuses them (400).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.k8s.status import K8sError

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
OPTIONS_KIND = {
    "POST": "CreateOptions",
    "PUT": "UpdateOptions",
    "PATCH": "PatchOptions",
    "DELETE": "DeleteOptions",
}


def _options_invalid(kind: str, field: str, message: str) -> K8sError:
    return K8sError(
        422,
        f'{kind}.meta.k8s.io "" is invalid: {field}: {message}',
        reason="Invalid",
        details={
            "group": "meta.k8s.io",
            "kind": kind,
            "causes": [{"reason": "FieldValueNotSupported", "message": message, "field": field}],
        },
    )


def dry_run_values(values: list[str], kind: str) -> bool:
    """``dryRun`` (repeatable): empty = a real write, ``All`` = a dry run; anything else 422."""
    values = [v for v in values]
    if not values:
        return False
    if any(v != "All" for v in values) or len(values) > 1:
        shown = "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
        raise _options_invalid(kind, "dryRun", f'Unsupported value: {shown}: supported values: "All"')
    return True


def dry_run(query: Any, method: str) -> bool:
    """Whether the request is a dry run (``query``: the request's query parameters, a
    starlette ``QueryParams`` or a plain dict)."""
    values = query.getlist("dryRun") if hasattr(query, "getlist") else _as_list(query.get("dryRun"))
    return dry_run_values(values, OPTIONS_KIND.get(method, "CreateOptions"))


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [str(value)]


def field_validation(query: Mapping[str, str], method: str) -> str:
    """``fieldValidation``: Strict, Warn or Ignore. Without one the server default is Strict
    for kubectl (which always sends it) and, as upstream since 1.27, Warn for other clients."""
    value = query.get("fieldValidation")
    if value in (None, ""):
        return "Warn"
    if value not in FIELD_VALIDATION:
        raise _options_invalid(
            OPTIONS_KIND.get(method, "CreateOptions"),
            "fieldValidation",
            f'Unsupported value: "{value}": supported values: "", "Ignore", "Strict", "Warn"',
        )
    return value


BOOLS = ("watch", "allowWatchBookmarks", "sendInitialEvents")
TRUE = ("true", "True", "1")
FALSE = ("false", "False", "0", "")


def boolean(query: Mapping[str, str], name: str) -> bool:
    """A boolean query parameter as upstream's conversion reads it (``strconv.ParseBool``
    accepts 1, t, T, TRUE, true, True and their false forms); anything else 400."""
    value = query.get(name)
    if value is None:
        return False
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False", ""):
        return False
    raise K8sError(400, f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _list_invalid(message: str) -> K8sError:
    return K8sError(422, f'ListOptions.meta.k8s.io "" is invalid: {message}', reason="Invalid")


def check_read(query: Mapping[str, str]) -> None:
    """The query parameters of a GET (list, get, watch): a value the conversion cannot read is
    400 (as upstream's parameter codec); ListOptions that do not validate are 422."""
    for name in BOOLS:
        boolean(query, name)
    match = query.get("resourceVersionMatch") or ""
    if boolean(query, "watch"):
        if match:
            raise _list_invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch"
            )
        return
    if not match:
        return
    if not query.get("resourceVersion"):
        raise _list_invalid(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        )
    if query.get("continue"):
        raise _list_invalid(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"
        )
    if match not in ("Exact", "NotOlderThan"):
        raise _list_invalid(
            f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", "NotOlderThan", ""'
        )
    if match == "Exact" and query.get("resourceVersion") == "0":
        raise _list_invalid(
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
        )
