"""The functions that generated code calls (:mod:`.printer`), for numbers and for numpy arrays.

SymPy prints ``Max``, ``Min``, ``ceiling``, ``floor``, ``sqrt`` and ``Abs`` under their own
names; each is defined here once for both kinds of argument: Python's own arithmetic where the
arguments are numbers (integers stay exact), numpy's element-wise form where one is an array
(numpy is imported only then; a numpy scalar takes that path too).

>>> Max(2, 7, 3), Min(2, 7), ceiling(2.5), sqrt(16)
(7, 2, 3, 4.0)
"""

from __future__ import annotations

import math

__all__ = ["Max", "Min", "ceiling", "floor", "sqrt", "Abs"]


_NUMBERS = (int, float)


def Max(*xs):
    try:
        return max(xs)
    except ValueError:  # an array among them (its truth value is ambiguous): element-wise
        import numpy as np

        return np.maximum.reduce(np.broadcast_arrays(*xs))


def Min(*xs):
    try:
        return min(xs)
    except ValueError:  # an array among them: element-wise
        import numpy as np

        return np.minimum.reduce(np.broadcast_arrays(*xs))


def ceiling(x):
    if type(x) in _NUMBERS:
        return math.ceil(x)
    import numpy as np

    return np.ceil(x)


def floor(x):
    if type(x) in _NUMBERS:
        return math.floor(x)
    import numpy as np

    return np.floor(x)


def sqrt(x):
    if type(x) in _NUMBERS:
        return math.sqrt(x)
    import numpy as np

    return np.sqrt(x)


def Abs(x):
    return abs(x)
