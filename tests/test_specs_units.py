"""Quantities with units: decimal vs binary prefixes, FLOP and OP, and every rejection."""

from __future__ import annotations

import re

import pytest

from roofline.errors import SpecError
from roofline.specs.units import check_number, parse_quantity, registry


@pytest.mark.parametrize("text, unit, expected", [
    ("228 KiB", "bytes", 228 * 1024),  # = 233472: binary
    ("50 MB", "bytes", 50 * 10**6),  # decimal
    ("1 KB", "bytes", 1000),  # KB is decimal, like kB
    ("1 kB", "bytes", 1000),
    ("128 MiB", "bytes", 128 * 2**20),
    ("32 GiB", "bytes", 32 * 2**30),
    ("80 GB", "bytes", 80e9),
    ("3.35 TB/s", "bytes/s", 3.35e12),
    ("819 GB/s", "bytes/s", 819e9),
    ("989.4 TFLOP/s", "FLOP/s", 989.4e12),
    ("1978.9 TOP/s", "FLOP/s", 1978.9e12),  # integer operations: same dimension
    ("2.25 PFLOP/s", "FLOP/s", 2.25e15),
    ("1.5e3 GB/s", "bytes/s", 1.5e12),
    ("64GB/s", "bytes/s", 64e9),
])
def test_parse(text: str, unit: str, expected: float) -> None:
    assert parse_quantity(text, unit, "f.toml: k") == pytest.approx(expected, rel=1e-15)


def test_binary_and_decimal_differ() -> None:
    kib = parse_quantity("228 KiB", "bytes", "x")
    kb = parse_quantity("228 KB", "bytes", "x")
    assert (kib, kb) == (233472, 228000)


@pytest.mark.parametrize("text, unit, rule", [
    ("3.35 TB", "bytes/s",
     'must be a bandwidth in bytes/s (e.g. "3.35 TB/s"), but its unit is bytes'),
    ("80 GB/s", "bytes",
     'must be an amount of memory in bytes (e.g. "80 GB"), but its unit is bytes/s'),
    ("3 TFLOPs", "FLOP/s", "but its unit is FLOP"),  # a plural FLOP count, not a rate
    ("1 TB/s", "FLOP/s", "must be a FLOP rate in FLOP/s"),
    ("3.35 XB/s", "bytes/s", "unknown unit 'XB/s'"),
    ("989 TFLOPS", "FLOP/s", "unknown unit 'TFLOPS'"),
    ("3.35 Tb/s", "bytes/s", "unknown unit 'Tb/s'"),  # bits are not known: case matters
    ("fast", "bytes/s", "must be a number and a unit"),
    ("3.35", "bytes/s", "has no unit"),
    ("0 GB", "bytes", "must be positive (> 0)"),
    ("-1 GB", "bytes", "must be positive (> 0)"),
    ("NaN GB", "bytes", "must be a number, not NaN"),
    ("inf GB", "bytes", "must be finite"),
    ("1e400 GB", "bytes", "must be finite"),
    ("1e300 EB", "bytes", "must be finite"),  # overflows only after the prefix
])
def test_rejected(text: str, unit: str, rule: str) -> None:
    with pytest.raises(SpecError, match=re.escape("hw.toml: memory.x: ") + ".*"
                       + re.escape(rule) + ".*" + re.escape(f"(got {text!r})")):
        parse_quantity(text, unit, "hw.toml: memory.x")


def test_not_a_string() -> None:
    with pytest.raises(SpecError, match=re.escape(
            "hw.toml: memory.bandwidth: must be a string: a number and a unit, a bandwidth in "
            'bytes/s (e.g. "3.35 TB/s") (got 3.35)')):
        parse_quantity(3.35, "bytes/s", "hw.toml: memory.bandwidth")


def test_the_error_carries_where_rule_value() -> None:
    with pytest.raises(SpecError) as info:
        parse_quantity("0 GB", "bytes", "hw.toml: memory.capacity")
    assert (info.value.where, info.value.rule, info.value.value) == (
        "hw.toml: memory.capacity", "must be positive (> 0)", "0 GB")


def test_unknown_expected_dimension_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="expected_dimension"):
        parse_quantity("1 GB", "litres", "x")


def test_registry_is_built_once() -> None:
    assert registry() is registry()


@pytest.mark.parametrize("value, kwargs, rule", [
    (True, {}, "must be a number"),
    ("7", {}, "must be a number"),
    (1.5, {"integer": True}, "must be an integer"),
    (0, {}, "must be positive"),
    (-2, {"integer": True}, "must be positive"),
    (float("nan"), {}, "must be a number, not NaN"),
    (float("inf"), {}, "must be finite"),
    (1.01, {"at_most_one": True}, "must be a fraction in (0, 1]"),
])
def test_check_number_rejects(value: object, kwargs: dict, rule: str) -> None:
    with pytest.raises(SpecError, match=re.escape(f"f: k: {rule}")):
        check_number(value, "f: k", **kwargs)


def test_check_number_accepts() -> None:
    assert check_number(1, "x", at_most_one=True) == 1
    assert check_number(132, "x", integer=True) == 132
