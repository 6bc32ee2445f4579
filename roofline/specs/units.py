"""Quantities with units, as hardware files write them: ``"3.35 TB/s"``, ``"80 GB"``, ``"228 KiB"``.

A quantity is a decimal number (ASCII digits, optional fraction and exponent), optional spaces,
then a unit of a fixed grammar, read by one anchored regular expression (no nesting, so no
backtracking blow-up) on at most :data:`MAX_LENGTH` characters::

    unit   := prefix? base ("/s")?   |   time
    prefix := k | K | M | G | T | P | E          decimal (SI): 10^3 … 10^18; K = k
            | Ki | Mi | Gi | Ti | Pi             binary (IEC 80000-13): 2^10 … 2^50, bytes only
    base   := B | byte | bytes                   bytes
            | FLOP | FLOPs | OP                  floating-point (or integer) operations
    time   := s | ms | us | ns                   a duration, in seconds

Decimal and binary prefixes stay apart (``KB`` = ``kB`` = 10³ bytes, ``KiB`` = 2¹⁰ bytes;
``TB`` = 10¹², ``TiB`` = 2⁴⁰), as the SI Brochure (9th ed., 2019, §3) and IEC 80000-13 define
them. Work is counted in one dimension: ``OP`` (integer operations) is a FLOP for the roofline, so
``"989.4 TFLOP/s"`` and ``"1978.9 TOP/s"`` are both FLOP rates. ``FLOPs`` is a plural count, not
a rate, and the ambiguous ``FLOPS`` is refused: write ``FLOP/s``. The result is a float in SI
base units: FLOP/s, bytes/s, bytes or seconds.

>>> parse_quantity("228 KiB", "bytes", "H100-SXM.toml: on_chip.sram_per_sm")
233472.0
>>> parse_quantity("3.35 TB/s", "bytes/s", "H100-SXM.toml: memory.bandwidth")
3350000000000.0
"""

from __future__ import annotations

import math
import re

from ..errors import SpecError

__all__ = ["DIMENSIONS", "MAX_LENGTH", "parse_quantity", "check_number", "check_range"]

MAX_LENGTH = 64  # characters of a quantity string; "1978.9 TOP/s" has 12

# The unit a caller expects → (what it is, an example).
DIMENSIONS: dict[str, tuple[str, str]] = {
    "FLOP/s": ("a FLOP rate", '"989.4 TFLOP/s"'),
    "bytes/s": ("a bandwidth", '"3.35 TB/s"'),
    "bytes": ("an amount of memory", '"80 GB"'),
    "s": ("a duration", '"20 us"'),
}
# The accepted forms, listed in an error about a unit.
_FORMS = {
    "FLOP/s": "[k|M|G|T|P|E]FLOP/s or [k|M|G|T|P|E]OP/s",
    "bytes/s": "[k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi]B/s (or byte/s, bytes/s)",
    "bytes": "[k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi]B (or byte, bytes)",
    "s": "s, ms, us or ns",
}

_DECIMAL = {"k": 3, "K": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}  # powers of ten
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50}  # powers of two
_TIME = {"s": 0, "ms": -3, "us": -6, "ns": -9}  # powers of ten

_QUANTITY = re.compile(
    r"[ \t]*(?P<sign>[-+]?)"
    r"(?:(?P<mantissa>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exponent>[-+]?[0-9]+))?"
    r"|(?P<special>[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?))"
    r"[ \t]*(?P<unit>[^ \t](?:.*[^ \t])?)?[ \t]*",
    re.ASCII | re.DOTALL,
)
_UNIT = re.compile(
    r"(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTPE])?(?P<base>B|bytes?|FLOPs?|OP)(?P<rate>/s)?"
    r"|(?P<time>s|ms|us|ns)",
    re.ASCII,
)


