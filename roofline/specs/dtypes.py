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

from fractions import Fraction

from ..errors import UnknownNameError

__all__ = ["COMPUTE_DTYPES", "STORAGE_DTYPES", "BYTES_PER_ELEMENT", "bytes_per_element"]

# Data types a device may list a peak FLOP/s for.
COMPUTE_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
# Every data type a tensor may be stored in (weights, activations, KV cache).
STORAGE_DTYPES: tuple[str, ...] = (*COMPUTE_DTYPES, "int4")

# tf32 is stored in a 32-bit word; fp4 and int4 pack two elements per byte.
BYTES_PER_ELEMENT: dict[str, Fraction] = {
    "fp64": Fraction(8),
    "fp32": Fraction(4),
    "tf32": Fraction(4),
    "bf16": Fraction(2),
    "fp16": Fraction(2),
    "fp8": Fraction(1),
    "int8": Fraction(1),
    "fp4": Fraction(1, 2),
    "int4": Fraction(1, 2),
}


def bytes_per_element(dtype: str) -> Fraction:
    """Bytes of one element of ``dtype``; :class:`UnknownNameError` lists the valid ones."""
    try:
        return BYTES_PER_ELEMENT[dtype]
    except KeyError:
        raise UnknownNameError("data type", dtype, STORAGE_DTYPES) from None
