"""``roofline ttft``: mean time to first token at an arrival rate: execution, queueing, total.

Execution is the roofline prefill time of the prompt (or the moments of a distribution of prompt
lengths); queueing is the M/D/1 (M/G/1) wait of DistServe §3.1 Eq. 1–3. ``--slo`` adds the
highest arrival rate whose mean TTFT meets the target. With ``--prompt T``, ``--batch-prompts B``
adds B prompts batched into one prefill (TTFT of the first and the last, and the batch at which
batching stops helping) and ``--chunk C`` a chunked prefill (time of each chunk in the attention
mode of ``--attention``, the total against one-shot prefill in that mode, and the smallest
compute-bound chunk). Wiring only: :func:`roofline.ttft` computes, this prints.
"""

from __future__ import annotations

import argparse
import json

from .ttft_options import add_ttft_arguments, ttft_options

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ttft", help="time to first token: prefill execution plus queueing",
        description=__doc__.splitlines()[0].split(": ", 1)[1])
    add_ttft_arguments(parser, rate_required=True)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..api import ttft

    result = ttft(**ttft_options(args))
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, sort_keys=True))
    else:
        print(result)
    return 0