def parse_quantity(text: object, expected_dimension: str, where: str) -> float:
    """The value of ``text`` (``"<number> <unit>"``) in SI base units of ``expected_dimension``
    (one of ``"FLOP/s"``, ``"bytes/s"``, ``"bytes"``, ``"s"``).

    Raises :class:`SpecError` (``where: rule (got text)``) for anything else: not a string, too
    long, no number, a number that is NaN, infinite, zero or negative, a unit outside the
    grammar, a binary prefix on FLOP, or a unit of another dimension.

    >>> parse_quantity("1978.9 TOP/s", "FLOP/s", "x") == 1978.9e12
    True
    >>> parse_quantity("3.35 TB", "bytes/s", "H100.toml: memory.bandwidth")
    Traceback (most recent call last):
    ...
    roofline.errors.SpecError: H100.toml: memory.bandwidth: must be a bandwidth in bytes/s \
(e.g. "3.35 TB/s"), but its unit is bytes (got '3.35 TB')
    """
    if expected_dimension not in DIMENSIONS:
        raise ValueError(f"expected_dimension must be one of {sorted(DIMENSIONS)}")
    meaning, example = DIMENSIONS[expected_dimension]
    expected = f"{meaning} in {expected_dimension} (e.g. {example})"
    if not isinstance(text, str):
        raise SpecError(where, f"must be a string: a number and a unit, {expected}", text)
    if len(text) > MAX_LENGTH:
        raise SpecError(where, f"is too long ({len(text):,} characters; at most {MAX_LENGTH}); "
                        f"must be {expected}", _shown(text))
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise SpecError(where, f"must be a number and a unit, {expected}", text)
    unit_text = match["unit"]
    if match["special"]:
        number = float(match["special"])
    else:
        # A decimal exponent is added to the prefix's below, so "1e300 EB" overflows to inf
        # (and is refused) instead of raising; float() of a decimal string rounds once.
        number = float(f"{match['mantissa']}e{match['exponent'] or 0}")
    number = -number if match["sign"] == "-" else number
    if not unit_text:
        _check_number(number, where, text)
        raise SpecError(where, f"has no unit; must be {expected}", text)
    # The unit first: in "0x1p1 TB/s" the number is 0 and the unit "x1p1 TB/s", which is the
    # mistake to name.
    dimension, value = _convert(match, unit_text, expected_dimension, where, text)
    _check_number(number, where, text)
    if dimension != expected_dimension:
        raise SpecError(where, f"must be {expected}, but its unit is {dimension}", text)
    _check_number(value, where, text)  # a huge prefix may still overflow, a tiny one underflow
    return value


def _convert(match: re.Match[str], unit_text: str, expected: str, where: str,
             text: str) -> tuple[str, float]:
    """(the dimension of ``unit_text``, the number in SI base units)."""
    unit = _UNIT.fullmatch(unit_text)
    if unit is None:
        raise SpecError(where, f"unknown unit {unit_text!r}; accepted: {_FORMS[expected]}", text)
    if unit["time"]:
        shift, power_of_two = _TIME[unit["time"]], 0
        dimension = "s"
    else:
        prefix, base = unit["prefix"] or "", unit["base"]
        work = base.startswith(("FLOP", "OP"))
        if work and prefix in _BINARY:
            raise SpecError(where, f"binary prefix {prefix!r} on {base}: binary prefixes are for "
                            f"bytes only; accepted: {_FORMS[expected]}", text)
        shift, power_of_two = _DECIMAL.get(prefix, 0), _BINARY.get(prefix, 0)
        dimension = ("FLOP" if work else "bytes") + ("/s" if unit["rate"] else "")
    if match["special"]:
        return dimension, float(match["special"])
    exponent = int(match["exponent"] or 0) + shift
    value = float(f"{match['mantissa']}e{exponent}") * 2.0**power_of_two
    return dimension, -value if match["sign"] == "-" else value


def check_number(value: object, where: str, *, integer: bool = False,
                 at_most_one: bool = False) -> float:
    """A bare number from a file (a count, a fraction): finite and positive, an integer when
    ``integer``, at most 1 when ``at_most_one``; a bool is not a number.

    >>> check_number(0.7, "x", at_most_one=True)
    0.7
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "an integer" if integer else "a number"
        raise SpecError(where, f"must be {kind}", value)
    if integer and not isinstance(value, int):
        raise SpecError(where, "must be an integer", value)
    if isinstance(value, int):  # compared exactly: float() of a huge int would raise
        if value <= 0:
            raise SpecError(where, "must be positive (> 0)", value)
    else:
        _check_number(value, where, value)
    if at_most_one and value > 1:
        raise SpecError(where, "must be a fraction in (0, 1]", _shown(value))
    return value


def check_range(value: float, low: float, high: float, unit: str, where: str,
                shown: object) -> float:
    """``value`` when ``low ≤ value ≤ high``, else a :class:`SpecError` that gives the range.

    >>> check_range(5e-324, 1e6, 1e16, "bytes/s", "f.toml: memory.bandwidth", "5e-324 B/s")
    Traceback (most recent call last):
    ...
    roofline.errors.SpecError: f.toml: memory.bandwidth: is 4.941e-324 bytes/s, outside the \
plausible range [1e+06, 1e+16] bytes/s (got '5e-324 B/s')
    """
    if not low <= value <= high:
        raise SpecError(where, f"is {value:.4g} {unit}, outside the plausible range "
                        f"[{low:.4g}, {high:.4g}] {unit}", _shown(shown))
    return value


def _check_number(number: float, where: str, shown: object) -> None:
    if math.isnan(number):
        raise SpecError(where, "must be a number, not NaN", shown)
    if math.isinf(number):
        raise SpecError(where, "must be finite", shown)
    if number <= 0:
        raise SpecError(where, "must be positive (> 0)", shown)


def _shown(value: object) -> object:
    """A value short enough for a one-line message: long strings and huge integers cut."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of {value.bit_length():,} bits"
    if isinstance(value, str) and len(value) > MAX_LENGTH:
        return value[:MAX_LENGTH] + "…"
    return value
