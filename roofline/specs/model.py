"""Model shapes: a frozen :class:`ModelShape` (the counts, flags and data that the derivations
need, validated, with its :class:`~roofline.derive.architecture.Architecture`), read from a
Hugging Face ``config.json`` (:mod:`roofline.specs.hf_config` maps each family's keys) or a
shape file (``.toml``, :mod:`roofline.specs.shape`); the shipped presets by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from ..derive.architecture import Architecture
from ..errors import SpecError, UnknownNameError
from ._shipped import shipped_files
from .counts import LIMITS, REQUIRED_SHAPE, check_count
from .shape_rules import check_experts, check_latent, check_linear, check_sparse, check_window
from .files import parse_json, read_text
from .hf_config import SUPPORTED_MODEL_TYPES, config_fields
from .quantization import Quantization, quantization
from .shape import shape_fields

__all__ = ["ModelShape", "SUPPORTED_MODEL_TYPES", "REQUIRED_SHAPE", "LIMITS", "load_model",
           "list_models", "read_model"]

# The chunk of the chunked gated delta rule: flash-linear-attention's chunk_gated_delta_rule and
# HF's torch_chunk_gated_delta_rule (chunk_size=64), a kernel's constant, not the model's
LINEAR_CHUNK = 64


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
    # node-limited routing (DeepSeek-V3 §2.1.2): the routed experts in ``expert_groups`` groups,
    # each token's among the top ``groups_per_token`` of them (HF n_group, topk_group); 1 and 1:
    # no limit
    expert_groups: int = 1
    groups_per_token: int = 1
    # how the checkpoint stores its weights (a config's quantization_config,
    # :mod:`.quantization`); None: in the compute data type
    quantized: Quantization | None = None
    # --- issue 31 (appended) ---
    qk_norm: bool = False  # an RMSNorm over each query and key head (Qwen3, Gemma-3)
    attention_sinks: bool = False  # a learned sink logit per query head (gpt-oss)
    # a hybrid's Gated DeltaNet layers (Qwen3-Next); 0: none
    linear_layers: int = 0  # L_lin
    linear_key_heads: int = 0  # n_lk
    linear_value_heads: int = 0  # n_lv
    linear_key_head_dim: int = 0  # H_lk
    linear_value_head_dim: int = 0  # H_lv
    linear_conv_kernel: int = 0  # K_conv
    attn_output_gate: bool = False  # a sigmoid gate on the attention's output (Qwen3-Next)
    # DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2); 0: dense attention
    index_topk: int = 0  # k_top
    index_heads: int = 0  # n_idx
    index_head_dim: int = 0  # H_idx
    # chunked local attention (Llama 4): chunks of C_att tokens on window_layers of the layers;
    # 0: none
    attention_chunk_size: int = 0  # C_att
    local_rope: bool = False  # the rotary encoding on the local layers only (Llama 4's NoPE)
    qk_l2_norm: bool = False  # a weightless L2 norm of q and k on those layers (Llama 4)
    architecture: Architecture = field(init=False)

    def __post_init__(self) -> None:
        where = str(self.path)
        counts = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                  "intermediate_size", "vocab_size", "max_position", "num_experts",
                  "experts_per_token")
        for key in counts:
            check_count(getattr(self, key), f"{where}: {key}", LIMITS[key])
        if self.position_table_rows > LIMITS["position_table_rows"]:
            raise SpecError(f"{where}: position_table_rows",
                            f"must be at most {LIMITS['position_table_rows']:,}",
                            self.position_table_rows)
        config = self.path.suffix == ".json"  # its keys are Hugging Face's, a shape file's ours
        if self.num_heads % self.num_kv_heads:
            raise SpecError(f"{where}: {'num_key_value_heads' if config else 'num_kv_heads'}",
                            f"must divide the {self.num_heads} attention heads", self.num_kv_heads)
        if self.experts_per_token > self.num_experts:
            raise SpecError(f"{where}: {'num_experts_per_tok' if config else 'experts_per_token'}",
                            f"must be at most the {self.num_experts} experts",
                            self.experts_per_token)
        groups = "n_group" if config else "expert_groups"
        if self.num_experts % self.expert_groups:
            raise SpecError(f"{where}: {groups}", f"must divide the {self.num_experts} experts",
                            self.expert_groups)
        if not 1 <= self.groups_per_token <= self.expert_groups:
            raise SpecError(f"{where}: {'topk_group' if config else 'groups_per_token'}",
                            f"must be from 1 to the {self.expert_groups} expert groups",
                            self.groups_per_token)
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
        check_window(self, where)
        check_latent(self, where)
        check_experts(self, where)
        check_linear(self, where)
        check_sparse(self, where)
        arch = Architecture(gated_mlp=self.gated_mlp, moe=self.num_experts > 1, norm=self.norm,
                            activation=self.activation, position=self.position,
                            qkv_bias=self.qkv_bias, linear_bias=self.linear_bias,
                            tied_embeddings=self.tied_embeddings, window=self.window,
                            post_norms=self.post_norms, embed_scale=self.embed_scale,
                            mla=self.mla, q_lora=self.q_lora_rank > 0,
                            moe_layers="some" if self.moe_layers else "all",
                            shared_experts=self.shared_experts > 0,
                            shared_gate=self.shared_expert_gate,
                            quantized=self.quantized is not None, qk_norm=self.qk_norm,
                            sinks=self.attention_sinks,
                            linear_attention=self.linear_layers > 0,
                            attn_gate=self.attn_output_gate,
                            sparse_attention=self.index_topk > 0,
                            window_kind="chunked" if self.attention_chunk_size else "sliding",
                            local_rope=self.local_rope, qk_l2_norm=self.qk_l2_norm)
        object.__setattr__(self, "architecture", arch)

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

    @property
    def window(self) -> str:
        """Which layers have local attention (a sliding window or chunks): "none", "all" or
        "some" (``WINDOWS``)."""
        if (self.sliding_window is None and not self.attention_chunk_size) \
                or self.window_layers == 0:
            return "none"
        return "all" if self.window_layers == self.num_layers else "some"

    @property
    def local_span(self) -> int | None:
        """Tokens a local layer's query may see: the sliding window W or the chunk C_att."""
        return self.attention_chunk_size or self.sliding_window

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
        if self.window != "none" and self.attention_chunk_size:
            out["C_att"] = self.attention_chunk_size
        elif self.window != "none":
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
        if self.linear_layers:  # C_lin: the chunk of flash-linear-attention's kernels (64)
            out.update(L_lin=self.linear_layers, n_lk=self.linear_key_heads,
                       n_lv=self.linear_value_heads, H_lk=self.linear_key_head_dim,
                       H_lv=self.linear_value_head_dim, K_conv=self.linear_conv_kernel,
                       C_lin=LINEAR_CHUNK)
        if self.index_topk:
            out.update(k_top=self.index_topk, n_idx=self.index_heads, H_idx=self.index_head_dim)
        return out

    @cached_property
    def parameters(self) -> int:
        """Parameters in total: ``transformer.params`` of the architecture at this shape (the
        derivation's generated code, evaluated in integers)."""
        return _counted(self, "parameters")

    @cached_property
    def active_parameters(self) -> int:
        """Parameters a token uses: all but the routed experts it does not reach
        (``roofline.derive.transformer.active_parameter_count``); a dense model's are all."""
        return _counted(self, "active_parameters")

    def node_limit(self, nodes: int) -> float:
        """The nodes one token's routed experts may lie on when the experts are spread over
        ``nodes`` nodes: with node-limited routing its groups_per_token groups of expert_groups,
        a group on one node (more where it spans several: groups_per_token·nodes/expert_groups);
        infinite without a limit."""
        if self.expert_groups == 1:
            return float("inf")
        return self.groups_per_token * max(1.0, nodes / self.expert_groups)

    def beyond_context(self, tokens: int, what: str) -> str | None:
        """A warning's text where ``what`` (``"prompt: 32768 tokens"``) runs past the model's
        context (evaluated all the same); None within it."""
        if tokens <= self.max_position:
            return None
        return f"{what} is beyond {self.name}'s context of {self.max_position} tokens"

    @property
    def weight_dtype(self) -> str | None:
        """The data type a quantized checkpoint stores its layers' weights in; None: the
        compute data type (or a quantization not read: ``--weight-dtype`` must say)."""
        return self.quantized.dtype if self.quantized else None

    @property
    def quantization(self) -> str:
        """How the config says its weights are stored, in words; "" without a quantization."""
        return self.quantized.words if self.quantized else ""

    @property
    def embedding_dtype(self) -> str | None:
        """The data type a quantized checkpoint keeps its embedding table and LM head in."""
        return self.quantized.edge_dtype if self.quantized else None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the path read and the parameter count."""
        keys = ("name", "model_type", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
                "head_dim", "intermediate_size", "vocab_size", "max_position", "num_experts",
                "experts_per_token", "position_table_rows", "gated_mlp", "norm", "activation",
                "position", "qkv_bias", "linear_bias", "tied_embeddings", "sliding_window",
                "window_layers", "layer_pattern", "post_norms", "embed_scale", "source",
                "window", "attention_kind", "kv_lora_rank", "q_lora_rank", "rope_head_dim",
                "shared_experts", "shared_expert_size", "shared_expert_gate", "moe_layers",
                "dense_intermediate_size", "mtp_layers", "moe_pattern", "expert_groups",
                "groups_per_token", "weight_dtype", "quantization", "embedding_dtype",
                "qk_norm", "attention_sinks", "linear_layers", "linear_key_heads",
                "linear_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                "linear_conv_kernel", "attn_output_gate", "index_topk", "index_heads",
                "index_head_dim", "attention_chunk_size", "local_rope", "qk_l2_norm")
        out: dict[str, Any] = {key: getattr(self, key) for key in keys}
        q = self.quantized
        out["scale_bits_per_weight"] = float(q.scale_bits) if q else 0.0
        out.update(path=str(self.path), parameters=self.parameters,
                   active_parameters=self.active_parameters,
                   symbols={str(s): v for s, v in self.values().items()})
        return out


def read_model(path: str | Path, name: str | None = None) -> ModelShape:
    """Parse and validate one ``config.json`` (a folder holding one, as a download from the Hub
    is, or a shape file, ``.toml``: see :mod:`roofline.specs.shape`). The name, unless given,
    is the file's stem; a file called ``config.json`` is named by its ``_name_or_path``
    (``deepseek-ai/DeepSeek-V3`` → ``DeepSeek-V3``), else by its folder."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".toml":
        model_type, fields = shape_fields(path)
        config: dict[str, Any] = {}
    else:
        config = parse_json(read_text(path, "model config"), str(path))
        if not isinstance(config, dict):
            raise SpecError(str(path), "must hold a JSON object", type(config).__name__)
        model_type, fields = config_fields(config, path)
        fields.update(quantized=quantization(config, str(path)))
    return ModelShape(name=name or _name(path, config), path=path, model_type=model_type,
                      **fields)


