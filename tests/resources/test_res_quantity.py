from decimal import Decimal
from fractions import Fraction

import pytest

from ledger.resources.quantity import format_quantity, parse_quantity, to_base_units, to_int, to_milli


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("2", Fraction(2)),
        ("+2", Fraction(2)),
        ("2Gi", Fraction(2 * 1024**3)),
        ("1.5Gi", Fraction(3 * 1024**3, 2)),
        ("1Ki", Fraction(1024)),
        ("1Mi", Fraction(1024**2)),
        ("1Ti", Fraction(1024**4)),
        ("1Pi", Fraction(1024**5)),
        ("1Ei", Fraction(1024**6)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("2.5e-3", Fraction(1, 400)),
        ("1e+2", Fraction(100)),
        ("500M", Fraction(500 * 10**6)),
        ("1k", Fraction(1000)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("0.1m", Fraction(1, 10**4)),
        ("0", Fraction(0)),
        (3, Fraction(3)),
        (0.1, Fraction(1, 10)),
        (1.5, Fraction(3, 2)),
        (Decimal("0.25"), Fraction(1, 4)),
    ],
)
def test_parse_quantity(value: object, expected: Fraction) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    ("value", "milli", "whole"),
    [
        ("100m", 100, 1),
        ("1.5", 1500, 2),
        ("0.1m", 1, 1),  # rounded up like Kubernetes
        ("1e3", 1_000_000, 1000),
        (2, 2000, 2),
        (0.5, 500, 1),
        ("1u", 1, 1),
        ("0", 0, 0),
    ],
)
def test_to_milli_and_to_int_round_up(value: object, milli: int, whole: int) -> None:
    assert to_milli(value) == milli
    assert to_int(value) == whole
    assert isinstance(to_milli(value), int) and isinstance(to_int(value), int)


def test_to_base_units_picks_milli_for_cpu_only() -> None:
    assert to_base_units("cpu", "250m") == 250
    assert to_base_units("memory", "1.5Gi") == 1610612736
    assert to_base_units("nvidia.com/gpu", "2") == 2
    assert to_base_units("memory", "500M") == 500_000_000


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("-1", "must not be negative"),
        (-1, "must not be negative"),
        ("-100m", "must not be negative"),
        ("abc", "invalid quantity 'abc'"),
        ("1.2.3", "unknown suffix"),
        ("10X", "unknown suffix 'X'"),
        ("1 Gi", "unknown suffix"),
        ("", "invalid quantity"),
        ("Gi", "invalid quantity"),
        (True, "expected a number"),
        (None, "expected a number"),
        ([1], "expected a number"),
        (float("inf"), "finite"),
        ("1e999", "exponent out of range"),
    ],
)
def test_bad_quantities(value: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(")):
        parse_quantity(value, field="spec.x")


def test_error_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"^spec.containers\[0\].resources.requests.cpu: invalid quantity"):
        parse_quantity("abc", field="spec.containers[0].resources.requests.cpu")


@pytest.mark.parametrize(
    ("value", "resource", "text"),
    [
        (1500, "cpu", "1500m"),
        (2000, "cpu", "2"),
        (0, "cpu", "0"),
        (2 * 1024**3, "memory", "2Gi"),
        (1536 * 1024**2, "memory", "1536Mi"),
        (1000, "memory", "1000"),
        (0, "memory", "0"),
        (1024**6, "ephemeral-storage", "1Ei"),
        (2 * 1024**2, "hugepages-2Mi", "2Mi"),
        (3, "nvidia.com/gpu", "3"),
        (110, "pods", "110"),
    ],
)
def test_format_quantity(value: int, resource: str, text: str) -> None:
    assert format_quantity(value, resource) == text
    assert to_base_units(resource, text) == value
