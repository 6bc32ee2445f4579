"""Reads of a ``config.json`` that several families share: the head dimension, per-layer lists
(``layer_types``, lists of layer indices) and the dense layers beside MoE ones, each error
naming the file and key (:mod:`roofline.specs.hf_config`, :mod:`roofline.specs.hf_recent`)."""

from __future__ import annotations

from ..errors import SpecError
from .hf_keys import ConfigKeys

__all__ = ["head_dim_of", "layer_kinds", "layer_types", "layer_list", "dense_layers",
           "sparse_step_layers", "qwen_experts", "short"]

WINDOW_KINDS = ("sliding_attention", "full_attention")


def head_dim_of(c: ConfigKeys, width: int, heads: int) -> int:
    """``head_dim`` where the config gives it (Gemma-style configs give one that does not
    divide the width), else width / heads, which must then be whole."""
    if c.config.get("head_dim") is not None:
        return c.int("head_dim")
    if width % heads:
        raise SpecError(f"{c.where}: num_attention_heads",
                        f"must divide the width {width} when head_dim is not given", heads)
    return width // heads


def layer_kinds(c: ConfigKeys, layers: int, valid: tuple[str, ...] = WINDOW_KINDS) -> list[str]:
    """A ``layer_types`` list: one entry per layer, each one of ``valid``."""
    where, kinds = f"{c.where}: layer_types", c.config["layer_types"]
    if not isinstance(kinds, list) or len(kinds) != layers:
        raise SpecError(where, f"must be a list of {layers} entries (one per layer)",
                        short(kinds))
    bad = next((k for k in kinds if k not in valid), None)
    if bad is not None:
        raise SpecError(where, f"entries must be one of {', '.join(valid)}", short(bad))
    return kinds


def layer_types(c: ConfigKeys, layers: int) -> int:
    """Windowed layers of a ``layer_types`` list: one entry per layer, each
    ``sliding_attention`` or ``full_attention``."""
    return layer_kinds(c, layers).count("sliding_attention")


def dense_layers(width: int, moe: list[int], layers: int) -> dict[str, int]:
    """``moe_layers`` and ``dense_intermediate_size`` where some layers are dense."""
    if len(moe) == layers:
        return {}
    return dict(moe_layers=len(moe), dense_intermediate_size=width)


def layer_list(c: ConfigKeys, key: str, layers: int) -> set[int]:
    """A list of layer indices (absent or null: none), each an integer from 0 to layers − 1."""
    value = c.config.get(key)
    if value is None:
        return set()
    if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int)
                                          or not 0 <= i < layers for i in value):
        raise SpecError(f"{c.where}: {key}", f"must be a list of layer indices from 0 to "
                        f"{layers - 1}", short(value))
    return set(value)


def sparse_step_layers(c: ConfigKeys, layers: int) -> tuple[list[int], str]:
    """The layers with experts as Qwen2-MoE and Qwen3-MoE decide them (HF
    ``Qwen2MoeDecoderLayer``, ``Qwen3MoeDecoderLayer``: layer i unless it is in
    ``mlp_only_layers`` or (i + 1) is not a multiple of ``decoder_sparse_step``), and which, in
    words."""
    step = c.int("decoder_sparse_step", 1)
    dense = layer_list(c, "mlp_only_layers", layers)
    moe = [i for i in range(layers) if i not in dense and (i + 1) % step == 0]
    words = "every layer" if len(moe) == layers else (
        f"{len(moe)} of {layers} layers (decoder_sparse_step {step}"
        + (f", mlp_only_layers {sorted(dense)}" if dense else "") + ")")
    return moe, words


def qwen_experts(c: ConfigKeys, dense_width: int, layers: int,
                 shared: bool) -> dict[str, object]:
    """The experts of a Qwen MoE model (Qwen2-MoE, Qwen3-MoE, Qwen3-Next): ``num_experts`` of
    ``moe_intermediate_size``, the top ``num_experts_per_tok``, on the layers
    :func:`sparse_step_layers` picks (the others dense, of ``dense_width``), and where
    ``shared`` one shared expert of ``shared_expert_intermediate_size`` behind a sigmoid gate;
    none where no layer has experts."""
    moe, words = sparse_step_layers(c, layers)
    if not moe:
        return {}
    out: dict[str, object] = dict(
        num_experts=c.int("num_experts"), experts_per_token=c.int("num_experts_per_tok"),
        intermediate_size=c.int("moe_intermediate_size"), moe_pattern=words,
        **dense_layers(dense_width, moe, layers))
    if shared:
        out.update(shared_experts=1, shared_expert_gate=True,
                   shared_expert_size=c.int("shared_expert_intermediate_size"))
    return out


def short(value: object) -> object:
    """A JSON value short enough for a one-line message."""
    text = repr(value)
    return value if len(text) <= 80 else f"{type(value).__name__} {text[:60]}…"
