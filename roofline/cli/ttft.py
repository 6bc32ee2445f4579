"""``roofline ttft``: mean time to first token at an arrival rate: execution, queueing, total.

Execution is the roofline prefill time of the prompt (or the moments of a distribution of prompt
lengths); queueing is the M/D/1 (M/G/1) wait of DistServe §3.1 Eq. 1–3. ``--slo`` adds the
highest arrival rate whose mean TTFT meets the target. With ``--prompt T``, ``--batch-prompts B``
adds B prompts batched into one prefill (TTFT of the first and the last, and the batch at which
batching stops helping) and ``--chunk C`` a chunked prefill (time of each chunk, the total
against one-shot prefill, and the smallest compute-bound chunk).
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
    parser.add_argument("--batch-prompts", type=int, metavar="B",
                        help="also: B prompts batched into one prefill (with --prompt)")
    parser.add_argument("--chunk", type=int, metavar="C",
                        help="also: the prompt prefilled in chunks of C tokens (with --prompt)")
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

    from ..evaluate import prefill_time

    setting = _setting(args)
    longest, context = int(max(lengths)), setting.model.max_position
    if longest > context:
        what = (f"--prompt: {longest} tokens" if args.prompt_dist is None else
                f"--prompt-dist: {longest} tokens (the longest in {args.prompt_dist})")
        warnings.warn(f"{what} is beyond {setting.model.name}'s context of {context} tokens",
                      stacklevel=2)
    return prefill_time(setting, lengths)


def _setting(args: argparse.Namespace):
    """The :class:`roofline.evaluate.Setting` of the options, made once (its warnings once) and
    kept in ``args.setting``; the attention mode it chose is written back to ``args.attention``."""
    from ..api import setting as make_setting

    if getattr(args, "setting", None) is None:
        args.setting = make_setting(args.hardware, args.model, dtype=args.dtype,
                                    attention=args.attention, batch=1)
        args.attention = args.setting.attention
    return args.setting


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


def _check_extras(args: argparse.Namespace) -> None:
    """--batch-prompts and --chunk: one prompt length, one prefill instance, values in range."""
    from .. import service

    given = [name for name, value in (("--batch-prompts", args.batch_prompts),
                                      ("--chunk", args.chunk)) if value is not None]
    if not given:
        return
    if args.prompt_dist is not None:
        raise InputError(", ".join(given), "needs one prompt length --prompt T, not "
                         "--prompt-dist", args.prompt_dist)
    if args.parallel is not None:
        raise InputError(", ".join(given), "models one prefill instance on one device, not "
                         "--parallel", args.parallel)
    if args.batch_prompts is not None:
        service.check_batch(args.batch_prompts)
    if args.chunk is not None and args.prompt > 0:
        service.check_chunk(args.chunk, args.prompt)


def _extras(args: argparse.Namespace) -> tuple[object | None, object | None]:
    """(Batching, Chunking) of the options, each None when not asked for. With N replicas each
    instance sees R/N, so a batch fills at that rate."""
    from .. import service

    batch = chunk = None
    if args.batch_prompts is not None:
        batch = service.batching(_setting(args), args.prompt, args.batch_prompts,
                                 args.rate / args.replicas)
    if args.chunk is not None:
        chunk = service.chunking(_setting(args), args.prompt, args.chunk)
    return batch, chunk


def _batching_json(b) -> dict[str, object]:
    return {"prompts": b.batch, "prompt": b.prompt, "rate_per_s": b.rate_per_s,
            "execution_s": b.execution_s, "wait_s": b.wait_s, "ttft_first_s": b.first_s,
            "ttft_last_s": b.last_s, "per_prompt_s": b.per_prompt_s,
            "single_prompt_s": b.single_s, "crossover_rows": b.crossover_rows,
            "stops_helping_batch": b.stops_helping}


def _chunking_json(c) -> dict[str, object]:
    return {"chunk": c.chunk, "prompt": c.prompt, "chunks": len(c.sizes), "sizes": list(c.sizes),
            "times_s": list(c.times_s), "total_s": c.total_s, "one_shot_s": c.one_shot_s,
            "extra_bytes": c.extra_bytes, "min_compute_bound_chunk": c.min_chunk}


def _ms(seconds: float) -> str:
    """Milliseconds, four significant digits below a second.

    >>> _ms(0.0123), _ms(0.14230612), _ms(1.5)
    ('12.3 ms', '142.3 ms', '1,500 ms')
    """
    return f"{seconds * 1e3:,.4g} ms" if seconds < 1 else f"{seconds * 1e3:,.0f} ms"


def _print_batching(b, replicas: int) -> None:
    each = " per replica" if replicas > 1 else ""
    print(f"batching {b.batch} prompts of {b.prompt} tokens into one prefill (arrivals at "
          f"{_per_s(b.rate_per_s, '.4g')}{each})")
    print(f"  execution          {_ms(b.execution_s)} ({_ms(b.per_prompt_s)} per prompt; one "
          f"prompt alone {_ms(b.single_s)})")
    print(f"  TTFT first prompt  {_ms(b.first_s)} (waits {_ms(b.wait_s)} for {b.batch - 1} "
          f"more arrival{'' if b.batch == 2 else 's'})")
    print(f"  TTFT last prompt   {_ms(b.last_s)}")
    if b.stops_helping is None:
        print("  stops helping      never: the projections never reach the ridge")
        return
    already = "; here one prompt is compute-bound already" if b.stops_helping <= 1 else ""
    print(f"  stops helping at   {b.stops_helping:,.3g} prompts = projection crossover "
          f"{b.crossover_rows:,.0f} rows / {b.prompt} tokens")
    print("                     (beyond it the projections are compute-bound: a larger batch")
    print(f"                     no longer lowers the time per prompt{already})")


def _print_chunking(c) -> None:
    from ..tables import si

    n = len(c.sizes)
    last = f"; the last {c.sizes[-1]} tokens" if c.sizes[-1] != c.chunk else ""
    print(f"chunked prefill of {c.prompt} tokens in chunks of {c.chunk} ({n} chunk"
          f"{'' if n == 1 else 's'}{last}; the layers only, batch 1)")
    starts = [sum(c.sizes[:k]) for k in range(n)] if n <= 6 else None
    for k in range(n) if n <= 6 else [0, 1, 2, None, n - 2, n - 1]:
        if k is None:
            print("  …")
            continue
        start = starts[k] if starts else k * c.chunk
        label = f"chunk {k}"
        print(f"  {label:<18} {_ms(c.times_s[k])} (tokens {start}–{start + c.sizes[k] - 1})")
    print(f"  total              {_ms(c.total_s)} ({c.total_s / c.one_shot_s:.4g} × the one-shot "
          f"{_ms(c.one_shot_s)}, the same layers in one pass)")
    print(f"  extra HBM bytes    {si(c.extra_bytes, 'B')} (weights again for each later chunk, "
          "earlier chunks' KV cache)")
    if c.min_chunk is None:
        print("  smallest chunk     none keeps the projections compute-bound: they never reach "
              "the ridge")
    else:
        print(f"  smallest chunk     {c.min_chunk:,.1f} tokens keeps the projections compute-bound "
              "(the projection crossover)")


def run(args: argparse.Namespace) -> int:
    from .. import service

    service.check_rate(args.rate)
    _check_extras(args)
    prepared = prepare(args)
    result = service.ttft(args.rate, prepared.model, args.slo)
    batch, chunk = _extras(args)
    if args.json:
        out = {**prepared.inputs, "rate_per_s": args.rate,
               "execution_s": result.execution_s, "queueing_s": result.queueing_s,
               "total_s": result.total_s, "utilization": result.utilization,
               "max_rate_per_s": result.max_rate_per_s,
               "stable_rate_per_s": result.stable_rate_per_s}
        if batch is not None:
            out["batching"] = _batching_json(batch)
        if chunk is not None:
            out["chunking"] = _chunking_json(chunk)
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
    if batch is not None:
        _print_batching(batch, args.replicas)
    if chunk is not None:
        _print_chunking(chunk)
    return 0
