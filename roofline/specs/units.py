"""Quantities with units, as hardware files write them: ``"3.35 TB/s"``, ``"80 GB"``, ``"228 KiB"``.

A quantity is a decimal number, then a unit that pint parses. Decimal and binary prefixes
stay apart (``KB`` = ``kB`` = 10³ bytes, ``KiB`` = 2¹⁰ bytes; ``TB`` = 10¹², ``TiB`` = 2⁴⁰), and
work is counted in its own dimension, ``[computation]``: ``FLOP`` (alias ``OP`` for integer
operations), so ``"989.4 TFLOP/s"`` and ``"1978.9 TOP/s"`` are both FLOP rates. The result is a
float in SI base units: FLOP/s, bytes/s or bytes.

The pint registry is built once, on first use, from only the definitions below (a few
milliseconds; pint's full default registry takes about 150 ms to build).

>>> parse_quantity("228 KiB", "bytes", "H100-SXM.toml: on_chip.sram_per_sm")
233472.0
>>> parse_quantity("3.35 TB/s", "bytes/s", "H100-SXM.toml: memory.bandwidth")
3350000000000.0
"""

from __future__ import annotations

import functools
import math
import re
from typing import TYPE_CHECKING

from ..errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    import pint

__all__ = ["DIMENSIONS", "parse_quantity", "registry"]

# The unit a caller expects (what the result is in) → its pint dimensionality.
DIMENSIONS: dict[str, str] = {
    "FLOP/s": "[computation] / [time]",
    "bytes/s": "[information] / [time]",
    "bytes": "[information]",
}
_MEANING = {"FLOP/s": "a FLOP rate", "bytes/s": "a bandwidth", "bytes": "an amount of memory"}

# Only what hardware files need. Binary prefixes are exact powers of two (IEC 80000-13).
_DEFINITIONS = """
kilo- = 1e3 = k- = K-
mega- = 1e6 = M-
giga- = 1e9 = G-
tera- = 1e12 = T-
peta- = 1e15 = P-
exa- = 1e18 = E-
kibi- = 2**10 = Ki-
mebi- = 2**20 = Mi-
gibi- = 2**30 = Gi-
tebi- = 2**40 = Ti-
pebi- = 2**50 = Pi-
second = [time] = s = sec
byte = [information] = B = Byte
flop = [computation] = FLOP = OP
"""

_NUMBER = re.compile(
    r"\s*(?P<number>[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf(?:inity)?))"
    r"\s*(?P<unit>.*?)\s*$",
    re.IGNORECASE,
)


@functools.cache
def registry() -> pint.UnitRegistry:
    """The project's unit registry, built once on first use."""
    import pint

    ureg = pint.UnitRegistry(None, autoconvert_offset_to_baseunit=False)
    for line in _DEFINITIONS.strip().splitlines():
        ureg.define(line)
    return ureg


def parse_quantity(text: object, expected_dimension: str, where: str) -> float:
    """The value of ``text`` (``"<number> <unit>"``) in SI base units of ``expected_dimension``
    (one of ``"FLOP/s"``, ``"bytes/s"``, ``"bytes"``).

    Raises :class:`SpecError` (``where: rule (got text)``) for anything else: not a string, no
    number, a number that is NaN, infinite, zero or negative, an unknown unit, or a unit of
    another dimension.

    >>> parse_quantity("1978.9 TOP/s", "FLOP/s", "x") == 1978.9e12
    True
    >>> parse_quantity("3.35 TB", "bytes/s", "H100.toml: memory.bandwidth")
    Traceback (most recent call last):
    ...
    roofline.errors.SpecError: H100.toml: memory.bandwidth: must be a bandwidth in bytes/s \
(e.g. "3.35 TB/s"), but its unit is bytes (got '3.35 TB')
    """
    import pint

    if expected_dimension not in DIMENSIONS:
        raise ValueError(f"expected_dimension must be one of {sorted(DIMENSIONS)}")
    example = {"FLOP/s": '"989.4 TFLOP/s"', "bytes/s": '"3.35 TB/s"', "bytes": '"80 GB"'}
    meaning, shown = _MEANING[expected_dimension], example[expected_dimension]
    expected = f"{meaning} in {expected_dimension} (e.g. {shown})"
    if not isinstance(text, str):
        raise SpecError(where, f"must be a string: a number and a unit, {expected}", text)
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise SpecError(where, f"must be a number and a unit, {expected}", text)
    number = float(match["number"])
    _check_number(number, where, text)
    unit_text = match["unit"]
    if not unit_text:
        raise SpecError(where, f"has no unit; must be {expected}", text)
    ureg = registry()
    try:
        unit = ureg.parse_units(unit_text)
    except (pint.errors.UndefinedUnitError, pint.errors.DefinitionSyntaxError, ValueError,
            TypeError, AttributeError, SyntaxError) as err:
        raise SpecError(where, f"unknown unit {unit_text!r}; must be {expected}", text) from err
    quantity = ureg.Quantity(number, unit)
    if quantity.dimensionality != ureg.get_dimensionality(DIMENSIONS[expected_dimension]):
        got = _describe(quantity.to_base_units().units)
        raise SpecError(where, f"must be {expected}, but its unit is {got}", text)
    value = float(quantity.to_base_units().magnitude)
    _check_number(value, where, text)  # a huge prefix may still overflow
    return value


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
    _check_number(float(value), where, value)
    if at_most_one and value > 1:
        raise SpecError(where, "must be a fraction in (0, 1]", value)
    return value


def _check_number(number: float, where: str, shown: object) -> None:
    if math.isnan(number):
        raise SpecError(where, "must be a number, not NaN", shown)
    if math.isinf(number):
        raise SpecError(where, "must be finite", shown)
    if number <= 0:
        raise SpecError(where, "must be positive (> 0)", shown)


def _describe(units: object) -> str:
    text = str(units)
    return (text.replace("byte", "bytes").replace("flop", "FLOP").replace("second", "s")
            .replace(" / ", "/"))
