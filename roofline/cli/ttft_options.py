"""The options ``roofline ttft`` and ``roofline plot ttft`` share, and their translation into the
keyword arguments of :func:`roofline.ttft`. Wiring only."""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..errors import InputError
from .analyze import add_setting_arguments, model_of, parallel_options, parse_ints

__all__ = ["add_ttft_arguments", "ttft_options"]


def _count(text: str) -> int:
    """A whole number written in ASCII digits (``int`` would also take '١٢', '1_0', '+5')."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"must be a positive integer in ASCII digits: {text!r}")
    return int(text)


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _real(text: str) -> float:
    """A number written in ASCII decimal (``1e3``, ``0.5``; ``float`` would also take '١٠',
    '1_0', 'inf', 'nan')."""
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"must be a decimal number in ASCII digits: {text!r}")
    return float(text)


def add_ttft_arguments(parser: argparse.ArgumentParser, rate_required: bool) -> None:
    """The setting options of ``roofline prefill`` (``--hardware``, ``--model``, ``--dtype``,
    ``--weight-dtype``, ``--kv-dtype``, ``--attention``; ``--batch`` must stay 1: a prefill
    serves one prompt, several are ``--batch-prompts``), then the TTFT options."""
    add_setting_arguments(parser)
    for action in parser._actions:  # the shared --batch, said as what it means here
        if action.dest == "batch":
            action.help = ("sequences per prefill: must stay 1 (several prompts in one prefill: "
                           "--batch-prompts)")
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", type=_count, metavar="T", help="prompt tokens")
    prompt.add_argument("--prompt-dist", metavar="FILE",
                        help="prompt lengths, one a line ('length' or 'length,weight'; '#' "
                             "comments)")
    parser.add_argument("--rate", type=_real, required=rate_required, metavar="R",
                        help="request arrival rate, per second (all replicas together)")
    parser.add_argument("--slo", type=_real, metavar="S", help="mean-TTFT target, seconds")
    parser.add_argument("--parallel", choices=("inter", "intra"),
                        help="two-way inter-op (pipeline) or intra-op parallelism")
    parser.add_argument("--speedup", type=_real, metavar="K",
                        help="intra-op speedup K in (1, 2] (with --parallel intra)")
    parser.add_argument("--replicas", type=_count, default=1, metavar="N",
                        help="equal prefill replicas sharing the arrivals (default 1)")
    parser.add_argument("--batch-prompts", type=_count, metavar="B",
                        help="also: B prompts batched into one prefill (with --prompt and "
                             "--rate)")
    parser.add_argument("--chunk", type=_count, metavar="C",
                        help="also: the prompt prefilled in chunks of C tokens (with --prompt)")


def ttft_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`roofline.ttft` from the parsed options."""
    (batch,) = parse_ints(args.batch, "batch")
    if batch != 1:
        raise InputError("batch", "a TTFT prefill serves one prompt: batch prompts with "
                         "--batch-prompts B", args.batch)
    return {"hardware": args.hardware, "model": model_of(args), "prompt": args.prompt,
            "prompt_dist": args.prompt_dist, "rate": args.rate, "slo": args.slo,
            "parallel": args.parallel, "speedup": args.speedup, "replicas": args.replicas,
            "batch_prompts": args.batch_prompts, "chunk": args.chunk, "dtype": args.dtype,
            "weight_dtype": args.weight_dtype, "kv_dtype": args.kv_dtype,
            "act_dtype": args.act_dtype,
            "attention": args.attention, "kv_cache": args.kv_cache, "fusion": args.fusion,
            **parallel_options(args)}
