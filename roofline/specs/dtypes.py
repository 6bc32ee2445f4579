"""Data types: which ones a device computes in, and how many bytes one element takes.

Compute data types are the keys of a hardware file's ``[peak_flops]``; ``int4`` is a storage
type only (weights unpacked to a wider type before the multiply). Sub-byte sizes are exact
fractions, so ``b_w`` stays exact when it is substituted into a SymPy expression.

>>> bytes_per_element("bf16")
Fraction(2, 1)
>>> bytes_per_element("int4")
Fraction(1, 2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UnknownNameError

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = ["COMPUTE_DTYPES", "STORAGE_DTYPES", "BITS_PER_ELEMENT", "bytes_per_element",
           "element_bytes"]

# Data types a device may list a peak FLOP/s for.
COMPUTE_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
# Every data type a tensor may be stored in (weights, activations, KV cache).
STORAGE_DTYPES: tuple[str, ...] = (*COMPUTE_DTYPES, "int4")

# tf32 is stored in a 32-bit word; fp4 and int4 pack two elements per byte.
BITS_PER_ELEMENT: dict[str, int] = {"fp64": 64, "fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16,
                                    "fp8": 8, "int8": 8, "fp4": 4, "int4": 4}


def _bits(dtype: str) -> int:
    try:
        return BITS_PER_ELEMENT[dtype]
    except KeyError:
        raise UnknownNameError("data type", dtype, STORAGE_DTYPES) from None


def bytes_per_element(dtype: str) -> Fraction:
    """Bytes of one element of ``dtype``, exact; :class:`UnknownNameError` lists the valid
    ones."""
    from fractions import (
        Fraction,  # for the exact path only: the numbers need no fractions
    )

    return Fraction(_bits(dtype), 8)


def element_bytes(dtype: str) -> int | float:
    """Bytes of one element of ``dtype`` as a number: an integer where it is one (2 for bf16),
    else a float (0.5 for int4).

    >>> element_bytes("fp8"), element_bytes("fp4")
    (1, 0.5)
    """
    bits = _bits(dtype)
    return bits // 8 if bits % 8 == 0 else bits / 8
