"""Bytes per element of each data type, against the formats' widths (IEEE 754 binary64/32/16,
bfloat16, TF32 in a 32-bit word, FP8 E4M3/E5M2, 4-bit formats packed two per byte)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from sympy import Rational, Symbol

from roofline.errors import UnknownNameError
from roofline.specs.dtypes import COMPUTE_DTYPES, STORAGE_DTYPES, bytes_per_element

BITS = {"fp64": 64, "fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8,
        "fp4": 4, "int4": 4}


@pytest.mark.parametrize("dtype", STORAGE_DTYPES)
def test_bytes_per_element(dtype: str) -> None:
    assert bytes_per_element(dtype) == Fraction(BITS[dtype], 8)


def test_halves_are_exact() -> None:
    b_w = Symbol("b_w", positive=True)
    assert (2 * b_w).subs(b_w, bytes_per_element("int4")) == 1
    assert (3 * b_w).subs(b_w, bytes_per_element("fp4")) == Rational(3, 2)


def test_int4_is_storage_only() -> None:
    assert "int4" in STORAGE_DTYPES and "int4" not in COMPUTE_DTYPES


def test_unknown_dtype() -> None:
    with pytest.raises(UnknownNameError, match="unknown data type 'bf17'; close matches: bf16"):
        bytes_per_element("bf17")
