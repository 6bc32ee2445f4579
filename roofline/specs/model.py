"""Model shapes, read from Hugging Face ``config.json`` files: parse (json) → validate → a
frozen :class:`ModelShape`.

Supported ``model_type`` families and how their keys map (HF ``transformers`` configuration
classes and modelling code are the source of each default):

    family    width, layers, heads       MLP width          MLP    norm   position  tied*
    llama     hidden_size, num_hidden_   intermediate_size  gated  RMS    rotary    False
    mistral   layers, num_attention_     intermediate_size  gated  RMS    rotary    False
    mixtral   heads (num_key_value_      intermediate_size  gated  RMS    rotary    False
    qwen2     heads, head_dim optional)  intermediate_size  gated  RMS    rotary    False
    phi3      as llama                   intermediate_size  gated  RMS    rotary    False
    gemma     as llama (head_dim: 256)   intermediate_size  gated  RMS    rotary    True
    gemma2    as gemma                   intermediate_size  gated  RMS×2  rotary    True
    opt       as llama                   ffn_dim            plain  Layer  learned   True
    gpt2      n_embd, n_layer, n_head    n_inner or 4·D     plain  Layer  learned   True
    gpt_neox  as llama                   intermediate_size  plain  Layer  rotary    False

(* ``tie_word_embeddings`` when the config does not say.) Mixtral adds ``num_local_experts`` and
``num_experts_per_tok``. The activation comes from ``hidden_act`` / ``activation_function``
(relu, silu or swish, gelu*; Gemma's ``hidden_activation`` first). The context limit is
``max_position_embeddings`` (``n_positions``). Phi-3 fuses q, k, v into one ``qkv_proj`` and
gate and up into ``gate_up_proj``: the same products, so the same cost. Gemma multiplies the
embeddings by sqrt(D) (an element-wise operation); Gemma-2 also norms each sublayer's output
(``post_attention_layernorm``, ``post_feedforward_layernorm``: four RMSNorms per layer, Gemma 2,
arXiv 2408.00118, §2). ``rope_scaling`` (Llama-3.1's ``llama3``, Phi-3's ``longrope``) rescales
the rotary frequencies only: accepted, no change to cost. Gemma-2's logit soft-capping
(``attn_logit_softcapping``, ``final_logit_softcapping``: c·tanh(x/c)) is ignored: on the scores
it is element-wise work inside the fused attention kernel, not counted as the softmax's
exponentials are not (FlashAttention-2, arXiv 2307.08691, §4.1), with no HBM traffic of its own;
on the logits it is B·V elements, under a millionth of a prefill's work.

Sliding-window attention (:mod:`roofline.derive.window`), as each family's HF modelling code
decides it: ``mistral`` every layer, window ``sliding_window`` (absent: 4096, MistralConfig's
default; null: none); ``mixtral`` and ``phi3`` every layer when ``sliding_window`` is set;
``qwen2`` only with ``use_sliding_window: true``, on layers i ≥ ``max_window_layers`` (default
28; Qwen2Attention's condition); ``gemma2`` on every other layer, the first included
(``sliding_window``, default 4096). A ``layer_types`` list (``sliding_attention`` /
``full_attention`` per layer), where a config has one, decides instead. ``llama``, ``gemma``,
``deepseek_v2`` and ``deepseek_v3`` have no window (a stray key is ignored, as HF does);
``qwen2_moe`` switches it as ``qwen2``.

Biases: every linear layer of opt, gpt2 and gpt_neox has one; qwen2 has biases on the Q, K, V
projections only (Qwen2Attention: ``bias=True`` for q/k/v, ``bias=False`` for o_proj). A learned
position table has ``max_position_embeddings + 2`` rows in OPT (OPTLearnedPositionalEmbedding's
offset of 2) and ``n_positions`` rows in GPT-2. Keys a config has that the shape does not need are
ignored; a key the shape needs and lacks is a :class:`SpecError`, and so is a key of the wrong
JSON type (a string ``"false"`` where ``false`` is meant, a list where a flag is meant; ``true``
is not the integer 1) or a count outside its plausible range (:data:`LIMITS`).

Mixtures of experts with shared experts and dense layers, and multi-head latent attention
(:mod:`roofline.derive.moe`, :mod:`roofline.derive.mla`):

    family       attention                       experts, per MoE layer       dense layers
    qwen2_moe    as qwen2 (Q, K, V biases)       num_experts of               off
                                                 moe_intermediate_size,       decoder_sparse_step
                                                 num_experts_per_tok; one     and in
                                                 shared expert of             mlp_only_layers, of
                                                 shared_expert_intermediate_  intermediate_size
                                                 size behind a sigmoid gate
    deepseek_v2  MLA: kv_lora_rank (d_c),        n_routed_experts of          the first
    deepseek_v3  q_lora_rank (d_cq; null: none), moe_intermediate_size,       first_k_dense_replace
                 qk_rope_head_dim (H_r),         num_experts_per_tok;         and those off
                 qk_nope_head_dim = v_head_dim   n_shared_experts of the      moe_layer_freq, of
                 (H)                             same width                   intermediate_size

as HF's ``Qwen2MoeDecoderLayer`` (layer i has experts unless i is in ``mlp_only_layers`` or
(i + 1) is not a multiple of ``decoder_sparse_step``) and ``DeepseekV2DecoderLayer`` (layer i has
experts when ``n_routed_experts`` is set, i ≥ ``first_k_dense_replace`` and i is a multiple of
``moe_layer_freq``) decide. DeepSeek's ``num_key_value_heads`` plays no part in latent attention
(each head's keys and values come from the latent) and is ignored, as HF does; a
``v_head_dim`` other than ``qk_nope_head_dim`` is refused (no published model has one); routing
details (``topk_method``, ``n_group``, ``scoring_func``, ``routed_scaling_factor``) are
element-wise work on B·T·n_e scores, not counted. DeepSeek-V3's multi-token-prediction module
(``num_nextn_predict_layers``: one more layer, used in training and for speculative decoding)
is not part of the model that a prefill runs and is not counted (DeepSeek-V3 reports 671B
parameters without it, 685B with it); the shape keeps the number (``mtp_layers``). Its router's
``e_score_correction_bias`` (n_e numbers per MoE layer, adjusted by a rule during training,
DeepSeek-V3 §2.1.2, a buffer in HF's ``DeepseekV3TopkRouter``) is not counted either. YaRN's
``rope_scaling`` changes the rotary frequencies only: accepted, no change to cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..derive.architecture import Architecture
from ..errors import SpecError, UnknownNameError
from ._shipped import shipped_files
from .files import parse_json, read_text

__all__ = ["ModelShape", "SUPPORTED_MODEL_TYPES", "REQUIRED_SHAPE", "LIMITS", "load_model",
           "list_models", "read_model"]

_GATED = ("llama", "mistral", "mixtral", "qwen2", "phi3")
SUPPORTED_MODEL_TYPES = (*_GATED, "gemma", "gemma2", "opt", "gpt2", "gpt_neox", "qwen2_moe",
                         "deepseek_v2", "deepseek_v3")
# What a model of any other family needs, in a shape file (:mod:`roofline.specs.shape`).
REQUIRED_SHAPE = ("hidden_size", "num_layers", "num_heads", "intermediate_size", "vocab_size",
                  "max_position")
_ACTIVATIONS = {"relu": "relu", "silu": "silu", "swish": "silu"}  # and every "gelu*" → "gelu"

# The largest plausible value of each count of the shape, an order of magnitude or more above
# any published model (GPT-3: D = 12288, L = 96, V = 50257; Llama 3: V = 128256): a typo or a
# hostile file is caught before a number of hundreds of digits reaches the formulas.
LIMITS: dict[str, int] = {
    "hidden_size": 10**6, "num_layers": 10**4, "num_heads": 10**5, "num_kv_heads": 10**5,
    "head_dim": 10**5, "intermediate_size": 10**7, "vocab_size": 10**8,
    "max_position": 10**9, "num_experts": 10**5, "experts_per_token": 10**5,
    "position_table_rows": 10**9 + 2, "sliding_window": 10**9, "window_layers": 10**4,
    "kv_lora_rank": 10**6, "q_lora_rank": 10**6, "rope_head_dim": 10**5,
    "shared_experts": 10**5, "shared_expert_size": 10**7, "moe_layers": 10**4,
    "dense_intermediate_size": 10**7, "mtp_layers": 10**4,
}
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
_DEFAULT_LIMIT = 10**9


def _check_zero_or_count(value: object, where: str, maximum: int) -> int:
    """``value`` when it is 0 or a count in [1, maximum] (a field where 0 means none)."""
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return 0
    return _check_count(value, where, maximum)


def _check_count(value: object, where: str, maximum: int) -> int:
    """``value`` when it is an int (not a bool) in [1, maximum], else a :class:`SpecError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SpecError(where, "must be a positive integer", value)
    if value > maximum:
        shown = value if value < 10**30 else f"an integer of {len(str(value)):,} digits"
        raise SpecError(where, f"must be at most {maximum:,} (a plausible upper bound)", shown)
    return value


@dataclass(frozen=True)
class ModelShape:
    """The shape of a decoder-only transformer, with its :class:`Architecture` derived from the
    flags (never passed in)."""

    name: str
    path: Path
    model_type: str
    hidden_size: int  # D
    num_layers: int  # L
    num_heads: int  # n_q
    num_kv_heads: int  # n_kv
    head_dim: int  # H
    intermediate_size: int  # F (per expert for MoE)
    vocab_size: int  # V
    max_position: int  # context limit: max_position_embeddings / n_positions
    num_experts: int = 1  # n_e
    experts_per_token: int = 1  # n_a
    position_table_rows: int = 0  # T_pos: rows of a learned position table (learned only)
    gated_mlp: bool = True
    norm: str = "rms"  # "rms" | "layer"
    activation: str = "silu"  # "silu" | "gelu" | "relu"
    position: str = "rope"  # "rope" | "learned"
    qkv_bias: bool = False
    linear_bias: bool = False
    tied_embeddings: bool = False
    sliding_window: int | None = None  # W: keys a query of a windowed layer sees; None: none
    window_layers: int = 0  # layers with the window (L_w); all L when every layer has it
    layer_pattern: str = ""  # which layers are windowed, in words (for `model show`)
    post_norms: bool = False  # Gemma-2: norms after attention and the MLP too
    embed_scale: bool = False  # Gemma: embeddings multiplied by sqrt(D)
    source: str = ""  # where the shape comes from (a shape file's ``source``)
    # --- issue 12: latent attention, shared experts, dense layers (appended) ---
    kv_lora_rank: int = 0  # d_c: MLA's key-value latent; 0: not latent attention
    q_lora_rank: int = 0  # d_cq: MLA's query latent; 0: queries projected directly
    rope_head_dim: int = 0  # H_r: MLA's decoupled rotary key, shared by the heads
    shared_experts: int = 0  # n_sh: shared experts of every MoE layer
    shared_expert_size: int = 0  # F_sh: MLP width of one shared expert
    shared_expert_gate: bool = False  # a sigmoid gate on the shared experts' output (Qwen2-MoE)
    moe_layers: int = 0  # L_moe: layers with experts; 0: every layer (of a MoE model)
    dense_intermediate_size: int = 0  # F_dense: MLP width of the layers without experts
    mtp_layers: int = 0  # DeepSeek-V3's multi-token-prediction layers: not counted
    moe_pattern: str = ""  # which layers have experts, in words (for `model show`)
    architecture: Architecture = field(init=False)

    def __post_init__(self) -> None:
        where = str(self.path)
        counts = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                  "intermediate_size", "vocab_size", "max_position", "num_experts",
                  "experts_per_token")
        for key in counts:
            _check_count(getattr(self, key), f"{where}: {key}", LIMITS[key])
        if self.position_table_rows > LIMITS["position_table_rows"]:
            raise SpecError(f"{where}: position_table_rows",
                            f"must be at most {LIMITS['position_table_rows']:,}",
                            self.position_table_rows)
        if self.num_heads % self.num_kv_heads:
            raise SpecError(f"{where}: num_key_value_heads",
                            f"must divide the {self.num_heads} attention heads", self.num_kv_heads)
        if self.experts_per_token > self.num_experts:
            raise SpecError(f"{where}: num_experts_per_tok",
                            f"must be at most the {self.num_experts} experts",
                            self.experts_per_token)
        for key, valid in (("norm", ("rms", "layer")), ("activation", ("silu", "gelu", "relu")),
                           ("position", ("rope", "learned"))):
            if getattr(self, key) not in valid:
                raise SpecError(f"{where}: {key}", f"must be one of {', '.join(valid)}",
                                getattr(self, key))
        learned = self.position == "learned"
        if learned != (self.position_table_rows > 0) or self.position_table_rows < 0:
            raise SpecError(f"{where}: position_table_rows",
                            "must be positive for learned positions and 0 otherwise",
                            self.position_table_rows)
        self._check_window(where)
        self._check_latent(where)
        self._check_experts(where)
        arch = Architecture(gated_mlp=self.gated_mlp, moe=self.num_experts > 1, norm=self.norm,
                            activation=self.activation, position=self.position,
                            qkv_bias=self.qkv_bias, linear_bias=self.linear_bias,
                            tied_embeddings=self.tied_embeddings, window=self.window,
                            post_norms=self.post_norms, embed_scale=self.embed_scale,
                            mla=self.mla, q_lora=self.q_lora_rank > 0,
                            moe_layers="some" if self.moe_layers else "all",
                            shared_experts=self.shared_experts > 0,
                            shared_gate=self.shared_expert_gate)
        object.__setattr__(self, "architecture", arch)

    def _check_latent(self, where: str) -> None:
        """Latent attention's ranks: d_c and H_r together, d_cq only with them; no window."""
        for key in ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "mtp_layers"):
            _check_zero_or_count(getattr(self, key), f"{where}: {key}", LIMITS[key])
        if not self.mla:
            for key in ("q_lora_rank", "rope_head_dim"):
                if getattr(self, key):
                    raise SpecError(f"{where}: {key}", "needs kv_lora_rank (latent attention)",
                                    getattr(self, key))
            return
        if self.rope_head_dim == 0:
            raise SpecError(f"{where}: rope_head_dim",
                            "must be a positive integer with latent attention", 0)
        if self.sliding_window is not None:
            raise SpecError(f"{where}: sliding_window", "not supported with multi-head latent "
                            "attention (no published model has both)", self.sliding_window)

    def _check_experts(self, where: str) -> None:
        """Shared experts, their gate, and dense layers beside the MoE ones."""
        for key in ("shared_experts", "shared_expert_size", "moe_layers",
                    "dense_intermediate_size"):
            _check_zero_or_count(getattr(self, key), f"{where}: {key}", LIMITS[key])
        if not isinstance(self.shared_expert_gate, bool):
            raise SpecError(f"{where}: shared_expert_gate", "must be true or false",
                            self.shared_expert_gate)
        moe = self.num_experts > 1
        needs = [(key, getattr(self, key)) for key in ("shared_experts", "moe_layers")
                 if getattr(self, key)]
        if needs and not moe:
            raise SpecError(f"{where}: {needs[0][0]}", "needs num_experts > 1 (a mixture of "
                            "experts)", needs[0][1])
        if (self.shared_experts > 0) != (self.shared_expert_size > 0):
            raise SpecError(f"{where}: shared_expert_size", "must be positive with shared "
                            "experts and 0 without", self.shared_expert_size)
        if self.shared_expert_gate and not self.shared_experts:
            raise SpecError(f"{where}: shared_expert_gate", "needs shared experts", True)
        if self.moe_layers >= self.num_layers:
            raise SpecError(f"{where}: moe_layers", f"must be below the {self.num_layers} "
                            "layers (0: every layer has experts)", self.moe_layers)
        if (self.moe_layers > 0) != (self.dense_intermediate_size > 0):
            raise SpecError(f"{where}: dense_intermediate_size", "must be positive where some "
                            "layers are dense (moe_layers > 0) and 0 otherwise",
                            self.dense_intermediate_size)

    @property
    def mla(self) -> bool:
        """Whether the attention is multi-head latent attention (DeepSeek-V2, V3)."""
        return self.kv_lora_rank > 0

    @property
    def moe_layer_count(self) -> int:
        """Layers with experts: L_moe, or all L (0 for a dense model)."""
        if self.num_experts == 1:
            return 0
        return self.moe_layers or self.num_layers

    def _check_window(self, where: str) -> None:
        if self.sliding_window is None:
            if self.window_layers != 0:
                raise SpecError(f"{where}: window_layers", "must be 0 without a sliding window",
                                self.window_layers)
            return
        _check_count(self.sliding_window, f"{where}: sliding_window", LIMITS["sliding_window"])
        if isinstance(self.window_layers, bool) or not isinstance(self.window_layers, int) \
                or not 0 <= self.window_layers <= self.num_layers:
            raise SpecError(f"{where}: window_layers",
                            f"must be an integer from 0 to the {self.num_layers} layers",
                            self.window_layers)

    @property
    def window(self) -> str:
        """Which layers have the sliding window: "none", "all" or "some" (``WINDOWS``)."""
        if self.sliding_window is None or self.window_layers == 0:
            return "none"
        return "all" if self.window_layers == self.num_layers else "some"

    @property
    def attention_kind(self) -> str:
        """MHA (a key/value head per query head), MQA (one), GQA (groups in between), or MLA
        (multi-head latent attention: per-head keys and values from one latent)."""
        if self.mla:
            return "MLA"
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"

    def values(self) -> dict[str, int]:
        """The shape by the catalogue's symbol names (W with a window, L_w where only some
        layers have it)."""
        out = {"D": self.hidden_size, "F": self.intermediate_size, "n_q": self.num_heads,
               "n_kv": self.num_kv_heads, "H": self.head_dim, "L": self.num_layers,
               "V": self.vocab_size, "n_e": self.num_experts, "n_a": self.experts_per_token,
               "T_pos": self.position_table_rows}
        if self.window != "none":
            out["W"] = self.sliding_window  # type: ignore[assignment]
        if self.window == "some":
            out["L_w"] = self.window_layers
        if self.mla:
            out.update(d_c=self.kv_lora_rank, H_r=self.rope_head_dim)
            if self.q_lora_rank:
                out["d_cq"] = self.q_lora_rank
        if self.shared_experts:
            out.update(n_sh=self.shared_experts, F_sh=self.shared_expert_size)
        if self.moe_layers:
            out.update(L_moe=self.moe_layers, F_dense=self.dense_intermediate_size)
        return out

    @cached_property
    def parameters(self) -> int:
        """Parameters in total: ``transformer.params`` of the architecture at this shape (its
        derived form, evaluated exactly in integers)."""
        from ..evaluate import arith
        from ..evaluate.forms import forms

        return int(arith.value(forms(self.architecture)["parameters"], self.values(), exact=True))

    @cached_property
    def active_parameters(self) -> int:
        """Parameters a token uses: all but the routed experts it does not reach
        (``roofline.derive.moe.active_parameter_count``); a dense model's are all."""
        from ..evaluate import arith
        from ..evaluate.forms import forms

        return int(arith.value(forms(self.architecture)["active_parameters"], self.values(),
                               exact=True))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the path read and the parameter count."""
        keys = ("name", "model_type", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
                "head_dim", "intermediate_size", "vocab_size", "max_position", "num_experts",
                "experts_per_token", "position_table_rows", "gated_mlp", "norm", "activation",
                "position", "qkv_bias", "linear_bias", "tied_embeddings", "sliding_window",
                "window_layers", "layer_pattern", "post_norms", "embed_scale", "source",
                "window", "attention_kind", "kv_lora_rank", "q_lora_rank", "rope_head_dim",
                "shared_experts", "shared_expert_size", "shared_expert_gate", "moe_layers",
                "dense_intermediate_size", "mtp_layers", "moe_pattern")
        out: dict[str, Any] = {key: getattr(self, key) for key in keys}
        out.update(path=str(self.path), parameters=self.parameters,
                   active_parameters=self.active_parameters,
                   symbols={str(s): v for s, v in self.values().items()})
        return out


def read_model(path: str | Path, name: str | None = None) -> ModelShape:
    """Parse and validate one ``config.json`` (or a shape file, ``.toml``: see
    :mod:`roofline.specs.shape`); the name is the file's stem unless given."""
    path = Path(path)
    if path.suffix == ".toml":
        from .shape import read_shape

        return read_shape(path, name)
    config = parse_json(read_text(path, "model config"), str(path))
    if not isinstance(config, dict):
        raise SpecError(str(path), "must hold a JSON object", type(config).__name__)
    return _shape(config, path, name or path.stem)


def list_models(directory: str | Path | None = None) -> list[ModelShape]:
    """Every model file (``*.json``) in ``directory`` (default: the shipped presets), by name."""
    files = (shipped_files("models", ".json") if directory is None
             else sorted(Path(directory).glob("*.json")))
    return sorted((read_model(f) for f in files), key=lambda m: m.name)


def load_model(name_or_path: str | Path, directory: str | Path | None = None) -> ModelShape:
    """A shipped preset by its exact name, or a user's config: anything with a ``/`` or ending
    ``.json`` is a path."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or "\\" in text \
            or text.endswith((".json", ".toml")):
        return read_model(text)
    files = (shipped_files("models", ".json") if directory is None
             else sorted(Path(directory).glob("*.json")))
    by_name = {f.stem: f for f in files}
    if text not in by_name:
        raise UnknownNameError("model", text, by_name)
    return read_model(by_name[text])


# --- one family's keys -------------------------------------------------------------------
class _Config:
    """Typed reads of a config's keys, each error naming the file and key."""

    def __init__(self, config: Mapping[str, Any], path: Path) -> None:
        self.config, self.where = config, str(path)

    def int(self, key: str, default: int | None = None) -> int:
        value = self.config.get(key)
        if value is None:  # absent or null: HF's default, where it has one
            if default is None:
                raise SpecError(f"{self.where}: {key}", "missing required key")
            return default
        maximum = LIMITS.get(_FIELD_OF_KEY.get(key, ""), _DEFAULT_LIMIT)
        return _check_count(value, f"{self.where}: {key}", maximum)

    def count(self, key: str, default: int = 0) -> int:
        """A count that may be 0 (a number of layers or experts); absent or null: ``default``."""
        value = self.config.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecError(f"{self.where}: {key}", "must be 0 or a positive integer", value)
        if value == 0:
            return 0
        maximum = LIMITS.get(_FIELD_OF_KEY.get(key, ""), _DEFAULT_LIMIT)
        return _check_count(value, f"{self.where}: {key}", maximum)

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


def _gated(c: _Config, model_type: str) -> dict[str, Any]:
    D_, heads = c.int("hidden_size"), c.int("num_attention_heads")
    c.reject("attention_bias", True, "biases on q, k, v and o projections")
    c.reject("mlp_bias", True, "biases on the MLP projections")
    out = dict(hidden_size=D_, num_layers=c.int("num_hidden_layers"), num_heads=heads,
               num_kv_heads=c.int("num_key_value_heads", heads),
               head_dim=c.int("head_dim", _head_dim(c, D_, heads)),
               intermediate_size=c.int("intermediate_size"), vocab_size=c.int("vocab_size"),
               max_position=c.int("max_position_embeddings"),
               activation=c.activation("hidden_act", "silu"),
               tied_embeddings=c.bool("tie_word_embeddings", False),
               qkv_bias=model_type in ("qwen2", "qwen2_moe"))
    if model_type == "mixtral":
        out.update(num_experts=c.int("num_local_experts"),
                   experts_per_token=c.int("num_experts_per_tok"))
    out.update(_window(c, model_type, out["num_layers"]))
    return out


def _gemma(c: _Config, model_type: str) -> dict[str, Any]:
    """Gemma and Gemma-2: head_dim apart from D/n_q (GemmaConfig's default 256), GeGLU (the
    tanh GELU), tied embeddings, embeddings scaled by sqrt(D); Gemma-2 norms each sublayer's
    output too and alternates local and global attention (Gemma 2, arXiv 2408.00118, §2)."""
    D_, heads = c.int("hidden_size"), c.int("num_attention_heads")
    c.reject("attention_bias", True, "biases on q, k, v and o projections")
    act_key = "hidden_activation" if c.config.get("hidden_activation") is not None \
        else "hidden_act"
    layers = c.int("num_hidden_layers")
    return dict(hidden_size=D_, num_layers=layers, num_heads=heads,
                num_kv_heads=c.int("num_key_value_heads", heads),
                head_dim=c.int("head_dim", 256), intermediate_size=c.int("intermediate_size"),
                vocab_size=c.int("vocab_size"), max_position=c.int("max_position_embeddings"),
                activation=c.activation(act_key, "gelu_pytorch_tanh"),
                tied_embeddings=c.bool("tie_word_embeddings", True), embed_scale=True,
                post_norms=model_type == "gemma2", **_window(c, model_type, layers))


# HF's default window of each family that has one (None: a window only where the config sets one)
_WINDOW_DEFAULT = {"mistral": 4096, "mixtral": None, "phi3": None, "qwen2": 4096, "gemma2": 4096,
                   "qwen2_moe": 4096}
_QWEN2 = ("qwen2", "qwen2_moe")  # use_sliding_window and max_window_layers


def _window(c: _Config, model_type: str, layers: int) -> dict[str, Any]:
    """The sliding window and the layers that have it, as the family's HF code decides."""
    if model_type not in _WINDOW_DEFAULT:
        return {}
    if model_type in _QWEN2 and not c.bool("use_sliding_window", False):
        return {}
    key = "sliding_window"
    size = c.config[key] if key in c.config else _WINDOW_DEFAULT[model_type]
    if size is None:
        return {}
    size = _check_count(size, f"{c.where}: {key}", LIMITS["sliding_window"])
    if c.config.get("layer_types") is not None:
        local, pattern = _layer_types(c, layers), "as the config's layer_types"
    elif model_type in _QWEN2:
        first = c.int("max_window_layers", 28)
        local = max(0, layers - first)
        pattern = f"layers {first} to {layers - 1} (max_window_layers {first})"
    elif model_type == "gemma2":
        local, pattern = (layers + 1) // 2, "local and global alternate, the first local"
    else:
        local, pattern = layers, "every layer"
    if local == 0:
        return {}
    return dict(sliding_window=size, window_layers=local, layer_pattern=pattern)


def _layer_types(c: _Config, layers: int) -> int:
    """Windowed layers of a ``layer_types`` list: one entry per layer, each
    ``sliding_attention`` or ``full_attention``."""
    where, kinds = f"{c.where}: layer_types", c.config["layer_types"]
    valid = ("sliding_attention", "full_attention")
    if not isinstance(kinds, list) or len(kinds) != layers:
        raise SpecError(where, f"must be a list of {layers} entries (one per layer)",
                        _short(kinds))
    bad = next((k for k in kinds if k not in valid), None)
    if bad is not None:
        raise SpecError(where, f"entries must be one of {', '.join(valid)}", _short(bad))
    return kinds.count("sliding_attention")


def _opt(c: _Config, model_type: str) -> dict[str, Any]:
    D_, heads, positions = c.int("hidden_size"), c.int("num_attention_heads"), \
        c.int("max_position_embeddings")
    c.reject("do_layer_norm_before", False, "post-LayerNorm OPT (no final norm)")
    c.reject("_remove_final_layer_norm", True, "OPT without its final LayerNorm")
    if c.int("word_embed_proj_dim", D_) != D_:
        raise SpecError(f"{c.where}: word_embed_proj_dim",
                        f"not supported: must equal hidden_size {D_} (no project_in/out)",
                        c.config["word_embed_proj_dim"])
    return dict(hidden_size=D_, num_layers=c.int("num_hidden_layers"), num_heads=heads,
                num_kv_heads=heads, head_dim=_head_dim(c, D_, heads),
                intermediate_size=c.int("ffn_dim"), vocab_size=c.int("vocab_size"),
                max_position=positions, position_table_rows=positions + 2,
                activation=c.activation("activation_function", "relu"),
                tied_embeddings=c.bool("tie_word_embeddings", True), **_PLAIN_LEARNED)


def _gpt2(c: _Config, model_type: str) -> dict[str, Any]:
    D_, heads, positions = c.int("n_embd"), c.int("n_head"), c.int("n_positions")
    return dict(hidden_size=D_, num_layers=c.int("n_layer"), num_heads=heads,
                num_kv_heads=heads, head_dim=_head_dim(c, D_, heads),
                intermediate_size=c.int("n_inner", 4 * D_), vocab_size=c.int("vocab_size"),
                max_position=positions, position_table_rows=positions,
                activation=c.activation("activation_function", "gelu_new"),
                tied_embeddings=c.bool("tie_word_embeddings", True), **_PLAIN_LEARNED)


def _gpt_neox(c: _Config, model_type: str) -> dict[str, Any]:
    D_, heads = c.int("hidden_size"), c.int("num_attention_heads")
    c.reject("attention_bias", False, "GPT-NeoX attention without biases")
    return dict(hidden_size=D_, num_layers=c.int("num_hidden_layers"), num_heads=heads,
                num_kv_heads=heads, head_dim=_head_dim(c, D_, heads),
                intermediate_size=c.int("intermediate_size"), vocab_size=c.int("vocab_size"),
                max_position=c.int("max_position_embeddings"),
                activation=c.activation("hidden_act", "gelu"),
                tied_embeddings=c.bool("tie_word_embeddings", False),
                gated_mlp=False, norm="layer", linear_bias=True)


def _qwen2_moe(c: _Config, model_type: str) -> dict[str, Any]:
    """Qwen2-MoE: Qwen2's attention (Q, K, V biases, its window switches); in each MoE layer
    ``num_experts`` routed experts of ``moe_intermediate_size`` and one shared expert of
    ``shared_expert_intermediate_size`` behind a sigmoid gate (HF ``Qwen2MoeSparseMoeBlock``);
    the other layers dense, of ``intermediate_size`` (``Qwen2MoeDecoderLayer``)."""
    out = _gated(c, model_type)
    layers = out["num_layers"]
    step = c.int("decoder_sparse_step", 1)
    dense = _layer_list(c, "mlp_only_layers", layers)
    moe = [i for i in range(layers) if i not in dense and (i + 1) % step == 0]
    if not moe:
        return out
    words = "every layer" if len(moe) == layers else (
        f"{len(moe)} of {layers} layers (decoder_sparse_step {step}"
        + (f", mlp_only_layers {sorted(dense)}" if dense else "") + ")")
    out.update(num_experts=c.int("num_experts"), experts_per_token=c.int("num_experts_per_tok"),
               intermediate_size=c.int("moe_intermediate_size"), shared_experts=1,
               shared_expert_size=c.int("shared_expert_intermediate_size"),
               shared_expert_gate=True, moe_pattern=words,
               **_dense_layers(out["intermediate_size"], moe, layers))
    return out


def _dense_layers(width: int, moe: list[int], layers: int) -> dict[str, int]:
    """``moe_layers`` and ``dense_intermediate_size`` where some layers are dense."""
    if len(moe) == layers:
        return {}
    return dict(moe_layers=len(moe), dense_intermediate_size=width)


def _layer_list(c: _Config, key: str, layers: int) -> set[int]:
    """A list of layer indices (absent or null: none), each an integer from 0 to layers − 1."""
    value = c.config.get(key)
    if value is None:
        return set()
    if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int)
                                          or not 0 <= i < layers for i in value):
        raise SpecError(f"{c.where}: {key}", f"must be a list of layer indices from 0 to "
                        f"{layers - 1}", _short(value))
    return set(value)


def _deepseek(c: _Config, model_type: str) -> dict[str, Any]:
    """DeepSeek-V2 and V3: multi-head latent attention (``kv_lora_rank``, ``q_lora_rank`` or
    null, ``qk_rope_head_dim``, ``qk_nope_head_dim`` = ``v_head_dim``), no biases; MoE layers
    of ``n_routed_experts`` and ``n_shared_experts`` of ``moe_intermediate_size`` each from layer
    ``first_k_dense_replace`` on, every ``moe_layer_freq``-th; dense layers of
    ``intermediate_size`` (HF ``modeling_deepseek.py``)."""
    D_, heads, layers = c.int("hidden_size"), c.int("num_attention_heads"), \
        c.int("num_hidden_layers")
    c.reject("attention_bias", True, "biases on the latent attention's projections")
    nope, value = c.int("qk_nope_head_dim"), c.int("v_head_dim")
    if value != nope:
        raise SpecError(f"{c.where}: v_head_dim", f"not supported: must equal qk_nope_head_dim "
                        f"{nope} (one head dimension H)", value)
    q_rank = 0 if c.config.get("q_lora_rank") is None else c.int("q_lora_rank")
    width = c.int("intermediate_size")
    out = dict(hidden_size=D_, num_layers=layers, num_heads=heads, num_kv_heads=heads,
               head_dim=nope, intermediate_size=width, vocab_size=c.int("vocab_size"),
               max_position=c.int("max_position_embeddings"),
               activation=c.activation("hidden_act", "silu"),
               tied_embeddings=c.bool("tie_word_embeddings", False),
               kv_lora_rank=c.int("kv_lora_rank"), q_lora_rank=q_rank,
               rope_head_dim=c.int("qk_rope_head_dim"),
               mtp_layers=c.count("num_nextn_predict_layers"))
    if c.config.get("n_routed_experts") is None:
        return out  # DeepSeek's code: no routed experts, every layer dense
    experts = c.int("n_routed_experts")
    first, freq = c.count("first_k_dense_replace"), c.int("moe_layer_freq", 1)
    moe = [i for i in range(layers) if i >= first and i % freq == 0]
    if not moe:
        return out
    shared = c.count("n_shared_experts")
    expert = c.int("moe_intermediate_size")
    words = "every layer" if len(moe) == layers else (
        f"{len(moe)} of {layers} layers (first_k_dense_replace {first}, moe_layer_freq {freq})")
    out.update(num_experts=experts, experts_per_token=c.int("num_experts_per_tok"),
               intermediate_size=expert, shared_experts=shared,
               shared_expert_size=expert if shared else 0, moe_pattern=words,
               **_dense_layers(width, moe, layers))
    return out


_PLAIN_LEARNED = dict(gated_mlp=False, norm="layer", position="learned", linear_bias=True)
_FAMILIES: dict[str, Callable[[_Config, str], dict[str, Any]]] = {
    **{t: _gated for t in _GATED}, "gemma": _gemma, "gemma2": _gemma, "opt": _opt,
    "gpt2": _gpt2, "gpt_neox": _gpt_neox, "qwen2_moe": _qwen2_moe, "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek}


def _head_dim(c: _Config, width: int, heads: int) -> int:
    if width % heads:
        raise SpecError(f"{c.where}: num_attention_heads",
                        f"must divide the width {width} when head_dim is not given", heads)
    return width // heads


def _shape(config: Mapping[str, Any], path: Path, name: str) -> ModelShape:
    model_type = config.get("model_type")
    if model_type is None:
        raise SpecError(f"{path}: model_type", "missing required key")
    if not isinstance(model_type, str):
        raise SpecError(f"{path}: model_type",
                        f"must be a string, one of: {', '.join(SUPPORTED_MODEL_TYPES)}",
                        _short(model_type))
    if model_type not in _FAMILIES:
        raise SpecError(f"{path}: model_type",
                        f"unsupported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}; describe "
                        f"the model in a shape file (.toml, models/README.md) with "
                        f"{', '.join(REQUIRED_SHAPE)} and a source", model_type)
    fields = _FAMILIES[model_type](_Config(config, path), model_type)
    return ModelShape(name=name, path=path, model_type=model_type, **fields)


def _short(value: object) -> object:
    """A JSON value short enough for a one-line message."""
    text = repr(value)
    return value if len(text) <= 80 else f"{type(value).__name__} {text[:60]}…"
