"""``roofline hybrid``, ``roofline request`` and ``roofline goodput``: prefill inside a serving
system.

``hybrid``: a prefill chunk beside decodes in one engine step (Sarathi-Serve): the decodes'
TPOT alone, the largest chunk that keeps it under ``--tpot``, a step with ``--chunk``, a
``--prompt`` prefilled in chunks beside the decodes. ``request``: requests of ``--prompt``
tokens in and ``--output`` out, end to end: prefill, decode steps over the growing cache,
memory, throughput and its bound. ``goodput``: a disaggregated prefill-decode pair against a
colocated instance (its TP and PP searched), per device. Wiring only: :func:`roofline.hybrid`,
:func:`roofline.request` and :func:`roofline.goodput` compute, the results print.
"""

from __future__ import annotations

import argparse
import json

from .analyze import _options, add_setting_arguments, model_of
from .ttft_options import _count, _real

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    h = subparsers.add_parser(
        "hybrid", help="a prefill chunk beside decodes: TPOT, the chunk budget for an objective",
        description="a prefill chunk beside decodes in one engine step (Sarathi-Serve's hybrid "
                    "batch): the decodes' TPOT alone, the largest chunk that keeps it under "
                    "--tpot, a step with --chunk, a --prompt prefilled in chunks beside the "
                    "decodes; one device, or one device's share under --tp")
    add_step_arguments(h, curves=False)
    h.add_argument("--chunk", type=_count, metavar="C", help="a step with a chunk of C tokens")
    h.add_argument("--prompt", type=_count, metavar="T",
                   help="a prompt of T tokens prefilled in chunks (of --chunk, else of the "
                        "budget) beside the decodes")
    h.add_argument("--json", action="store_true", help="print JSON")
    h.set_defaults(run=_run_hybrid)
    r = subparsers.add_parser(
        "request", help="requests end to end: prefill, decode steps, throughput bound",
        description="requests end to end: the prefill, the decode steps over the growing KV "
                    "cache, memory, throughput and its bound")
    add_setting_arguments(r)
    r.add_argument("--prompt", type=_count, required=True, metavar="T", help="prompt tokens")
    r.add_argument("--output", type=_count, required=True, metavar="T_out",
                   help="output tokens (the first one the prefill's)")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(run=_run_request)
    g = subparsers.add_parser(
        "goodput", help="disaggregated prefill and decode against colocated, per device",
        description="goodput per device (requests/s meeting both objectives at an attainment) "
                    "of a disaggregated prefill-decode pair, each side's TP and PP searched, "
                    "against a colocated instance with chunked prefill, its TP and PP searched "
                    "(DistServe §4)")
    add_goodput_arguments(g)
    g.add_argument("--json", action="store_true", help="print JSON")
    g.set_defaults(run=_run_goodput)


def add_step_arguments(p: argparse.ArgumentParser, curves: bool) -> None:
    """The setting and the step's options of ``roofline hybrid`` (one count of decodes, the
    objective optional) and ``roofline plot tpot`` (``curves``: a count of decodes a curve, the
    objective required)."""
    add_setting_arguments(p)
    p.add_argument("--decodes", type=None if curves else _nonnegative, required=True,
                   metavar="B_d[,B_d...]" if curves else "B_d",
                   help="decode sequences beside the chunk, a curve each (one to six)" if curves
                   else "decode sequences in each step (0: the chunk or prompt alone)")
    p.add_argument("--context", type=_count, required=curves, metavar="S",
                   help="tokens the decodes have cached" + ("" if curves else
                                                             " (with decodes above 0)"))
    p.add_argument("--tpot", type=_real, required=curves, metavar="SECONDS",
                   help="the TPOT objective" + ("" if curves else
                                                ": the largest chunk that meets it"))
    p.add_argument("--done", type=_nonnegative, default=0, metavar="T_pre",
                   help="tokens of the chunk's prompt prefilled before it (default 0)")


def add_goodput_arguments(g: argparse.ArgumentParser) -> None:
    """The options of ``roofline goodput`` and ``roofline plot goodput``."""
    add_setting_arguments(g)
    g.add_argument("--prompt", type=_count, required=True, metavar="T", help="prompt tokens")
    g.add_argument("--output", type=_count, required=True, metavar="T_out",
                   help="output tokens (at least 2)")
    g.add_argument("--ttft", type=_real, required=True, metavar="SECONDS",
                   help="the TTFT objective")
    g.add_argument("--tpot", type=_real, required=True, metavar="SECONDS",
                   help="the TPOT objective")
    g.add_argument("--attainment", type=_real, default=0.9, metavar="FRACTION",
                   help="the fraction of requests that must meet the TTFT (default 0.9)")
    g.add_argument("--devices", type=_count, default=8, metavar="N",
                   help="the most devices one instance may take (default 8: a node)")


def goodput_options(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`roofline.goodput` from the parsed options (a split or a
    batch given is refused there: the search sets them)."""
    return {"hardware": args.hardware, "model": model_of(args), "prompt": args.prompt,
            "output": args.output, "ttft": args.ttft, "tpot": args.tpot,
            "attainment": args.attainment, "devices": args.devices, **_options(args)}


def _nonnegative(text: str) -> int:
    """A whole number ≥ 0 in ASCII digits."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"must be a whole number ≥ 0 in ASCII digits: {text!r}")
    return int(text)


def _run_hybrid(args: argparse.Namespace) -> int:
    from ..api import hybrid

    result = hybrid(args.hardware, model_of(args), decodes=args.decodes, context=args.context,
                    tpot=args.tpot, chunk=args.chunk, done=args.done, prompt=args.prompt,
                    **_options(args))  # batch refused there: the decodes are --decodes
    _print(result, args.json)
    return 0


def _run_request(args: argparse.Namespace) -> int:
    from ..api import request

    result = request(args.hardware, model_of(args), prompt=args.prompt, output=args.output,
                     **_options(args))
    _print(result, args.json)
    return 0


def _run_goodput(args: argparse.Namespace) -> int:
    from ..api import goodput

    _print(goodput(**goodput_options(args)), args.json)
    return 0


def _print(result: object, as_json: bool) -> None:
    print(json.dumps(result.as_dict(), indent=2, sort_keys=True) if as_json  # type: ignore
          else result)
