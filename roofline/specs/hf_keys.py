"""Typed reads of a Hugging Face ``config.json``'s keys: each value checked for its JSON type and
plausible range, each error naming the file and key (:mod:`roofline.specs.hf_config` maps a
family's keys to a shape's fields through them)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .counts import DEFAULT_LIMIT, LIMITS, check_count

__all__ = ["ConfigKeys"]

_ACTIVATIONS = {"relu": "relu", "silu": "silu", "swish": "silu"}  # and every "gelu*" → "gelu"

# A config's key → the field it becomes (for its limit); any other integer key: at most 10⁹.
_FIELD_OF_KEY = {
    "hidden_size": "hidden_size", "n_embd": "hidden_size", "word_embed_proj_dim": "hidden_size",
    "num_hidden_layers": "num_layers", "n_layer": "num_layers",
    "num_attention_heads": "num_heads", "n_head": "num_heads",
    "num_key_value_heads": "num_kv_heads", "head_dim": "head_dim",
    "intermediate_size": "intermediate_size", "ffn_dim": "intermediate_size",
    "n_inner": "intermediate_size", "vocab_size": "vocab_size",
    "max_position_embeddings": "max_position", "n_positions": "max_position",
    "num_local_experts": "num_experts", "num_experts_per_tok": "experts_per_token",
    "sliding_window": "sliding_window", "max_window_layers": "window_layers",
    "num_experts": "num_experts", "n_routed_experts": "num_experts",
    "moe_intermediate_size": "intermediate_size",
    "shared_expert_intermediate_size": "shared_expert_size", "n_shared_experts": "shared_experts",
    "kv_lora_rank": "kv_lora_rank", "q_lora_rank": "q_lora_rank",
    "qk_rope_head_dim": "rope_head_dim", "qk_nope_head_dim": "head_dim", "v_head_dim": "head_dim",
    "first_k_dense_replace": "num_layers", "moe_layer_freq": "num_layers",
    "decoder_sparse_step": "num_layers", "num_nextn_predict_layers": "mtp_layers",
}


class ConfigKeys:
    """Typed reads of a config's keys, each error naming the file and key."""

    def __init__(self, config: Mapping[str, Any], path: Path) -> None:
        self.config, self.where = config, str(path)

    def int(self, key: str, default: int | None = None) -> int:
        value = self.config.get(key)
        if value is None:  # absent or null: HF's default, where it has one
            if default is None:
                raise SpecError(f"{self.where}: {key}", "missing required key")
            return default
        maximum = LIMITS.get(_FIELD_OF_KEY.get(key, ""), DEFAULT_LIMIT)
        return check_count(value, f"{self.where}: {key}", maximum)

    def count(self, key: str, default: int = 0) -> int:
        """A count that may be 0 (a number of layers or experts); absent or null: ``default``."""
        value = self.config.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecError(f"{self.where}: {key}", "must be 0 or a positive integer", value)
        if value == 0:
            return 0
        maximum = LIMITS.get(_FIELD_OF_KEY.get(key, ""), DEFAULT_LIMIT)
        return check_count(value, f"{self.where}: {key}", maximum)

    def bool(self, key: str, default: bool) -> bool:
        value = self.config.get(key)
        if value is None:  # absent or null: HF's default, as for integers
            return default
        if not isinstance(value, bool):
            raise SpecError(f"{self.where}: {key}", "must be true or false", value)
        return value

    def activation(self, key: str, default: str) -> str:
        value = self.config.get(key, default)
        if isinstance(value, str) and value.startswith("gelu"):
            return "gelu"
        if isinstance(value, str) and value in _ACTIVATIONS:
            return _ACTIVATIONS[value]
        raise SpecError(f"{self.where}: {key}", "must be relu, silu (swish) or gelu*", value)

    def reject(self, key: str, unsupported: bool, why: str) -> None:
        """A flag that must be true or false (checked first), and must not be ``unsupported``."""
        if key in self.config and self.bool(key, not unsupported) == unsupported:
            raise SpecError(f"{self.where}: {key}", f"not supported: {why}", unsupported)
