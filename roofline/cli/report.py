"""``roofline report``: the derivations, crossovers, prefill table and figures of a device and a
model in one Markdown file (default: H100-SXM, Llama-3-8B, bf16, into ``report/``)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from ..defaults import DEFAULT

    p = sub.add_parser("report", help="write report.md with its figures (the main job)",
                       description="Write DIR/report.md (derivations in LaTeX, the crossover "
                       "table, the prefill table, the figures embedded) and the figures beside "
                       "it, then print a short summary with the report's path.")
    p.add_argument("--hardware", default=DEFAULT["hardware"],
                   help=f"device name or .toml path (default {DEFAULT['hardware']})")
    p.add_argument("--model", default=DEFAULT["model"],
                   help=f"model name or config.json path (default {DEFAULT['model']})")
    p.add_argument("--dtype", default=DEFAULT["dtype"],
                   help=f"compute data type (default {DEFAULT['dtype']})")
    p.add_argument("--attention", default=None,
                   help="naive | tiled | tiled_fa2 | ideal (default: tiled, or ideal on a device "
                   "whose file gives no SRAM per SM)")
    p.add_argument("-o", "--output", default="report", metavar="DIR",
                   help="output folder, created if missing (default report/)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..plot._style import headless
    from ..report import build

    headless()
    report = build(args.hardware, args.model, args.dtype, args.output,
                   attention=args.attention)
    print(report.summary)
    return 0
