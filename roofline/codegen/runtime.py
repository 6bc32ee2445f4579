"""The functions that generated code calls (:mod:`.printer`), for numbers and for numpy arrays.

SymPy prints ``Max``, ``Min``, ``ceiling``, ``floor``, ``sqrt`` and ``Abs`` under their own
names; each is defined here once for both kinds of argument: Python's own arithmetic where every
argument is a number (integers stay exact), numpy's element-wise form where one is an array
(numpy is imported only then).

>>> Max(2, 7, 3), Min(2, 7), ceiling(2.5), sqrt(16)
(7, 2, 3, 4.0)
"""

from __future__ import annotations

import math

__all__ = ["Max", "Min", "ceiling", "floor", "sqrt", "Abs"]


def _array(xs: tuple) -> bool:
    """Whether one of ``xs`` is a numpy array (without importing numpy)."""
    return any(hasattr(x, "__array_ufunc__") for x in xs)


def Max(*xs):
    if _array(xs):
        import numpy as np

        return np.maximum.reduce(np.broadcast_arrays(*xs))
    return max(xs)


def Min(*xs):
    if _array(xs):
        import numpy as np

        return np.minimum.reduce(np.broadcast_arrays(*xs))
    return min(xs)


def ceiling(x):
    if _array((x,)):
        import numpy as np

        return np.ceil(x)
    return math.ceil(x)


def floor(x):
    if _array((x,)):
        import numpy as np

        return np.floor(x)
    return math.floor(x)


def sqrt(x):
    if _array((x,)):
        import numpy as np

        return np.sqrt(x)
    return math.sqrt(x)


def Abs(x):
    return abs(x)
