"""A ``config.json``'s ``quantization_config`` → how its weights are stored.

A checkpoint that says how its weights are quantized is run that way: DeepSeek-V3 ships fp8
weights, a GPTQ or AWQ export 4-bit integers. The weight dtype read here is the model's default;
``--weight-dtype`` (``weight_dtype=``) still overrides it, and the outputs say where it came
from. The keys are those of Hugging Face ``transformers``' quantization configurations
(``transformers/utils/quantization_config.py``: ``GPTQConfig.bits``/``group_size``,
``AwqConfig.bits``/``group_size``, ``BitsAndBytesConfig.load_in_4bit/load_in_8bit``,
``FbgemmFp8Config``, ``FineGrainedFP8Config`` (``quant_method: fp8``, DeepSeek-V3's, with its
``weight_block_size``), ``CompressedTensorsConfig`` (``config_groups``: each group's
``weights.num_bits``, ``type``, ``strategy``, ``group_size``, ``symmetric``), ``Mxfp4Config``):

    quant_method          weights               scales per weight (bits)
    fp8                   fp8                   32 / (block rows · block columns): 1/512
    fbgemm_fp8            fp8                   per output channel (not counted)
    gptq, awq             int4 / int8 by bits   (16 + bits) / group_size: 5/32 at 4-bit, 128
                                                (AWQ with zero_point false: 16 / group_size)
    bitsandbytes          int4 / int8           4-bit: 32/64, or with double quantization
                                                8/64 + 32/(64·256); 8-bit: per row (not counted)
    compressed-tensors    fp8 / int4 / int8     strategy group: (16 + bits if asymmetric) / size
    mxfp4                 fp4                   8 / 32 (one E8M0 scale per 32 elements, OCP MX)

A group's scale is 16-bit (GPTQ's and AWQ's ``scales`` are fp16, and their zero points packed at
the weights' width: AutoGPTQ's ``qzeros``, AutoAWQ's ``qzeros``); a bitsandbytes 4-bit block of
64 has an fp32 absmax (Dettmers et al. 2023, QLoRA, arXiv 2305.14314 §2: 0.5 bit per
parameter, 0.127 with double quantization). A scale per output channel or per tensor is a
hundredth of a bit or less per weight and is left out. ``group_size: -1`` is per channel.

The embedding table and the LM head stay at the checkpoint's own width (``torch_dtype``, bf16
where the config gives none): GPTQ, AWQ and bitsandbytes skip ``lm_head``, compressed-tensors
lists it in ``ignore``, DeepSeek-V3's fp8 and gpt-oss's mxfp4 keep ``embed_tokens`` and
``lm_head`` in bf16. A method not in the table is read as "unread": the model loads, and a
setting without ``--weight-dtype`` is a :class:`SpecError` naming it (a bound computed with
bf16 weights for a quantized checkpoint would be wrong without a word).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import SpecError

__all__ = ["METHODS", "Quantization", "quantization", "TORCH_DTYPES"]

METHODS = ("fp8", "fbgemm_fp8", "gptq", "awq", "bitsandbytes", "compressed-tensors", "mxfp4")
_BITS = {4: "int4", 8: "int8"}
# a config's torch_dtype (or transformers' newer "dtype") → ours
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_SCALE_BITS = 16  # GPTQ's, AWQ's and compressed-tensors' group scales are fp16 or bf16


@dataclass(frozen=True)
class Quantization:
    """How a quantized checkpoint stores its weights: the layers' data type (None: a method this
    module does not read, named in ``method``), the scales' bits per weight on top of it, the
    embedding table's and LM head's data type, and the config's words for all of it."""

    method: str
    dtype: str | None
    scale_bits: Fraction
    edge_dtype: str
    words: str

    def check(self, given: str | None, where: str) -> None:
        """A method not read needs the weights' data type ``given`` (``--weight-dtype``)."""
        if self.dtype is None and given is None:
            raise SpecError(f"{where}: quantization_config", f"not read (methods read: "
                            f"{', '.join(METHODS)}): give the weights' data type with "
                            "--weight-dtype", self.words.split(": ", 1)[1].removesuffix(
                                ", not read"))

    @property
    def bytes_per_weight(self) -> Fraction:
        """Bytes of one layer weight with its share of the scales (needs ``dtype``)."""
        from .dtypes import bytes_per_element

        assert self.dtype is not None
        return bytes_per_element(self.dtype) + self.scale_bits / 8


def quantization(config: Mapping[str, Any], where: str) -> Quantization | None:
    """The checkpoint's quantization; None without a ``quantization_config``."""
    q = config.get("quantization_config")
    if q is None:
        return None
    key = f"{where}: quantization_config"
    if not isinstance(q, dict):
        raise SpecError(key, "must be a JSON object", type(q).__name__)
    torch = config.get("torch_dtype", config.get("dtype", "bfloat16"))
    if torch not in TORCH_DTYPES:
        raise SpecError(f"{where}: torch_dtype", f"must be one of {', '.join(TORCH_DTYPES)}",
                        torch)
    edges = TORCH_DTYPES[torch]
    method = q.get("quant_method")
    if method not in METHODS:
        return Quantization(str(method), None, Fraction(0), edges,
                            f"quantization_config: {method}, not read")
    dtype, scales, words = _read(method, q, key)
    words = f"quantization_config: {words}" + ("" if dtype else ", not read")
    if scales and "bits of" not in words:
        words += f" + {_bits(scales)} bits of scales per weight"
    _unconverted(q, key)
    return Quantization(method, dtype, scales, edges, words)


