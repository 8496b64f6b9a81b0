"""Kubernetes resource quantities, parsed exactly.

A quantity is ``<sign><number><suffix>`` as in ``k8s.io/apimachinery/pkg/api/resource``:

* number: ``1``, ``1.5``, ``.5``, ``5.``
* binary suffixes: ``Ki Mi Gi Ti Pi Ei`` (powers of 1024)
* decimal SI suffixes: ``n u m`` (10^-9, 10^-6, 10^-3), none, ``k M G T P E``
* decimal exponent: ``1e3``, ``1E3``, ``2.5e-3``

YAML/JSON numbers (``int``, ``float``, ``Decimal``) are accepted too; floats are read
through their shortest ``repr`` so ``0.1`` means exactly one tenth. Everything is kept as a
:class:`fractions.Fraction`; conversion to the integer base units used everywhere else
(milli-CPU for ``cpu``, bytes or counts for the rest) rounds *up*, as Kubernetes does when
it rounds a quantity to the precision it can represent.

Negative quantities are rejected: no resource request, capacity or quota can be negative.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction

__all__ = [
    "BINARY_RESOURCES",
    "MILLI_RESOURCES",
    "format_quantity",
    "is_milli_resource",
    "parse_quantity",
    "to_base_units",
    "to_int",
    "to_milli",
]

_BINARY = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NUMBER = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?\d+)$")

# Resources whose base unit is the milli-unit (stored as integer milli-CPU).
MILLI_RESOURCES = frozenset({"cpu"})
# Resources measured in bytes; formatted with binary suffixes when exact.
BINARY_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def _fail(field: str, value: object, why: str) -> ValueError:
    where = f"{field}: " if field else ""
    return ValueError(f"{where}invalid quantity {value!r}: {why}")


def parse_quantity(value: object, *, field: str = "") -> Fraction:
    """Parse a Kubernetes quantity exactly. Raises ValueError (naming ``field``) on bad input."""
    if isinstance(value, bool):
        raise _fail(field, value, "expected a number or a quantity string")
    if isinstance(value, int):
        result = Fraction(value)
    elif isinstance(value, Fraction):
        result = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _fail(field, value, "must be a finite number")
        result = Fraction(Decimal(repr(value)))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise _fail(field, value, "must be a finite number")
        result = Fraction(value)
    elif isinstance(value, str):
        result = _parse_string(value, field)
    else:
        raise _fail(field, value, "expected a number or a quantity string")
    if result < 0:
        raise _fail(field, value, "must not be negative")
    return result


def _parse_string(text: str, field: str) -> Fraction:
    match = _NUMBER.match(text)
    if match is None:
        raise _fail(
            field,
            text,
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        )
    sign, digits, suffix = match.groups()
    try:
        number = Fraction(Decimal(digits))
    except (InvalidOperation, ValueError) as exc:  # pragma: no cover - regex guarantees digits
        raise _fail(field, text, "not a number") from exc
    if suffix in _BINARY:
        number *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        number *= _DECIMAL[suffix]
    else:
        exp = _EXPONENT.match(suffix)
        if exp is None:
            raise _fail(
                field,
                text,
                f"unknown suffix {suffix!r} (use Ki Mi Gi Ti Pi Ei, "
                "n u m k M G T P E, or an exponent such as e3)",
            )
        power = int(exp.group(1))
        if abs(power) > 64:
            raise _fail(field, text, "exponent out of range")
        number *= Fraction(10) ** power
    return -number if sign == "-" else number


MAX_BASE_UNITS = 2**63 - 1  # base units are stored as 64-bit integers (like Kubernetes' int64)


def _bounded(units: int, value: object, field: str) -> int:
    if units > MAX_BASE_UNITS:
        raise _fail(field, value, "too large (the value in base units must fit in 64 bits)")
    return units


def to_milli(value: object, *, field: str = "") -> int:
    """Integer milli-units (``cpu``), rounded up: ``0.1m`` → 1, ``1.5`` → 1500."""
    return _bounded(math.ceil(parse_quantity(value, field=field) * 1000), value, field)


def to_int(value: object, *, field: str = "") -> int:
    """Integer base units (bytes, counts, extended resources), rounded up."""
    return _bounded(math.ceil(parse_quantity(value, field=field)), value, field)


def is_milli_resource(resource: str) -> bool:
    return resource in MILLI_RESOURCES


def to_base_units(resource: str, value: object, *, field: str = "") -> int:
    """Milli-units for ``cpu``, whole units for every other resource."""
    if is_milli_resource(resource):
        return to_milli(value, field=field)
    return to_int(value, field=field)


def _is_binary_resource(resource: str) -> bool:
    return resource in BINARY_RESOURCES or resource.startswith("hugepages-")


def format_quantity(value: int, resource: str = "") -> str:
    """Display an integer in base units the way kubectl would.

    ``format_quantity(1500, "cpu") == "1500m"``, ``format_quantity(2000, "cpu") == "2"``,
    ``format_quantity(2 * 1024**3, "memory") == "2Gi"``, ``format_quantity(3, "nvidia.com/gpu") == "3"``.
    """
    if is_milli_resource(resource):
        if value % 1000 == 0:
            return str(value // 1000)
        return f"{value}m"
    if _is_binary_resource(resource) and value != 0:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """``format_quantity`` applied to every entry of a resource list (display only)."""
    return {name: format_quantity(v, name) for name, v in resources.items()}
