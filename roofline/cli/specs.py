"""``roofline hardware list|show`` and ``roofline model list|show``: wiring only."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from ..tables import binary_size, render, si

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``hardware`` and ``model`` commands."""
    for command, what, run_list, run_show in (
        ("hardware", "hardware files (devices)", _hardware_list, _hardware_show),
        ("model", "model shapes (Hugging Face config.json presets)", _model_list, _model_show),
    ):
        parser = subparsers.add_parser(command, help=f"list or show {what}",
                                       description=f"List or show {what}.")
        actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        listing = actions.add_parser("list", help=f"list the shipped {what}")
        listing.add_argument("--json", action="store_true", help="print JSON")
        listing.set_defaults(run=run_list)
        show = actions.add_parser("show", help="show one, with every value and its source")
        suffix = ".toml" if command == "hardware" else ".json"
        show.add_argument("name", metavar="NAME|PATH",
                          help=f"a shipped name, or a path to a {suffix} file")
        show.add_argument("--json", action="store_true",
                          help="print JSON (SI base units: FLOP/s, bytes/s, bytes)"
                          if command == "hardware" else
                          "print JSON (the shape's fields, as integers and names)")
        show.set_defaults(run=run_show)


# --- hardware ------------------------------------------------------------------------------
def _hardware_list(args: argparse.Namespace) -> int:
    from ..specs.hardware import list_hardware

    devices = list_hardware()
    if args.json:
        return _print_json([hw.as_dict() for hw in devices])
    rows = [("NAME", "VENDOR", "KIND", "bf16 PEAK", "fp8 PEAK", "MEMORY BW", "MEMORY",
             "RIDGE bf16 (FLOP/byte)")]
    for hw in devices:
        peak = {d: _si(v, "FLOP/s") for d, v in hw.peak_flops.items()}
        ridge = f"{hw.ridge('bf16'):.1f}" if "bf16" in hw.peak_flops else "-"
        rows.append((hw.name, hw.vendor, hw.kind, peak.get("bf16", "-"), peak.get("fp8", "-"),
                     _si(hw.memory_bandwidth, "B/s"), _si(hw.memory_capacity, "B"), ridge))
    _print_table(rows)
    print("\nPeaks are dense (no 2:4 sparsity). `roofline hardware show NAME` gives every value "
          "and its source.")
    return 0


def _hardware_show(args: argparse.Namespace) -> int:
    from ..specs.hardware import load_hardware

    hw = load_hardware(args.name)
    if args.json:
        return _print_json(hw.as_dict())
    print(f"{hw.name} ({hw.vendor}, {hw.kind})")
    print(f"file: {hw.path}")
    rows = [("QUANTITY", "VALUE", "NOTE")]
    for dtype, value in hw.peak_flops.items():
        unit = "OP/s" if dtype.startswith("int") else "FLOP/s"
        rows.append((f"peak_flops.{dtype}", _si(value, unit), _note(hw, f"peak_flops.{dtype}")))
    for key, value, unit in (
        ("memory.bandwidth", hw.memory_bandwidth, "B/s"),
        ("memory.capacity", hw.memory_capacity, "B"),
        ("on_chip.sram_per_sm", hw.sram_per_sm, "B"),
        ("on_chip.sram_bandwidth", hw.sram_bandwidth, "B/s"),
        ("on_chip.sm_count", hw.sm_count, ""),
        ("on_chip.l2", hw.l2_bytes, "B"),
        ("on_chip.l2_bandwidth", hw.l2_bandwidth, "B/s"),
        ("on_chip.l3", hw.l3_bytes, "B"),
        ("on_chip.l3_bandwidth", hw.l3_bandwidth, "B/s"),
        ("interconnect.bandwidth", hw.interconnect_bandwidth, "B/s"),
        ("interconnect.directions", hw.interconnect_directions
         if hw.interconnect_bandwidth is not None else None, ""),
        ("interconnect.latency", hw.interconnect_latency, "s"),
        ("interconnect.devices_per_node", hw.devices_per_node, ""),
        ("efficiency.flops", hw.flops_efficiency, ""),
        ("efficiency.bandwidth", hw.bandwidth_efficiency, ""),
        *((f"estimate.{key}", value, "s" if key in ("launch", "host_step") else "")
          for key, value in (hw.estimate or {}).items()),  # beside the bound, never in it
    ):
        if value is None:
            continue
        shown = _si(value, unit) if unit else f"{value:g}"
        if unit == "B" and _binary(value):
            shown += f" ({_binary(value)})"
        note = _note(hw, key) if key in hw.sources else "default: the pure roofline"
        rows.append((key, shown, note))
    _print_table(_wrapped(rows, 2))
    ridges = [f"{d} {hw.ridge(d):.1f}" for d in hw.peak_flops]
    print(f"\nridge intensity (FLOP/byte): {', '.join(ridges)}")
    if hw.notes:
        print(f"\nnotes: {hw.notes}")
    if hw.provenance:
        print("\nprovenance:")
        _print_table([(f"  {k}", v) for k, v in hw.provenance.items()], header=False)
    print("\nsources:")
    by_source: dict[str, list[str]] = {}
    for key, source in hw.sources.items():
        by_source.setdefault(source, []).append(key)
    for source, keys in by_source.items():
        print(f"  {', '.join(keys)}:\n    {source}")
    return 0