def _unconverted(q: Mapping[str, Any], key: str) -> None:
    """A warning naming the modules besides the embeddings and LM head that the checkpoint keeps
    unquantized (``modules_to_not_convert``; compressed-tensors' ``ignore``): one weight data
    type counts them at the quantized width, fewer bytes than they hold (the time stays a
    bound, the memory check is optimistic)."""
    import warnings

    field = "ignore" if "ignore" in q else "modules_to_not_convert"
    kept = q.get(field) or []
    others = [m for m in kept if isinstance(m, str)
              and not any(edge in m for edge in ("lm_head", "embed"))] if isinstance(kept, list) \
        else [kept]
    if others:
        warnings.warn(f"{key}.{field}: {', '.join(map(str, others[:3]))}"
                      f"{' and more' if len(others) > 3 else ''} kept unquantized by the "
                      "checkpoint are counted at the quantized width (fewer bytes than they "
                      "hold: the time is still a bound, the memory check optimistic)",
                      stacklevel=3)


def _read(method: str, q: Mapping[str, Any], key: str) -> tuple[str | None, Fraction, str]:
    if method == "fp8":
        block = q.get("weight_block_size")
        if block is None:
            return "fp8", Fraction(0), "fp8"
        if (not isinstance(block, list) or len(block) != 2
                or not all(_positive(b) for b in block)):
            raise SpecError(f"{key}.weight_block_size", "must be two positive integers", block)
        return "fp8", Fraction(32, block[0] * block[1]), f"fp8, blocks {block[0]}×{block[1]}"
    if method == "fbgemm_fp8":
        return "fp8", Fraction(0), "fbgemm_fp8"
    if method == "mxfp4":
        return "fp4", Fraction(8, 32), "mxfp4"
    if method == "bitsandbytes":
        return _bitsandbytes(q, key)
    if method == "compressed-tensors":
        return _compressed(q, key)
    bits = q.get("bits", q.get("w_bit"))
    dtype = _integer(bits, f"{key}.bits", method)
    group = q.get("group_size", q.get("q_group_size", 128))
    if group == -1:
        return dtype, Fraction(0), f"{method}, {bits}-bit, per channel"
    if not _positive(group):
        raise SpecError(f"{key}.group_size", "must be a positive integer or -1 (per channel)",
                        group)
    zeros = 0 if q.get("zero_point") is False else bits  # AWQ's symmetric form has none
    scales = Fraction(_SCALE_BITS + zeros, group)
    return (dtype, scales, f"{method}, {bits}-bit, groups of {group} + {_bits(scales)} bits of "
            f"scales{' and zeros' if zeros else ''} per weight")


def _positive(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n > 0


def _bits(f: Fraction) -> str:
    """A fraction of a bit in words: 5/32 → "0.156"."""
    return f"{float(f):.3g}"


def _integer(bits: object, where: str, method: str) -> str:
    if isinstance(bits, bool) or bits not in _BITS:
        raise SpecError(where, f"{method} weights of 4 or 8 bits are read", bits)
    return _BITS[bits]  # type: ignore[index]


def _bitsandbytes(q: Mapping[str, Any], key: str) -> tuple[str, Fraction, str]:
    if q.get("load_in_4bit") is True:
        double = q.get("bnb_4bit_use_double_quant") is True
        scales = Fraction(8, 64) + Fraction(32, 64 * 256) if double else Fraction(32, 64)
        kind = q.get("bnb_4bit_quant_type", "fp4")
        return "int4", scales, f"bitsandbytes {kind}" + (", double-quantized" if double else "")
    if q.get("load_in_8bit") is True:
        return "int8", Fraction(0), "bitsandbytes 8-bit"
    raise SpecError(f"{key}.load_in_4bit", "bitsandbytes needs load_in_4bit or load_in_8bit "
                    "true", q.get("load_in_4bit"))


def _compressed(q: Mapping[str, Any], key: str) -> tuple[str | None, Fraction, str]:
    """compressed-tensors: every group's weights of one kind (a checkpoint whose groups differ
    is not read: one weight dtype cannot describe it)."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise SpecError(f"{key}.config_groups", "must be a non-empty object of groups",
                        type(groups).__name__)
    kinds = set()
    for name, group in groups.items():
        where = f"{key}.config_groups.{name}.weights"
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(weights, dict):
            raise SpecError(where, "must be an object", weights)
        bits, kind = weights.get("num_bits"), weights.get("type")
        if kind == "float" and bits == 8:
            dtype = "fp8"
        elif kind == "int":
            dtype = _integer(bits, f"{where}.num_bits", "compressed-tensors")
        else:
            raise SpecError(where, "must be 8-bit floats or 4- or 8-bit integers",
                            f"{kind} {bits}-bit")
        scales = Fraction(0)
        if weights.get("strategy") == "group":
            size = weights.get("group_size")
            if not _positive(size):
                raise SpecError(f"{where}.group_size", "must be a positive integer", size)
            zero = 0 if weights.get("symmetric", True) else bits
            scales = Fraction(_SCALE_BITS + zero, size)
        kinds.add((dtype, scales))
    if len(kinds) > 1:  # one weight dtype cannot describe it: --weight-dtype must
        return None, Fraction(0), "compressed-tensors, groups of different weight types"
    ((dtype, scales),) = kinds
    return dtype, scales, f"compressed-tensors, {dtype}"
