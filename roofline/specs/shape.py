"""Shape files: a model of a family that :mod:`roofline.specs.model` does not read from its
``config.json``, described in the project's own schema. Parse (TOML) → validate → the same
frozen :class:`~roofline.specs.model.ModelShape` (made by :func:`roofline.specs.model.read_model`).

A shape file is TOML whose keys are the fields of ``roofline model show --json``::

    family = "internlm2"                 # a label, shown as the model type (default "shape")
    source = "HF internlm/internlm2-7b config.json"   # required: where the numbers come from
    hidden_size = 4096                   # D          (required)
    num_layers = 32                      # L          (required)
    num_heads = 32                       # n_q        (required)
    intermediate_size = 14336            # F          (required; per expert for MoE)
    vocab_size = 92544                   # V          (required)
    max_position = 32768                 # context limit, tokens (required)
    num_kv_heads = 8                     # n_kv       (default num_heads)
    head_dim = 128                       # H          (default hidden_size / num_heads)
    sliding_window = 4096                # W, tokens  (default: no window)
    window_layers = 32                   # L_w        (default: every layer, with a window)

and, with their defaults (a Llama-style decoder): ``gated_mlp = true``, ``activation =
"silu"`` (silu | gelu | relu), ``norm = "rms"`` (rms | layer), ``position = "rope"`` (rope |
learned), ``position_table_rows = 0`` (learned positions' rows), ``qkv_bias``, ``linear_bias``,
``tied_embeddings``, ``post_norms``, ``embed_scale``, ``qk_norm`` (a per-head RMSNorm on
queries and keys), ``attention_sinks`` (a learned sink logit per query head) (all false), ``num_experts = 1``,
``experts_per_token = 1``, ``expert_groups = 1`` and ``groups_per_token = 1`` (node-limited
routing: a token's experts among the top groups_per_token of expert_groups groups; 1 and 1:
none), ``layer_pattern = ""`` (which layers are windowed, in words); for
multi-head latent attention ``kv_lora_rank`` (d_c), ``rope_head_dim`` (H_r), ``q_lora_rank``
(d_cq; 0: queries projected directly); for shared experts and dense layers ``shared_experts``
(n_sh), ``shared_expert_size`` (F_sh), ``shared_expert_gate = false``, ``moe_layers`` (L_moe; 0:
every layer has experts), ``dense_intermediate_size`` (F_dense), ``moe_pattern = ""``
(all 0 by default: none). A window and latent attention together are refused (no published
model has both).
Unknown keys, missing required keys and values of the wrong TOML type are errors, each one line
naming the file and key; the values are then checked as a config's are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import SpecError, UnknownNameError
from .files import check_printable, parse_toml, read_text
from .counts import LIMITS, REQUIRED_SHAPE

__all__ = ["shape_fields", "SHAPE_KEYS"]

_NEW = ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "shared_experts", "shared_expert_size",
        "moe_layers", "dense_intermediate_size", "mtp_layers")  # issue 12's; 0: none
_INTS = (*REQUIRED_SHAPE, "num_kv_heads", "head_dim", "sliding_window", "window_layers",
         "num_experts", "experts_per_token", "position_table_rows", "expert_groups",
         "groups_per_token", *_NEW)
_BOOLS = ("gated_mlp", "qkv_bias", "linear_bias", "tied_embeddings", "post_norms",
          "embed_scale", "shared_expert_gate", "qk_norm", "attention_sinks")
_TEXTS = ("family", "source", "activation", "norm", "position", "layer_pattern", "moe_pattern")
SHAPE_KEYS = (*_INTS, *_BOOLS, *_TEXTS)
_MAY_BE_ZERO = ("window_layers", "position_table_rows", *_NEW)


def shape_fields(path: str | Path) -> tuple[str, dict[str, Any]]:
    """Parse and validate one shape file: its family (the model type shown) and the fields of
    a :class:`~roofline.specs.model.ModelShape` (which :func:`~roofline.specs.model.read_model`
    makes of them)."""
    path = Path(path)
    where = str(path)
    data = parse_toml(read_text(path, "model shape file"), where)
    unknown = sorted(set(data) - set(SHAPE_KEYS))
    if unknown:
        raise SpecError(where, str(UnknownNameError("key", unknown[0], SHAPE_KEYS)))
    missing = [k for k in (*REQUIRED_SHAPE, "source") if k not in data]
    if missing:
        raise SpecError(f"{where}: {missing[0]}", "missing required key")
    fields: dict[str, Any] = {}
    for key, value in data.items():
        if key in _INTS:
            fields[key] = _integer(value, f"{where}: {key}", key)
        elif key in _BOOLS:
            if not isinstance(value, bool):
                raise SpecError(f"{where}: {key}", "must be true or false", value)
            fields[key] = value
        elif not isinstance(value, str) or (key == "source" and not value.strip()):
            raise SpecError(f"{where}: {key}", "must be a non-empty string" if key == "source"
                            else "must be a string", value)
        else:
            fields[key] = check_printable(value, f"{where}: {key}", lines=key == "source")
    fields.setdefault("num_kv_heads", fields["num_heads"])
    if "head_dim" not in fields:
        if fields["hidden_size"] % fields["num_heads"]:
            raise SpecError(f"{where}: num_heads", f"must divide hidden_size "
                            f"{fields['hidden_size']} when head_dim is not given",
                            fields["num_heads"])
        fields["head_dim"] = fields["hidden_size"] // fields["num_heads"]
    if "sliding_window" in fields:
        fields.setdefault("window_layers", fields["num_layers"])
        fields.setdefault("layer_pattern", "every layer" if fields["window_layers"]
                          == fields["num_layers"] else "")
    return fields.pop("family", "shape"), fields


def _integer(value: object, where: str, key: str) -> int:
    """A TOML integer (not a bool, not a float): positive, or ≥ 0 where 0 means none."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(where, "must be an integer", value)
    low = 0 if key in _MAY_BE_ZERO else 1
    if value < low:
        raise SpecError(where, "must be a positive integer" if low else "must be at least 0",
                        value)
    limit = LIMITS.get(key, 10**9)
    if value > limit:
        raise SpecError(where, f"must be at most {limit:,} (a plausible upper bound)", value)
    return value