def _note(hw: Any, key: str) -> str:
    return hw.quantity_notes.get(key, "")


_NOTE_WIDTH = 64  # characters of a table cell before it wraps (--json keeps the full text)


def _wrapped(rows: Sequence[Sequence[str]], column: int,
             width: int = _NOTE_WIDTH) -> list[tuple[str, ...]]:
    """``rows`` with the cells of ``column`` wrapped at ``width``: the rest of a long cell goes
    on continuation rows, blank elsewhere. A number stays on the line of its unit.

    >>> _wrapped([("a", "one two three")], 1, width=8)
    [('a', 'one two'), ('', 'three')]
    >>> _wrapped([("a", "W is 1 GiB")], 1, width=6)
    [('a', 'W is'), ('', '1 GiB')]
    """
    import re
    import textwrap

    out: list[tuple[str, ...]] = []
    for row in rows:
        kept = re.sub(r"(?<=\d) (?=\S)", "\u00a0", row[column])  # "1 GiB" is one word
        lines = [line.replace("\u00a0", " ")
                 for line in textwrap.wrap(kept, width, break_on_hyphens=False)] or [""]
        out.append(tuple(row[:column]) + (lines[0],) + tuple(row[column + 1:]))
        blank = ("",) * len(row)
        out += [blank[:column] + (line,) + blank[column + 1:] for line in lines[1:]]
    return out


# --- models --------------------------------------------------------------------------------
def _model_list(args: argparse.Namespace) -> int:
    from ..specs.model import list_models

    models = list_models()
    if args.json:
        return _print_json([m.as_dict() for m in models])
    rows = [("NAME", "TYPE", "PARAMETERS", "D", "L", "n_q", "n_kv", "H", "F", "V", "EXPERTS",
             "WINDOW")]
    for m in models:
        experts = f"{m.experts_per_token} of {m.num_experts}" if m.num_experts > 1 else "-"
        if m.shared_experts:
            experts += f" + {m.shared_experts} shared"
        window = "-" if m.window == "none" else str(m.local_span) + (
            " chunks" if m.attention_chunk_size else "") + (
            "" if m.window == "all" else f" on {m.window_layers}")
        rows.append((m.name, m.model_type, f"{m.parameters:,}", str(m.hidden_size),
                     str(m.num_layers), str(m.num_heads), str(m.num_kv_heads), str(m.head_dim),
                     str(m.intermediate_size), str(m.vocab_size), experts, window))
    _print_table(rows)
    print("\nD width, L layers, n_q/n_kv query/key-value heads, H head dimension, F MLP width "
          "(per expert), V vocabulary, WINDOW sliding window W (on how many layers, if not all).")
    return 0


