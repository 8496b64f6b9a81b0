"""Field types and value rules shared by every kind.

Names (DNS label / subdomain, qualified names, label values), 32-bit integers and user
priorities, Kubernetes quantities (``ResourceList``: exact integers in base units), Go
durations (``Seconds``), and the resource-list arithmetic used to add requests up. Every
rule appends ``(field path, message)`` pairs to a ``Problems`` list; the messages are the
upstream ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, PlainValidator, ValidationInfo

from ledger.resources.quantity import parse_quantity, to_base_units

Problems = list[tuple[str, str]]  # (field path, message)

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
MAX_USER_PRIORITY = 1_000_000_000
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}


def dns_label_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS_LABEL.match(value):
        return (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return None


def dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS_SUBDOMAIN.match(value):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def path_segment_problem(value: str) -> str | None:
    """Upstream ``IsValidPathSegmentName`` (a ``kind`` or ``name`` that ends up in a URL path)."""
    if value in (".", ".."):
        return f"may not be '{value}'"
    for ch in "/%":
        if ch in value:
            return f"may not contain '{ch}'"
    return None


def qualified_name_problem(value: str) -> str | None:
    prefix, slash, name = value.rpartition("/")
    if slash:
        if not prefix:
            return "prefix part must be non-empty"
        problem = dns_subdomain_problem(prefix)
        if problem:
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if value and not _QUALIFIED_NAME.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return None


def _is_normalized(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("normalized"))


def _quantity_value(value: Any, info: ValidationInfo) -> Any:
    if _is_normalized(info):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"normalized quantities are non-negative integers, got {value!r}")
        return value
    return parse_quantity(value)


def _resource_list(value: dict[str, Any], info: ValidationInfo) -> dict[str, int]:
    if _is_normalized(info):
        return {k: int(value[k]) for k in sorted(value)}
    return {k: to_base_units(k, value[k], field=k) for k in sorted(value)}


# One quantity: parsed exactly (Fraction) first, turned into integer base units by the
# ResourceList validator, which knows the resource name (cpu → milli).
_Quantity = Annotated[int, PlainValidator(_quantity_value)]
ResourceList = Annotated[dict[str, _Quantity], AfterValidator(_resource_list)]


def _seconds_value(value: Any, info: ValidationInfo) -> Any:
    """Seconds: a number or a Go duration string (``30s``, ``1m30s``, ``500ms``)."""
    if isinstance(value, bool):
        raise ValueError("expected a number of seconds or a duration such as 30s")
    if isinstance(value, int | float | Decimal):
        seconds = parse_quantity(value)
    elif isinstance(value, str) and not _is_normalized(info):
        text = value.strip()
        pos, total = 0, Fraction(0)
        for match in _DURATION_PART.finditer(text):
            if match.start() != pos:
                break
            total += Fraction(Decimal(match.group(1))) * _DURATION_UNITS[match.group(2)]
            pos = match.end()
        if pos != len(text) or not text:
            raise ValueError(f"invalid duration {value!r}: use seconds or a duration such as 30s, 5m, 1h30m")
        seconds = total
    else:
        raise ValueError("expected a number of seconds or a duration such as 30s")
    if seconds.denominator == 1:
        return int(seconds)
    return float(round(Decimal(seconds.numerator) / Decimal(seconds.denominator), 6))


Seconds = Annotated[int | float, PlainValidator(_seconds_value)]


def check_int32(path: str, value: int | None, problems: Problems) -> None:
    if value is not None and not INT32_MIN <= value <= INT32_MAX:
        problems.append((path, f"must be a 32-bit integer ({INT32_MIN}..{INT32_MAX})"))


def check_priority(path: str, value: int | None, problems: Problems) -> None:
    if value is not None:
        if value > MAX_USER_PRIORITY:
            problems.append((path, f"must be <= {MAX_USER_PRIORITY}"))
        else:
            check_int32(path, value, problems)


def check_name(path: str, value: str | None, problems: Problems, *, label: bool = False) -> None:
    if value is None:
        return
    if not value:
        problems.append((path, "must not be empty"))
        return
    problem = dns_label_problem(value) if label else dns_subdomain_problem(value)
    if problem:
        problems.append((path, f"invalid value {value!r}: {problem}"))


def exactly_one_of(path: str, members: Mapping[str, bool]) -> Problems:
    """A union (``basic``/``gang``...): exactly one member set; ``members`` maps name -> is set."""
    if sum(members.values()) == 1:
        return []
    return [(path, "must specify exactly one of: " + ", ".join(f"`{name}`" for name in members))]


def key_path(path: str, key: str) -> str:
    """``path.key`` for identifier keys, else ``path[key]`` (``requests[nvidia.com/gpu]``)."""
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key}]"


def check_labels(path: str, labels: Mapping[str, str], problems: Problems) -> None:
    for key, val in labels.items():
        problem = qualified_name_problem(key)
        if problem:
            problems.append((f"{path}[{key}]", f"invalid label key {key!r}: {problem}"))
        problem = label_value_problem(val)
        if problem:
            problems.append((f"{path}[{key}]", f"invalid label value {val!r}: {problem}"))


# --------------------------------------------------------------------------- resource lists


def add_into(total: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        total[k] = total.get(k, 0) + v


def max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > total.get(k, 0):
            total[k] = v