def _name(path: Path, config: dict[str, Any]) -> str:
    """A model's name from its file: the stem, but not the ``config`` every download has."""
    if path.stem != "config":
        return path.stem
    given = config.get("_name_or_path")
    if isinstance(given, str) and given.strip("/ ") and given.isprintable():
        return given.rstrip("/").rsplit("/", 1)[-1][:100]
    folder = path.resolve().parent.name
    return folder if folder else path.stem


def list_models(directory: str | Path | None = None) -> list[ModelShape]:
    """Every model file (``*.json``) in ``directory`` (default: the shipped presets), by name."""
    files = (shipped_files("models", ".json") if directory is None
             else sorted(Path(directory).glob("*.json")))
    return sorted((read_model(f) for f in files), key=lambda m: m.name)


def load_model(name_or_path: str | Path, directory: str | Path | None = None) -> ModelShape:
    """A shipped preset by its exact name, or a user's config: anything with a ``/`` or ending
    ``.json`` is a path, and so is a folder (holding ``config.json``) that no preset is named
    after."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or "\\" in text \
            or text.endswith((".json", ".toml")):
        return read_model(text)
    files = (shipped_files("models", ".json") if directory is None
             else sorted(Path(directory).glob("*.json")))
    by_name = {f.stem: f for f in files}
    if text not in by_name and _is_folder(text):  # a download's folder, holding config.json
        return read_model(text)
    if text not in by_name:
        raise UnknownNameError("model", text, by_name)
    return read_model(by_name[text])


def _is_folder(text: str) -> bool:
    """Whether ``text`` names a folder (a name too long or otherwise unusable as a path names
    none: it is then an unknown model's name)."""
    try:
        return Path(text).is_dir()
    except (OSError, ValueError):
        return False


@cache
def _parameter_counts(arch: Architecture) -> dict[str, Any]:
    """The parameter counts of ``arch`` (``transformer.params``, ``moe.active_params``) as
    generated functions, kept in the user's cache."""
    from .. import codegen

    def make() -> str:
        from ..derive.transformer import active_parameter_count, parameter_count

        return codegen.module_source("Parameter counts.", {
            "parameters": parameter_count(arch), "active_parameters": active_parameter_count(arch)})
    return codegen.load(codegen.module_name("counts", arch), make).DATA


def _counted(model: ModelShape, what: str) -> int:
    from ..codegen import call

    return int(call(_parameter_counts(model.architecture)[what], model.values()))