def _model_show(args: argparse.Namespace) -> int:
    from ..specs.model import load_model

    m = load_model(args.name)
    if args.json:
        return _print_json(m.as_dict())
    print(f"{m.name} ({m.model_type})")
    print(f"file: {m.path}")
    mlp = "gated" if m.gated_mlp else "plain"
    if m.num_experts > 1:
        mlp += f", mixture of experts: {m.experts_per_token} of {m.num_experts} per token"
    bias = "every linear layer" if m.linear_bias else "Q, K, V" if m.qkv_bias else "none"
    moe = m.num_experts > 1
    rows = [
        ("parameters", f"{m.parameters:,}" + (f" in total, {m.active_parameters:,} active "
                                              "per token" if moe else ""), ""),
        ("width", str(m.hidden_size), "D"),
        ("layers", str(m.num_layers), "L"),
        ("query heads", str(m.num_heads), "n_q"),
        ("key/value heads", f"{m.num_heads}, expanded from the latent" if m.mla
         else str(m.num_kv_heads), "" if m.mla else "n_kv"),
        ("head dimension", str(m.head_dim) + (f" (values; keys {m.head_dim} + "
                                              f"{m.rope_head_dim} rotary)" if m.mla else ""), "H"),
        ("MLP width", str(m.intermediate_size) + (" per routed expert" if moe else ""), "F"),
        ("vocabulary", str(m.vocab_size), "V"),
        ("context limit", str(m.max_position), ""),
        *_attention_rows(m),
        ("MLP", f"{mlp}, {m.activation}", ""),
        *_expert_rows(m),
        ("norm", ("RMSNorm" if m.norm == "rms" else "LayerNorm")
         + (", before and after each sublayer" if m.post_norms else ""), ""),
        ("positions", ("rotary on the local layers, none on the global ones (NoPE)"
                       if m.local_rope else "rotary") if m.position == "rope"
         else f"learned table of {m.position_table_rows} rows",
         "T_pos" if m.position_table_rows else ""),
        ("biases", bias, ""),
        *([("QK-norm", "an RMSNorm over each query and key head, before the rotary "
            "encoding", "")] if m.qk_norm else []),
        *([("attention sinks", "a learned logit per query head in each softmax's denominator "
            f"({m.num_heads} parameters a layer)", "")] if m.attention_sinks else []),
        ("embeddings", ("tied to the LM head" if m.tied_embeddings else "untied")
         + (", scaled by sqrt(D)" if m.embed_scale else ""), ""),
    ]
    if m.quantized:
        rows += [("weights", f"{m.weight_dtype} ({m.quantization}); the default of every "
                  "command, --weight-dtype overrides it" if m.weight_dtype else
                  f"{m.quantization}: every command needs --weight-dtype", "b_w"),
                 ("embedding table, LM head", f"{m.embedding_dtype} (left unquantized)", "b_e")]
    if m.mtp_layers:
        rows.append(("not counted", f"{m.mtp_layers} multi-token-prediction layer"
                     f"{'s' if m.mtp_layers > 1 else ''} (num_nextn_predict_layers: training "
                     "and speculative decoding, not the prefill)", ""))
    if m.source:
        rows.append(("source", m.source, ""))
    _print_table(_wrapped(rows, 1), header=False)
    return 0


