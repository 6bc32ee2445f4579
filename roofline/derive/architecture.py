"""The structure of a decoder-only transformer and the names the derivations share, in plain
Python (no SymPy): what a model file is read into and what the evaluation core keys its derived
expressions by. The sizes (D, F, n_q, ...) stay symbols in :mod:`roofline.derive.transformer`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Architecture", "ATTENTION_MODES", "KINDS"]

# Attention modes of :mod:`roofline.derive.attention`.
ATTENTION_MODES = ("naive", "tiled", "tiled_fa2", "ideal")
# Kinds of operation in a prefill, in the order of the tables and figures.
KINDS = ("projection", "attention", "elementwise", "embedding", "lm_head")


@dataclass(frozen=True)
class Architecture:
    """The structure of a decoder-only transformer; sizes stay symbols (D, F, n_q, ...)."""

    gated_mlp: bool = True
    moe: bool = False
    norm: str = "rms"  # "rms" | "layer"
    activation: str = "silu"  # "silu" | "gelu" | "relu"
    position: str = "rope"  # "rope" | "learned"
    qkv_bias: bool = False
    linear_bias: bool = False  # every linear layer has a bias (OPT, GPT-2)
    tied_embeddings: bool = False
