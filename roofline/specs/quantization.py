"""A ``config.json``'s ``quantization_config`` → the data type its weights are stored in.

A checkpoint that says how its weights are quantized is run that way: DeepSeek-V3 ships fp8
weights, a GPTQ or AWQ export 4-bit integers. The weight dtype read here is the model's default;
``--weight-dtype`` (``weight_dtype=``) still overrides it, and the outputs say where it came
from. The keys are those of Hugging Face ``transformers``' quantization configurations
(``transformers/utils/quantization_config.py``: ``GPTQConfig.bits``, ``AwqConfig.bits``,
``BitsAndBytesConfig.load_in_4bit/load_in_8bit``, ``FbgemmFp8Config``, ``FineGrainedFP8Config``
(``quant_method: fp8``, DeepSeek-V3's), ``CompressedTensorsConfig`` (``config_groups``: each
group's ``weights.num_bits`` and ``weights.type``), ``Mxfp4Config``):

    quant_method                        weights
    fp8, fbgemm_fp8                     fp8
    gptq, awq (bits or w_bit)           int4 / int8 by bits
    bitsandbytes                        int4 (load_in_4bit: nf4 or fp4) / int8 (load_in_8bit)
    compressed-tensors                  fp8 / int4 / int8 by the weights' num_bits and type
    mxfp4                               fp4

Group or block scales are not counted: one 16-bit scale per group of 128 weights adds 1/8 bit
to each (3 % of a 4-bit weight), one 32-bit scale per 128×128 block of fp8 weights 1/512 bit.
A method not in the table is a :class:`SpecError` naming it: a bound computed with bf16 weights
for a quantized checkpoint would be wrong without a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import SpecError

__all__ = ["METHODS", "quantized_weights"]

METHODS = ("fp8", "fbgemm_fp8", "gptq", "awq", "bitsandbytes", "compressed-tensors", "mxfp4")
_BITS = {4: "int4", 8: "int8"}


def quantized_weights(config: Mapping[str, Any], where: str) -> tuple[str | None, str]:
    """(the weights' data type, how the config says so in words); (None, "") without a
    ``quantization_config``."""
    q = config.get("quantization_config")
    if q is None:
        return None, ""
    key = f"{where}: quantization_config"
    if not isinstance(q, dict):
        raise SpecError(key, "must be a JSON object", type(q).__name__)
    method = q.get("quant_method")
    if method not in METHODS:
        raise SpecError(f"{key}.quant_method", f"not read: must be one of {', '.join(METHODS)} "
                        "(or remove the key and give --weight-dtype)", method)
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", f"quantization_config: {method}"
    if method == "mxfp4":
        return "fp4", "quantization_config: mxfp4"
    if method == "bitsandbytes":
        return _bitsandbytes(q, key)
    if method == "compressed-tensors":
        return _compressed(q, key)
    bits = q.get("bits", q.get("w_bit"))
    return _integer(bits, f"{key}.bits", method), f"quantization_config: {method}, {bits}-bit"


def _integer(bits: object, where: str, method: str) -> str:
    if isinstance(bits, bool) or bits not in _BITS:
        raise SpecError(where, f"{method} weights of 4 or 8 bits are read", bits)
    return _BITS[bits]  # type: ignore[index]


def _bitsandbytes(q: Mapping[str, Any], key: str) -> tuple[str, str]:
    if q.get("load_in_4bit") is True:
        return "int4", f"quantization_config: bitsandbytes {q.get('bnb_4bit_quant_type', 'fp4')}"
    if q.get("load_in_8bit") is True:
        return "int8", "quantization_config: bitsandbytes 8-bit"
    raise SpecError(f"{key}.load_in_4bit", "bitsandbytes needs load_in_4bit or load_in_8bit "
                    "true", q.get("load_in_4bit"))


def _compressed(q: Mapping[str, Any], key: str) -> tuple[str, str]:
    """compressed-tensors: every group's weights of one kind (a checkpoint whose groups differ
    is refused: one weight dtype describes it)."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise SpecError(f"{key}.config_groups", "must be a non-empty object of groups",
                        type(groups).__name__)
    kinds = set()
    for name, group in groups.items():
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(weights, dict):
            raise SpecError(f"{key}.config_groups.{name}.weights", "must be an object", weights)
        bits, kind = weights.get("num_bits"), weights.get("type")
        if kind == "float" and bits == 8:
            kinds.add("fp8")
        elif kind == "int":
            kinds.add(_integer(bits, f"{key}.config_groups.{name}.weights.num_bits",
                               "compressed-tensors"))
        else:
            raise SpecError(f"{key}.config_groups.{name}.weights", "must be 8-bit floats or 4- "
                            "or 8-bit integers", f"{kind} {bits}-bit")
    if len(kinds) > 1:
        raise SpecError(f"{key}.config_groups", "groups of different weight types: give "
                        "--weight-dtype", sorted(kinds))
    (dtype,) = kinds
    return dtype, f"quantization_config: compressed-tensors, {dtype}"