def _attention_rows(m: Any) -> list[tuple[str, str, str]]:
    """The attention of a model: its kind and heads, and its sliding window, one row each (a
    new kind of attention adds its own description to ``_ATTENTION_KINDS``)."""
    kind = m.attention_kind
    rows = [("attention", f"{kind}, {_ATTENTION_KINDS[kind](m)}", "")]
    if m.mla:
        query = (f"queries through a latent of {m.q_lora_rank}" if m.q_lora_rank
                 else "queries projected directly (no query latent)")
        rows.append(("latent ranks", f"keys and values {m.kv_lora_rank}, rotary key "
                     f"{m.rope_head_dim}; {query}; KV cache "
                     f"{m.kv_lora_rank + m.rope_head_dim} elements per token per layer",
                     "d_c, H_r" + (", d_cq" if m.q_lora_rank else "")))
    if m.linear_layers:
        rows.append(("linear attention", f"Gated DeltaNet on {m.linear_layers} of "
                     f"{m.num_layers} layers (the others full attention): "
                     f"{m.linear_key_heads} query/key heads of {m.linear_key_head_dim}, "
                     f"{m.linear_value_heads} value heads of {m.linear_value_head_dim}, a "
                     f"convolution of width {m.linear_conv_kernel}; a state of "
                     f"{m.linear_value_heads * m.linear_key_head_dim * m.linear_value_head_dim:,}"
                     " elements per layer in place of a KV cache (and the convolution's)",
                     "L_lin, n_lk, H_lk, n_lv, H_lv, K_conv"))
    if m.attn_output_gate:
        rows.append(("output gate", "a sigmoid gate on the attention's output, from the query "
                     "projection (n_q·H more outputs)", ""))
    if m.window != "none" and m.attention_chunk_size:
        where = "every layer" if m.window == "all" else \
            f"{m.window_layers} of {m.num_layers} layers"
        rows.append(("chunked attention", f"chunks of {m.attention_chunk_size:,} tokens on "
                     f"{where} ({m.layer_pattern}): a query sees its own chunk's keys up to "
                     "itself; KV cache of those layers: the current chunk (--kv-cache full "
                     "keeps all)" + ("; an L2 norm of q and k on those layers"
                                     if m.qk_l2_norm else ""), "C_att, L_w"))
    elif m.window == "none":
        if not m.linear_layers:
            rows.append(("sliding window", "none: every layer attends to the whole prompt", ""))
    else:
        where = ("every layer" if m.window == "all"
                 else f"{m.window_layers} of {m.num_layers} layers")
        pattern = f" ({m.layer_pattern})" if m.layer_pattern and m.window != "all" else ""
        rows.append(("sliding window", f"{m.sliding_window:,} tokens on {where}{pattern}; "
                     "KV cache of those layers: the last W tokens (--kv-cache full keeps all)",
                     "W" if m.window == "all" else "W, L_w"))
    return rows


_ATTENTION_KINDS = {
    "MHA": lambda m: "multi-head: a key/value head per query head",
    "GQA": lambda m: f"grouped-query: {m.num_heads // m.num_kv_heads} query heads share each "
                     "key/value head",
    "MQA": lambda m: "multi-query: every query head shares one key/value head",
    "MLA": lambda m: f"multi-head latent attention: {m.num_heads} heads whose keys and values "
                     "come from one latent per token",
}


def _expert_rows(m: Any) -> list[tuple[str, str, str]]:
    """A mixture of experts' routed, shared and active experts, and its dense layers."""
    if m.num_experts == 1:
        return []
    shared = "none"
    if m.shared_experts:
        shared = (f"{m.shared_experts} of width {m.shared_expert_size}"
                  + (", behind a sigmoid gate" if m.shared_expert_gate else ""))
    rows = [("experts", f"{m.num_experts} routed, {m.shared_experts} shared; "
             f"{m.experts_per_token + m.shared_experts} active per token "
             f"({m.experts_per_token} routed + {m.shared_experts} shared)", "n_e, n_sh, n_a"),
            ("shared experts", shared, "n_sh, F_sh" if m.shared_experts else "")]
    if m.moe_layers:
        dense = m.num_layers - m.moe_layers
        rows.append(("MoE layers", f"{m.moe_pattern}; {dense} dense layer{'s' if dense > 1 else ''}"
                     f" of MLP width {m.dense_intermediate_size}", "L_moe, F_dense"))
    return rows


# --- printing ------------------------------------------------------------------------------
def _print_json(data: Any) -> int:
    print(json.dumps(data, indent=2, sort_keys=True))
    return 0


def _print_table(rows: Sequence[Sequence[str]], header: bool = True) -> None:
    """The first row as headers with a rule under it (``header``), every column left-aligned."""
    print(render(rows[0] if header else None, rows[1:] if header else rows, left=None,
                 rule=header))


def _si(value: float, unit: str) -> str:
    """``3.35e12, "B/s"`` → ``"3.35 TB/s"`` (the one SI formatter, 4 significant digits)."""
    return si(value, unit, digits=5)


def _binary(value: float) -> str:
    """The size with a binary prefix, ``""`` below 1 KiB (decimal sizes shown beside it)."""
    return binary_size(value) if value >= 2**10 else ""
