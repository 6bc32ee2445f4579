"""The counts of a model shape: which a shape file must give, and the plausible range of each
(a typo or a hostile file is caught before a number of hundreds of digits reaches the
formulas)."""

from __future__ import annotations

from ..errors import SpecError

__all__ = ["REQUIRED_SHAPE", "LIMITS", "DEFAULT_LIMIT", "check_count", "check_zero_or_count"]

# What a model of any other family needs, in a shape file (:mod:`roofline.specs.shape`).
REQUIRED_SHAPE = ("hidden_size", "num_layers", "num_heads", "intermediate_size", "vocab_size",
                  "max_position")
# The largest plausible value of each count of the shape, an order of magnitude or more above
# any published model (GPT-3: D = 12288, L = 96, V = 50257; Llama 3: V = 128256): a typo or a
# hostile file is caught before a number of hundreds of digits reaches the formulas.
LIMITS: dict[str, int] = {
    "hidden_size": 10**6, "num_layers": 10**4, "num_heads": 10**5, "num_kv_heads": 10**5,
    "head_dim": 10**5, "intermediate_size": 10**7, "vocab_size": 10**8,
    "max_position": 10**9, "num_experts": 10**5, "experts_per_token": 10**5,
    "expert_groups": 10**5, "groups_per_token": 10**5,
    "position_table_rows": 10**9 + 2, "sliding_window": 10**9, "window_layers": 10**4,
    "kv_lora_rank": 10**6, "q_lora_rank": 10**6, "rope_head_dim": 10**5,
    "shared_experts": 10**5, "shared_expert_size": 10**7, "moe_layers": 10**4,
    "dense_intermediate_size": 10**7, "mtp_layers": 10**4,
    "linear_layers": 10**4, "linear_key_heads": 10**5, "linear_value_heads": 10**5,
    "linear_key_head_dim": 10**5, "linear_value_head_dim": 10**5, "linear_conv_kernel": 10**3,
    "index_topk": 10**9, "index_heads": 10**5, "index_head_dim": 10**5,
    "attention_chunk_size": 10**9,
}
DEFAULT_LIMIT = 10**9  # any other count


def check_zero_or_count(value: object, where: str, maximum: int) -> int:
    """``value`` when it is 0 or a count in [1, maximum] (a field where 0 means none)."""
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return 0
    return check_count(value, where, maximum)


def check_count(value: object, where: str, maximum: int) -> int:
    """``value`` when it is an int (not a bool) in [1, maximum], else a :class:`SpecError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SpecError(where, "must be a positive integer", value)
    if value > maximum:
        shown = value if value < 10**30 else f"an integer of {len(str(value)):,} digits"
        raise SpecError(where, f"must be at most {maximum:,} (a plausible upper bound)", shown)
    return value
