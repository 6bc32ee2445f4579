"""Prompt-length distributions: parse → validate → frozen :class:`Distribution`.

A prompt-length file is UTF-8 text, one prompt length per line::

    # lengths of a chat trace; a '#' starts a comment, blank lines are skipped
    512
    2048,0.25        # length,weight: this length with relative weight 0.25 (default 1)

A length is written in ASCII digits 0-9 only (no sign, no '_', no other scripts' digits or
superscripts) and lies in 1 … MAX_TOKENS (10⁹) tokens; a weight is a positive finite number.
Weights are normalised to sum to 1; a length may appear more than once: its weights add up.
Errors name the file and line (``path:3``), the rule and the line's text; a file that cannot be
read is an error of the argument ``prompt_dist``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["MAX_TOKENS", "Distribution", "read_distribution", "is_tokens"]

MAX_TOKENS = 10**9  # the longest prompt (and chunk) any TTFT input may name, tokens
_DIGITS = frozenset("0123456789")
_FLOAT_CHARACTERS = _DIGITS | frozenset(".eE+-")  # a weight: 0.25, 1e3, ... in ASCII
_RULE = (f"a line is a positive integer length of at most {MAX_TOKENS:,} tokens in ASCII digits, "
         "optionally ',weight' with a weight > 0")


def is_tokens(value: object) -> bool:
    """A whole number of tokens in 1 … MAX_TOKENS (a bool is no number of tokens).

    >>> is_tokens(512), is_tokens(0), is_tokens(10**9 + 1), is_tokens(2.5), is_tokens(True)
    (True, False, False, False, False)
    """
    return (not isinstance(value, bool) and isinstance(value, (int, np.integer))
            and 1 <= value <= MAX_TOKENS)


@dataclass(frozen=True)
class Distribution:
    """Prompt lengths (tokens) and their probabilities (summing to 1)."""

    lengths: np.ndarray  # int64, distinct, ascending, in 1 … MAX_TOKENS
    weights: np.ndarray  # float, > 0, sum 1

    @classmethod
    def of(cls, lengths: list[int] | np.ndarray, weights: list[float] | np.ndarray | None = None,
           where: str = "distribution") -> Distribution:
        """Validate and normalise: lengths whole numbers in 1 … MAX_TOKENS, weights positive and
        finite. Lengths are checked as Python integers before numpy sees them (no wrap-around)."""
        values = list(lengths.tolist() if isinstance(lengths, np.ndarray) else lengths)
        w = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float)
        if not values:
            raise InputError(where, "holds no prompt lengths")
        if w.shape != (len(values),):
            raise InputError(where, "needs one weight per length", (len(values), w.shape))
        if not all(is_tokens(n) for n in values):
            raise InputError(where, f"prompt lengths must be integers from 1 to {MAX_TOKENS:,}",
                             values)
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise InputError(where, "weights must be finite numbers > 0", w.tolist())
        unique, index = np.unique(np.array(values, dtype=np.int64), return_inverse=True)
        summed = np.bincount(index, weights=w)
        with np.errstate(over="ignore"):  # inf is the answer, refused below: no warning
            total = float(summed.sum())
        if not math.isfinite(total):
            raise InputError(where, "the weights add up past the largest float: give them on a "
                             "smaller scale (they are relative)", float(w.max()))
        return cls(unique, summed / total)


def _parse_line(text: str, where: str) -> tuple[int, float]:
    parts = [p.strip() for p in text.split(",")]
    digits = parts[0]
    if len(parts) > 2 or not digits or not set(digits) <= _DIGITS or len(digits) > 10:
        raise InputError(where, _RULE, text)
    length = int(digits)
    if not 1 <= length <= MAX_TOKENS:
        raise InputError(where, _RULE, text)
    weight = 1.0
    if len(parts) == 2:
        if not set(parts[1]) <= _FLOAT_CHARACTERS:  # float() also reads 1_0 and other digits
            raise InputError(where, _RULE, text)
        try:
            weight = float(parts[1])
        except ValueError:
            raise InputError(where, _RULE, text) from None
        if not (math.isfinite(weight) and weight > 0):
            raise InputError(where, _RULE, text)
    return length, weight


def _read(path: Path) -> str:
    """The file's text through the specs' one safe reader (regular files only, at most 1 MiB,
    UTF-8): its refusal becomes an InputError of ``prompt_dist`` naming the file."""
    from ..errors import SpecError
    from .files import read_text

    try:
        return read_text(path, "prompt-length file")
    except SpecError as err:
        raise InputError("prompt_dist", err.rule, str(path)) from None


def read_distribution(path: str | Path) -> Distribution:
    """Read a prompt-length file (format in the module docstring)."""
    path = Path(path)
    lengths, weights = [], []
    # Lines end at "\n" alone, as an editor counts them (str.splitlines also breaks at a form
    # feed or a vertical tab, which would shift every later line's number).
    for number, line in enumerate(_read(path).split("\n"), start=1):
        content = line.split("#", 1)[0].strip()
        if content:
            length, weight = _parse_line(content, f"{path}:{number}")
            lengths.append(length)
            weights.append(weight)
    if not lengths:
        raise InputError(str(path), "holds no prompt lengths (one positive integer per line)")
    return Distribution.of(lengths, weights, where=str(path))
