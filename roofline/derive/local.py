"""A local layer's attention, whichever kind: the last W keys (:mod:`roofline.derive.window`)
or the keys of its own chunk (:mod:`roofline.derive.chunked`), chosen by
``Architecture.window_kind``: the largest score matrix, the tokens a layer keeps for decode and
the keys a decode step reads."""

from __future__ import annotations

from sympy import Expr

from . import chunked, window
from .architecture import Architecture

__all__ = ["largest_scores", "cached_tokens", "decode_keys"]


def largest_scores(arch: Architecture) -> Expr:
    """The largest footprint of one layer's materialised scores: a global layer's where there
    is one, else a local layer's (the band, or the chunks' blocks)."""
    if arch.window == "all" and arch.window_kind == "chunked":
        return chunked.score_bytes()
    return window.largest_scores(arch)


def cached_tokens(arch: Architecture) -> Expr:
    """Tokens a local layer keeps in its KV cache after T."""
    if arch.window_kind == "chunked":
        return chunked.cached_tokens(arch)
    return window.cached_tokens(arch)


def decode_keys(arch: Architecture) -> Expr:
    """Keys a decode step of a local layer attends to."""
    if arch.window_kind == "chunked":
        return chunked.decode_keys()
    return window.decode_keys()
