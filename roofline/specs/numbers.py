"""Strict integers from text a person typed: ASCII digits only, positive, bounded.

Python's ``int()`` accepts far more than a count should be written with: other scripts' digits
(``int("٥١٢") == 512``), underscores (``"1_0"``), signs and surrounding spaces; and a count
of ``18446744073709551615`` (2⁶⁴ − 1) is a wrap-around of −1, not a request. Here a count is
the digits 0-9 and nothing else, at least 1 and at most a stated maximum, or one
:class:`InputError` line that names ``where`` (the caller's word for the value: an option, a key).

The default maximum, :data:`MAX_COUNT` = 10⁹, bounds any count of tokens or sequences the
roofline is asked about: a billion tokens is a hundred times or more the longest context of any
2024 model (Llama 3.1: 131,072 tokens; Gemini 1.5 report: up to 10⁷ tokens in research tests).

>>> parse_positive_int("2048", "prompt length")
2048
>>> parse_positive_int("18446744073709551615", "prompt length")
Traceback (most recent call last):
...
roofline.errors.InputError: prompt length: must be at most 1,000,000,000 (got \
'18446744073709551615')
"""

from __future__ import annotations

import re

from ..errors import InputError

__all__ = ["MAX_COUNT", "MAX_DIGITS", "parse_positive_int"]

MAX_COUNT = 10**9  # tokens or sequences: see the module's docstring
MAX_DIGITS = 64  # characters read at all; longer text is refused before any conversion
_DIGITS = re.compile(r"[0-9]+", re.ASCII)


def parse_positive_int(text: str, where: str, maximum: int = MAX_COUNT) -> int:
    """The integer that ``text`` writes in the digits 0-9, in [1, ``maximum``].

    Anything else — empty text, a sign, spaces, underscores, a decimal point, digits of another
    script, superscripts, a value of 0 or above ``maximum`` — is an :class:`InputError`
    ``where: rule (got text)``.

    >>> parse_positive_int("\u0665\u0661\u0662", "batch")
    Traceback (most recent call last):
    ...
    roofline.errors.InputError: batch: must be a positive integer written with the digits 0-9 \
(got '\u0665\u0661\u0662')
    """
    if not isinstance(text, str):
        raise InputError(where, "must be a positive integer", text)
    if len(text) > MAX_DIGITS:
        raise InputError(where, f"must be at most {maximum:,} (got {len(text):,} characters)")
    if not _DIGITS.fullmatch(text):
        if any(c.isdigit() and not c.isascii() for c in text):
            raise InputError(where, "must be a positive integer written with the digits 0-9",
                             text)
        raise InputError(where, "must be a positive integer", text)
    value = int(text)
    if value <= 0:
        raise InputError(where, "must be a positive integer", text)
    if value > maximum:
        raise InputError(where, f"must be at most {maximum:,}", text)
    return value
