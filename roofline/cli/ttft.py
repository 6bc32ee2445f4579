"""``roofline ttft``: mean time to first token at an arrival rate: execution, queueing, total.

Execution is the roofline prefill time of the prompt (or the moments of a distribution of prompt
lengths); queueing is the M/D/1 (M/G/1) wait of DistServe §3.1 Eq. 1–3. ``--slo`` adds the
highest arrival rate whose mean TTFT meets the target.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from ..errors import InputError

__all__ = ["register", "add_arguments", "Inputs", "prepare", "describe", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``roofline ttft`` and ``roofline plot ttft`` share."""
    parser.add_argument("--hardware", required=True, help="device name or TOML file")
    parser.add_argument("--model", required=True, help="model name or config.json file")
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", type=int, metavar="T", help="prompt tokens")
    prompt.add_argument("--prompt-dist", metavar="FILE",
                        help="prompt lengths, one a line ('length' or 'length,weight'; '#' "
                             "comments)")
    parser.add_argument("--slo", type=float, metavar="S", help="mean-TTFT target, seconds")
    parser.add_argument("--parallel", choices=("inter", "intra"),
                        help="two-way inter-op (pipeline) or intra-op parallelism")
    parser.add_argument("--speedup", type=float, metavar="K",
                        help="intra-op speedup K in (1, 2] (with --parallel intra)")
    parser.add_argument("--replicas", type=int, default=1, metavar="N",
                        help="equal prefill replicas sharing the arrivals (default 1)")
    parser.add_argument("--dtype", default="bf16", help="compute data type (default bf16)")
    parser.add_argument("--attention", default=None,
                        help="attention mode: naive, tiled, tiled_fa2, ideal (default: tiled "
                             "where the hardware file gives its SRAM per SM, else ideal)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ttft", help="time to first token: prefill execution plus queueing",
        description=__doc__.splitlines()[0].split(": ", 1)[1])
    add_arguments(parser)
    parser.add_argument("--rate", type=float, required=True, metavar="R",
                        help="request arrival rate, per second (all replicas together)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class Inputs:
    """What the options describe: the queue, and labels for output and titles."""

    model: object  # roofline.service.QueueModel
    mean_s: float  # E[t], the one-GPU prefill time (mean over the distribution)
    second_s2: float  # E[t²]
    prompt: str  # "2048" or the distribution file
    inputs: dict[str, object]


def _prefill_times(args: argparse.Namespace, lengths):
    """Roofline prefill time of each prompt length (seconds, numpy array).

    The setting comes from :func:`roofline.api.setting`, so its warnings (no SRAM per SM for
    tiled attention, weights larger than the device memory) reach ``ttft`` as they reach
    ``prefill``; a prompt beyond the model's context is a warning too. The attention mode it
    chose is written back to ``args.attention``."""
    import warnings

    from ..api import setting as make_setting
    from ..evaluate import prefill_time

    setting = make_setting(args.hardware, args.model, dtype=args.dtype,
                           attention=args.attention, batch=1)
    args.attention = setting.attention
    longest, context = int(max(lengths)), setting.model.max_position
    if longest > context:
        what = (f"--prompt: {longest} tokens" if args.prompt_dist is None else
                f"--prompt-dist: {longest} tokens (the longest in {args.prompt_dist})")
        warnings.warn(f"{what} is beyond {setting.model.name}'s context of {context} tokens",
                      stacklevel=2)
    return prefill_time(setting, lengths)


def _per_s(rate: float, spec: str = "g") -> str:
    """``1 request/s``, ``30 requests/s``.

    >>> _per_s(1), _per_s(30), _per_s(8.333333, ".4g")
    ('1 request/s', '30 requests/s', '8.333 requests/s')
    """
    shown = format(rate, spec)
    return f"{shown} request{'' if shown == '1' else 's'}/s"


def describe(args: argparse.Namespace, rate: float | None = None) -> str:
    """The configuration in words: prompt, parallelism, replicas (for the first output line).

    >>> ns = argparse.Namespace(prompt=2048, prompt_dist=None, parallel="intra", speedup=1.6,
    ...                         replicas=2)
    >>> describe(ns, 30)
    'prompt 2048 tokens; two-way intra-op parallelism, speedup K = 1.6; 2 replicas, 15 requests/s each'
    """
    prompt = (f"prompt {args.prompt} tokens" if args.prompt_dist is None else
              f"prompt lengths from {args.prompt_dist}: execution is the mean over them")
    parallel = {"inter": "two-way inter-op (pipeline) parallelism",
                "intra": f"two-way intra-op parallelism, speedup K = {args.speedup:g}"
                if args.speedup is not None else "two-way intra-op parallelism",
                None: "one device, no parallelism"}[args.parallel]
    parts = [prompt, parallel]
    if args.replicas > 1:
        each = f", {_per_s(rate / args.replicas, '.4g')} each" if rate is not None else ""
        parts.append(f"{args.replicas} replicas{each}")
    return "; ".join(parts)


def prepare(args: argparse.Namespace) -> Inputs:
    """Check the options, load the distribution and compute the queue (shared with the plot)."""
    from .. import service

    if args.speedup is not None and args.parallel != "intra":
        raise InputError("--speedup", "applies only with --parallel intra", args.speedup)
    if args.parallel == "intra":
        if args.speedup is None:
            raise InputError("--speedup", "--parallel intra needs a speedup K in (1, 2]")
        service.check_speedup(args.speedup)
    if args.replicas < 1:
        raise InputError("--replicas", "must be an integer ≥ 1", args.replicas)
    if args.slo is not None:
        service.check_slo(args.slo)
    if args.prompt_dist is not None:
        dist = service.read_distribution(args.prompt_dist)
        prompt = args.prompt_dist
    else:
        if args.prompt <= 0:
            raise InputError("--prompt", "a prompt length must be a positive integer",
                             args.prompt)
        dist = service.Distribution.of([args.prompt])
        prompt = str(args.prompt)
    mean, second = service.moments(dist, lambda lengths: _prefill_times(args, lengths))
    if args.prompt_dist is None:
        second = mean**2  # one length: exactly deterministic
    model = service.queue_model(mean, second, args.parallel, args.speedup, args.replicas)
    inputs = {"hardware": args.hardware, "model": args.model, "dtype": args.dtype,
              "attention": args.attention, "parallel": args.parallel, "speedup": args.speedup,
              "replicas": args.replicas, "slo_s": args.slo,
              **({"prompt_dist": args.prompt_dist} if args.prompt_dist else
                 {"prompt": args.prompt})}
    return Inputs(model, mean, second, prompt, inputs)


def run(args: argparse.Namespace) -> int:
    from .. import service

    service.check_rate(args.rate)
    prepared = prepare(args)
    result = service.ttft(args.rate, prepared.model, args.slo)
    if args.json:
        out = {**prepared.inputs, "rate_per_s": args.rate,
               "execution_s": result.execution_s, "queueing_s": result.queueing_s,
               "total_s": result.total_s, "utilization": result.utilization,
               "max_rate_per_s": result.max_rate_per_s,
               "stable_rate_per_s": result.stable_rate_per_s}
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0
    attention = f", {args.attention} attention" if args.attention else ""
    print(f"time to first token at {_per_s(args.rate)} ({args.hardware}, {args.model}, "
          f"{args.dtype}{attention}; {describe(args, args.rate)})")
    from ..tables import si

    mean = " (mean over the prompt lengths)" if args.prompt_dist is not None else ""
    print(f"  execution    {si(result.execution_s, 's')}{mean}")
    print(f"  queueing     {si(result.queueing_s, 's')}")
    print(f"  total        {si(result.total_s, 's')}")
    print(f"  utilization  {result.utilization:.3f} (steady state below "
          f"{_per_s(result.stable_rate_per_s, '.4g')})")
    if args.slo is not None:
        if result.max_rate_per_s is None:
            print(f"  no arrival rate meets the target {args.slo:g} s: execution alone takes "
                  f"{si(result.execution_s, 's')}")
        else:
            print(f"  highest rate meeting the target {args.slo:g} s: "
                  f"{_per_s(result.max_rate_per_s, '.4g')}")
    return 0
