"""``roofline report``: the derivations, crossovers, prefill table and figures of a device and a
model in one Markdown file (default: H100-SXM, Llama-3-8B, bf16, into ``report/``)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from ..defaults import DEFAULT
    from .analyze import add_setting_arguments

    p = sub.add_parser("report", help="write report.md with its figures (the main job)",
                       description="Write DIR/report.md (derivations in LaTeX, the crossover "
                       "table, the prefill table, the figures embedded) and the figures beside "
                       "it, then print a short summary with the report's path.")
    add_setting_arguments(p, hardware=DEFAULT["hardware"], model=DEFAULT["model"],
                          dtype=DEFAULT["dtype"])
    p.add_argument("-o", "--output", default="report", metavar="DIR",
                   help="output folder, created if missing (default report/)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..plot._style import headless
    from ..report import build
    from .analyze import _options, model_of

    headless()
    report = build(args.hardware, model_of(args), output=args.output, **_options(args))
    print(report.summary)
    return 0
