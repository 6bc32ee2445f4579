"""``roofline prefill`` and ``roofline crossover``: a device and a model, evaluated."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InputError

__all__ = ["register", "add_setting_arguments", "parse_ints", "parallel_options"]


def parse_ints(text: str, option: str, *, single: bool = False,
               maximum: int | None = None) -> list[int]:
    """``"128,2048,32768"`` → [128, 2048, 32768]: comma-separated counts, each the digits 0-9
    only, in [1, ``maximum``] (default :data:`roofline.specs.numbers.MAX_COUNT`); one value only
    when ``single``. Anything else is an InputError naming ``option``."""
    from ..specs.numbers import MAX_COUNT, parse_positive_int

    parts = [p.strip(" \t") for p in text.split(",")]
    if not any(parts):
        example = "e.g. 8" if single else "e.g. 128,2048,8192"
        raise InputError(option, f"needs {'a' if single else 'at least one'} value, {example}",
                         text)
    if single and len(parts) > 1:
        raise InputError(option, "takes one value, not a comma-separated list", text)
    if not all(parts):
        raise InputError(option, "has an empty value between commas", text)
    limit = MAX_COUNT if maximum is None else maximum
    try:
        return [parse_positive_int(p, option, limit) for p in parts]
    except InputError as err:  # "--prompt: each value must be ...", in the option's words
        raise InputError(option, err.rule if single else f"each value {err.rule}",
                         err.value) from None


def add_setting_arguments(p: argparse.ArgumentParser, hardware: str | None = None,
                          model: str | None = None, dtype: str = "bf16") -> None:
    """--hardware, --model, precision, attention mode and batch: the same options, with the
    same meaning, in every command that evaluates a setting. ``hardware`` and ``model``: their
    defaults (None: the option is required)."""
    default = " (default {})"
    p.add_argument("--hardware", required=hardware is None, default=hardware,
                   help="a shipped device name (roofline hardware list) or a .toml path"
                   + (default.format(hardware) if hardware else ""))
    p.add_argument("--model", required=model is None, default=model,
                   help="a shipped model name (roofline model list), a config.json path or "
                   "a folder holding one" + (default.format(model) if model else ""))
    p.add_argument("--name", metavar="NAME",
                   help="the model's name in titles, tables and figures (default: the "
                   "preset's, the file's, or for a config.json its _name_or_path or folder)")
    p.add_argument("--dtype", default=dtype, help=f"compute data type (default {dtype}); also "
                   "the default for weights, activations and KV cache")
    p.add_argument("--weight-dtype", help="weights' data type (e.g. int4, fp8)")
    p.add_argument("--kv-dtype", help="KV cache's data type")
    p.add_argument("--act-dtype", help="activations' data type: GEMM inputs and outputs, the "
                   "residual stream, collectives (default: --dtype's, the permissive reading "
                   "under fp8, whose GEMMs engines let write bf16: --act-dtype bf16)")
    p.add_argument("--attention", default=None,
                   help="naive | tiled | tiled_fa2 | kernel | ideal (default kernel: the "
                   "FlashAttention-2 order at the released kernels' 128-row tiles, behind the "
                   "device's caches)")
    p.add_argument("--batch", default="1", help="sequences in the batch (default 1)")
    p.add_argument("--kv-cache", default="window", choices=("window", "full"),
                   help="a sliding-window layer's KV cache: the last W tokens in a rolling "
                   "buffer (window, the default, as Mistral's code and vLLM) or all T (full)")
    p.add_argument("--fusion", default="none", choices=("none", "elementwise"),
                   help="element-wise operations (norms, rotary, residual adds, the activation "
                   "product) as separate kernels through HBM (none, the default, as vLLM) or "
                   "folded into the neighbouring GEMM or attention kernel (elementwise, as "
                   "TensorRT-LLM and compiled graphs)")
    p.add_argument("--mla-decode", default="absorbed", choices=("absorbed", "naive"),
                   help="a latent-attention (DeepSeek) model's decode step: attention over the "
                   "latent with W^UK, W^UV absorbed (absorbed, the default) or the latent "
                   "expanded into per-head keys and values each step (naive)")
    p.add_argument("--tp", default="1", metavar="N",
                   help="tensor-parallel devices (default 1): one device's share of each "
                   "operation (Megatron-LM column and row splits, KV heads replicated beyond "
                   "their count) and two ring all-reduces per layer over the file's interconnect")
    p.add_argument("--overlap", action="store_true",
                   help="every collective (--tp's all-reduces, --ep's all-to-alls, the sends of "
                   "--pipeline whole) hidden under the compute (time = max of the two, a bound); "
                   "default: "
                   "after each GEMM on the critical path, as vLLM and TensorRT-LLM run them "
                   "(time = sum); ring attention's K/V passes (--cp) are always overlapped")
    p.add_argument("--pp", default="1", metavar="N",
                   help="pipeline stages (default 1): the layers split into N stages with the "
                   "activations sent between them")
    p.add_argument("--pipeline", default="chunked", choices=("chunked", "whole"),
                   help="how a prompt crosses the --pp stages: chunked (the default bound: its "
                   "chunks fill the pipeline, so it takes at least a stage's mean share of the "
                   "work, the sends hidden under other chunks) or whole (through each stage in "
                   "turn, DistServe's inter-op instance: the stages' sum and the sends)")
    p.add_argument("--ep", default="1", metavar="N",
                   help="expert-parallel devices of a mixture-of-experts model (default 1): "
                   "the routed experts spread over N devices, each with its own --batch "
                   "sequences, the dispatch and combine all-to-alls of every MoE layer; N must "
                   "divide the experts")
    p.add_argument("--cp", default="1", metavar="N",
                   help="context-parallel devices (default 1): ring attention, the prompt split "
                   "over N devices, K/V blocks passed around the ring under the attention")
    p.add_argument("--network", metavar="NAME|PATH",
                   help="the network between nodes (hardware/network/: InfiniBand-NDR, "
                   "InfiniBand-HDR, RoCE-400G, or a .toml path): a collective whose devices "
                   "leave one node (the device file's interconnect.devices_per_node) is timed "
                   "at it")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prefill", help="prefill time, FLOPs, bytes and bound per prompt length",
                       description="Prefill of a model on a device at each prompt length, with "
                       "the per-operation breakdown, the decode step and the KV cache beside it.")
    add_setting_arguments(p)
    p.add_argument("--prompt", default="128,2048,8192",
                   help="prompt lengths, comma-separated (default 128,2048,8192)")
    p.add_argument("--context", help="decode context in tokens (default: the longest prompt)")
    p.add_argument("--csv", action="store_true", help="CSV instead of a table: a row per "
                   "prompt length and operation (and its total), numbers in SI base units; "
                   "bound_by: what binds an operation (compute, hbm, l2, a link), the "
                   "prefill's regime on a total row (compute or memory); estimate_s: the "
                   "estimate on a total row (empty where the device file has no [estimate])")
    p.add_argument("--json", action="store_true", help="JSON instead of a table (a FLOP/byte "
                   "that is not finite, of an operation that moves no bytes, is null)")
    p.set_defaults(run=run_prefill)

    c = sub.add_parser("crossover", help="every crossover: closed form and value",
                       description="Every crossover prompt length of the catalogue for a device "
                       "and model: its closed form and value, or 'never' and why.")
    add_setting_arguments(c)
    c.add_argument("--json", action="store_true", help="JSON instead of a table")
    c.add_argument("--csv", action="store_true", help="CSV instead of a table: a row per "
                   "crossover (value, unit, the closed form as text)")
    c.set_defaults(run=run_crossover)


MAX_TABLE = 10_000  # prompt lengths that `prefill` prints (text, JSON or CSV)


def model_of(args: argparse.Namespace) -> Any:
    """``--model``, renamed where ``--name`` is given (a name of 1–100 printable
    characters)."""
    if args.name is None:
        return args.model
    from dataclasses import replace

    from ..specs.model import load_model

    if not (0 < len(args.name) <= 100 and args.name.isprintable() and args.name.strip()):
        raise InputError("name", "must be 1 to 100 printable characters", args.name)
    return replace(load_model(args.model), name=args.name)


def _options(args: argparse.Namespace) -> dict:
    """The setting's keyword options from the shared command-line arguments."""
    (batch,) = parse_ints(args.batch, "--batch", single=True)
    return {"dtype": args.dtype, "weight_dtype": args.weight_dtype, "kv_dtype": args.kv_dtype,
            "act_dtype": args.act_dtype,
            "attention": args.attention, "batch": batch, "kv_cache": args.kv_cache,
            "fusion": args.fusion, "mla_decode": args.mla_decode, **parallel_options(args)}


