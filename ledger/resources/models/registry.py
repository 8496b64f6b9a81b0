"""The kind -> model table and validation of user input into models.

``validate_raw`` turns pydantic's errors into one ``(field path, message)`` per problem, with
kubectl-like wording (``expected an integer, got string 'x'``), then runs the kind's value
rules (``check()``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from ledger.resources.errors import format_path
from ledger.resources.kinds import get_kind
from ledger.resources.models.batch import Job
from ledger.resources.models.core import Node, Pod
from ledger.resources.models.jobset import JobSet
from ledger.resources.models.meta import Resource
from ledger.resources.models.podledger import SchedulerConfig, SchedulerConfigSpec
from ledger.resources.models.policy import PodDisruptionBudget
from ledger.resources.models.quota import ElasticQuota, ElasticQuotaTree
from ledger.resources.models.scheduling import CompositePodGroup, PodGroup, PriorityClass, Workload
from ledger.resources.models.values import Problems

MODELS: dict[str, type[Resource]] = {
    cls.KIND: cls
    for cls in (
        Node,
        Pod,
        PriorityClass,
        Workload,
        PodGroup,
        CompositePodGroup,
        PodDisruptionBudget,
        ElasticQuota,
        ElasticQuotaTree,
        SchedulerConfig,
        Job,
        JobSet,
    )
}


def model_for(kind: str) -> type[Resource]:
    """The model class of a canonical kind name (``"PodGroup"``)."""
    get_kind(kind)  # raises UnknownKindError for unknown kinds
    return MODELS[kind]


def from_normalized(data: Mapping[str, Any]) -> Resource:
    """Rebuild any stored normalized object (dispatching on its ``kind``)."""
    return model_for(str(data["kind"])).from_normalized(data)


def validate_raw(kind: str, raw: Mapping[str, Any]) -> tuple[Resource | None, Problems]:
    """Validate user input for ``kind``: ``(object, [])`` or ``(None, [(field path, message), ...])``."""
    cls = model_for(kind)
    try:
        obj = cls.from_raw(raw)
    except ValidationError as exc:
        return None, _merge_union_errors(exc.errors())
    problems = obj.check()
    if problems:
        return None, problems
    return obj, []


_UNION_TAGS = {"int": "an integer", "str": "a string", "float": "a number", "bool": "a boolean"}


def validate_scheduler_config_spec(raw: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Problems]:
    """Validate a bare SchedulerConfig ``spec`` (e.g. a Scenario's ``spec.config``).

    Returns the complete normalized spec (defaults filled) or ``(None, problems)`` with paths
    relative to the spec (``backoff.maxSeconds``).
    """
    try:
        spec = SchedulerConfigSpec.model_validate(raw)
    except ValidationError as exc:
        return None, _merge_union_errors(exc.errors())
    problems = [(path.removeprefix("spec."), msg) for path, msg in spec.check("spec")]
    return (None, problems) if problems else (spec.normalized(), [])


def _merge_union_errors(errors: Iterable[Mapping[str, Any]]) -> Problems:
    """One message per field for ``int | str`` style unions (pydantic reports one per member)."""
    problems: Problems = []
    merged: dict[str, int] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if loc and isinstance(loc[-1], str) and loc[-1] in _UNION_TAGS and err["type"].endswith("_type"):
            path = format_path(loc[:-1])
            if path in merged:
                i = merged[path]
                problems[i] = (path, problems[i][1].replace(", got", f" or {_UNION_TAGS[loc[-1]]}, got", 1))
            else:
                merged[path] = len(problems)
                problems.append((path, f"expected {_UNION_TAGS[loc[-1]]}, got {_describe(err.get('input'))}"))
            continue
        problems.append((format_path(loc), _message(err)))
    return problems


def _message(err: Mapping[str, Any]) -> str:
    etype = err["type"]
    given = err.get("input")
    if etype == "missing":
        return "required value"
    if etype in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {_describe(given)}"
    if etype in ("string_type", "string_sub_type"):
        return f"expected a string, got {_describe(given)}"
    if etype in ("bool_type", "bool_parsing"):
        return f"expected a boolean, got {_describe(given)}"
    if etype in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected an object, got {_describe(given)}"
    if etype in ("list_type", "tuple_type"):
        return f"expected a list, got {_describe(given)}"
    if etype in ("float_type", "float_parsing"):
        return f"expected a number, got {_describe(given)}"
    if etype == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"unsupported value {given!r}: supported values: {expected}"
    if etype == "value_error":
        msg = str(err["msg"])
        return msg.removeprefix("Value error, ")
    if etype == "union_tag_invalid" or etype.startswith("union"):
        return str(err["msg"])
    return str(err["msg"])


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float | Decimal):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