def parallel_options(args: argparse.Namespace) -> dict:
    """``tp``, ``pp``, ``pipeline``, ``ep``, ``cp``, ``overlap`` and ``network`` from their
    flags."""
    (tp,) = parse_ints(args.tp, "--tp", single=True)
    (pp,) = parse_ints(args.pp, "--pp", single=True)
    (ep,) = parse_ints(args.ep, "--ep", single=True)
    (cp,) = parse_ints(args.cp, "--cp", single=True)
    return {"tp": tp, "pp": pp, "ep": ep, "cp": cp, "overlap": args.overlap,
            "network": args.network, "pipeline": args.pipeline}


def run_prefill(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from ..api import prefill
    from ..tables import level_name, render, si
    from . import print_csv, print_json

    prompts = parse_ints(args.prompt, "--prompt")
    if len(prompts) > MAX_TABLE:  # a table is for reading: 65,000 rows of records are not
        raise InputError("prompt", f"at most {MAX_TABLE:,} prompt lengths in a table; for more, "
                         "roofline.prefill_columns (Python) gives numpy columns",
                         f"{len(prompts):,} lengths")
    context = None if args.context is None else parse_ints(args.context, "--context", single=True)[0]
    _one_format(args)
    table = prefill(args.hardware, model_of(args), prompts, context=context, **_options(args))
    if args.csv:  # the estimate on each total row (empty without an [estimate])
        est = table.estimate
        print_csv(["prompt_tokens", "operation", "kind", "time_s", "flops", "bytes",
                   "intensity", "bound_by", "estimate_s"],
                  [row for i, p in enumerate(table.points) for row in (
                      *([p.prompt_tokens, o.name, o.kind, o.time_s, o.flops, o.bytes,
                         o.intensity, o.level, ""] for o in p.operations),
                      [p.prompt_tokens, "total", "", p.time_s, p.flops, p.bytes, p.intensity,
                       p.bound, "" if est is None else float(est["time_s"][i])])])
        return 0
    if args.json:
        print_json(table.as_dict())
        return 0
    print(table)
    longest = max(table.points, key=lambda p: p.prompt_tokens)
    s = table.setting
    share = ("all layers" if s.pp == 1 or s.pipeline == "whole" else f"a stage's mean share: "
             f"1/{s.pp} of each, {Fraction(s.model.num_layers, s.pp)} of {s.model.num_layers} "
             "layers")
    print(f"\nPer operation at T = {longest.prompt_tokens} ({share}):")
    rows = [[o.name, o.kind, si(o.time_s, "s"), si(o.flops), si(o.bytes, "B"),
             f"{o.intensity:.4g}", level_name(o.level)] for o in longest.operations]
    print(render(["operation", "kind", "time", "FLOPs", "HBM bytes", "FLOP/byte", "bound by"],
                 rows, left=(0, 1)))
    return 0


def _one_format(args: argparse.Namespace) -> None:
    if args.csv and args.json:
        raise InputError("csv", "give one of --csv and --json")


def run_crossover(args: argparse.Namespace) -> int:
    from ..api import crossovers
    from . import print_csv, print_json

    _one_format(args)
    table = crossovers(args.hardware, model_of(args), **_options(args))
    if args.csv:
        data = table.as_dict()["crossovers"]
        print_csv(["name", "value", "unit", "exists", "ends_at", "reason", "expr"],
                  [[name, v["value"], v["unit"], v["exists"], v["ends_at"], v["reason"],
                    v["expr"]] for name, v in data.items()])
        return 0
    if args.json:
        print_json(table.as_dict())
        return 0
    print(table)
    print("\nClosed forms: --json here, or `roofline derive crossover` for the catalogue's.")
    return 0
