"""The public API: ``roofline.prefill(...)`` and ``roofline.crossovers(...)`` from names, paths or
loaded specs, returning results that print as tables (and as Markdown in Jupyter) and keep the
exact SymPy expressions they were evaluated from."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from os import PathLike
from dataclasses import replace
from typing import TYPE_CHECKING

from . import evaluate
from .derive.architecture import DEFAULT_ATTENTION
from .errors import InputError
from .evaluate import Setting
from .specs.hardware import Hardware, load_hardware
from .results import CrossoverTable, PrefillTable
from .specs.model import ModelShape, load_model

if TYPE_CHECKING:  # annotations only: a command imports the parts it runs
    from pathlib import Path
    from typing import Any

    import numpy as np

    from .serving.result import TTFTResult
    from .specs.distribution import Distribution
    from .specs.network import Network

__all__ = ["setting", "prefill", "prefill_columns", "crossovers", "ttft", "hybrid", "request",
           "goodput",
           "PrefillTable", "CrossoverTable", "TTFTResult"]


def __getattr__(name: str) -> Any:
    """``TTFTResult`` is imported on first use: the serving package loads numpy."""
    if name == "TTFTResult":
        from .serving.result import TTFTResult

        return TTFTResult
    raise AttributeError(f"module 'roofline.api' has no attribute {name!r}")


def setting(hardware: str | Hardware, model: str | ModelShape, *, dtype: str = "bf16",
            weight_dtype: str | None = None, kv_dtype: str | None = None,
            attention: str | None = None, batch: int = 1, kv_cache: str = "window",
            fusion: str = "none", mla_decode: str = "absorbed", tp: int = 1, pp: int = 1,
            overlap: bool = False, ep: int = 1, cp: int = 1,
            network: str | Network | None = None, act_dtype: str | None = None,
            pipeline: str = "chunked") -> Setting:
    """A :class:`Setting` from names or paths (``"H100-SXM"``, ``"my/device.toml"``) or specs.

    ``attention=None`` is ``kernel``: the FlashAttention-2 order at the released kernels'
    128-row tiles, behind the device's caches where its file gives them. A model whose weights
    do not fit in the device's memory is a warning. ``kv_cache``: a sliding-window layer's
    cache, ``"window"`` (the last W tokens) or ``"full"``. ``fusion``: ``"none"`` (element-wise
    operations as separate kernels, as vLLM runs them) or ``"elementwise"`` (folded into the
    neighbouring GEMM or attention kernel, as TensorRT-LLM and compiled graphs do).
    ``mla_decode``: a latent-attention model's decode step, ``"absorbed"`` or ``"naive"``.
    ``tp``: tensor-parallel devices (one device's share is evaluated, with its all-reduces);
    ``overlap``: those hidden under the compute (a bound), not after it (the default);
    ``pp``: pipeline stages; ``pipeline``: how a prompt crosses them, ``"chunked"`` (the
    default bound: its chunks fill the pipeline, so it takes at least a stage's mean share of
    the work, the sends hidden) or ``"whole"`` (through each stage in turn, DistServe's
    inter-op instance: the stages' sum and the sends). ``ep``: expert-parallel devices of a mixture-of-experts model (the
    routed experts spread over them, each running its own ``batch`` sequences; the dispatch and
    combine all-to-alls per MoE layer). ``cp``: context-parallel devices (ring attention: the
    prompt split over them, the K/V blocks passed around the ring under the attention).
    ``network``: the link between nodes (a name of ``hardware/network/`` or a path), which
    times a collective whose devices leave one node (the device file's
    ``interconnect.devices_per_node``). ``act_dtype``: the activations' data type (GEMM
    inputs and outputs, the residual stream, the collectives); by default the compute type's,
    which under fp8 is the permissive reading (engines write fp8 GEMMs' outputs in bf16:
    ``act_dtype="bf16"`` counts them as stored). ``weight_dtype`` defaults to the checkpoint's
    (a config's ``quantization_config``), else ``dtype``.
    """
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    mo = model if isinstance(model, ModelShape) else load_model(model)
    net = network
    if network is not None:  # the network's module only where one is given
        from .specs.network import Network, load_network

        net = network if isinstance(network, Network) else load_network(network)
    mode = DEFAULT_ATTENTION if attention is None else attention  # "" is refused, not kernel
    s = Setting(hw, mo, dtype, weight_dtype, kv_dtype, mode, batch, kv_cache, fusion, mla_decode,
                tp, pp, overlap, ep, cp, net, act_dtype, pipeline)
    weights = evaluate.held_bytes(s, "weights")  # one device's share
    if weights > hw.memory_capacity:
        warnings.warn(f"{mo.name}'s weights ({weights / 1e9:.4g} GB in "
                      f"{s.precision['weights']}) do not fit in {hw.name}'s memory "
                      f"({hw.memory_capacity / 1e9:.4g} GB): the model assumes they do",
                      stacklevel=2)
    return s


def prefill(hardware: str | Hardware, model: str | ModelShape, prompts: int | Sequence[int], *,
            context: int | None = None, **options: Any) -> PrefillTable:
    """Prefill time, FLOPs, bytes, intensity and bound at each prompt length, with the decode
    step at ``context`` cached tokens (default: the longest prompt; at least it) beside it."""
    if context is not None:
        evaluate.check_count(context, "context")
    s = setting(hardware, model, **options)
    one = not hasattr(prompts, "__iter__")  # one length (a number, numpy's too), checked as such
    tokens = evaluate.check_prompts([prompts] if one else prompts)
    longest = max(tokens)
    if context is not None and context < longest:
        raise InputError("context", f"must be at least the longest prompt ({longest:,} tokens): "
                         "the decode step follows the prefill, whose prompt it has cached",
                         context)
    points = evaluate.prefill(s, tokens)
    _warn_longest(s, longest)
    message = context and evaluate.check_memory(s, context, "the decode step", "decode")
    if message:
        warnings.warn(message, stacklevel=2)
    return PrefillTable(s, points, evaluate.decode(s, context or longest))


def prefill_columns(hardware: str | Hardware, model: str | ModelShape,
                    prompts: Sequence[int] | np.ndarray, **options: Any) -> dict[str, np.ndarray]:
    """The prefill at many prompt lengths as numpy arrays over them: ``prompt_tokens``,
    ``time_s``, ``flops``, ``bytes`` (HBM), ``intensity`` and ``compute_bound``: the totals of
    :func:`prefill`'s table, with no record per point (10⁶ lengths in about a second, where
    the table's records would take half a minute); ``estimate_s``, the estimate beside the
    bound, where the device file has an ``[estimate]``. ``options`` as :func:`setting`;
    ``pandas.DataFrame(columns)`` makes a frame of it."""
    import numpy as np

    s = setting(hardware, model, **options)
    tokens = np.asarray(prompts)
    if tokens.ndim != 1 or tokens.dtype.kind not in "iu" or not tokens.size \
            or tokens.min() < 1 or tokens.max() > 10**9:
        evaluate.check_prompts(list(np.atleast_1d(prompts).tolist()), "prompts")  # which, why
        raise InputError("prompts", "must be a one-dimensional sequence of integers",
                         f"array of shape {tokens.shape}, dtype {tokens.dtype}")
    _warn_longest(s, int(tokens.max()))
    from .evaluate.estimate import estimate_columns

    est = estimate_columns(s, tokens)
    columns = evaluate.prefill_columns(s, tokens)
    return columns if est is None else {**columns, "estimate_s": est["time_s"]}


def _warn_longest(s: Setting, longest: int) -> None:
    """A warning where the longest prompt runs past the model's context, and where its prefill
    does not fit in one device's memory (evaluated all the same); the caller's line named."""
    for message in (s.model.beyond_context(longest, f"prompt: {longest} tokens"),
                    evaluate.check_memory(s, longest, "the prefill")):
        if message:
            warnings.warn(message, stacklevel=3)


def crossovers(hardware: str | Hardware, model: str | ModelShape, **options: Any) -> CrossoverTable:
    """Every ``crossover.*`` of the catalogue evaluated for a device and model; with
    ``attention=MODE``, only the crossovers of that attention mode (and those of none)."""
    mode = options.get("attention")
    if mode is None:  # every mode is listed: no attention mode needs choosing
        options = {**options, "attention": "ideal"}
    s = setting(hardware, model, **options)
    values = evaluate.crossover_values(s)
    if mode is not None:
        values = {n: v for n, v in values.items()
                  if n.rpartition(".")[2] == mode or "." not in n}
    return CrossoverTable(s, values)


def _prefill_times(s: Setting, lengths: np.ndarray) -> np.ndarray:
    """The one-device prefill time of each prompt length, seconds (the core's ``prefill_time``)."""
    return evaluate.prefill_time(s, lengths)


def ttft(hardware: str | Hardware, model: str | ModelShape, *, prompt: int | None = None,
         prompt_dist: str | Path | Distribution | Sequence[int] | None = None,
         rate: float | None = None,
         slo: float | None = None, parallel: str | None = None, speedup: float | None = None,
         replicas: int = 1, batch_prompts: int | None = None, chunk: int | None = None,
         dtype: str = "bf16", weight_dtype: str | None = None, kv_dtype: str | None = None,
         attention: str | None = None, kv_cache: str = "window",
         fusion: str = "none", tp: int = 1, pp: int = 1, overlap: bool = False, ep: int = 1,
         cp: int = 1, network: str | Network | None = None,
         act_dtype: str | None = None, pipeline: str = "chunked") -> TTFTResult:
    """Mean time to first token of prompts of ``prompt`` tokens (or lengths drawn from
    ``prompt_dist``: a file, a :class:`~roofline.specs.distribution.Distribution` or the lengths
    themselves, equally likely) arriving
    at ``rate`` per second: execution (the roofline prefill, one sequence) and queueing (DistServe
    §3.1 Eq. 1–3; M/G/1 for a distribution) apart. ``slo`` adds the highest rate meeting that
    mean TTFT; ``parallel`` is ``"inter"`` or ``"intra"`` (with ``speedup`` K in (1, 2]);
    ``replicas`` share the arrivals. Without ``rate`` only the queue is described.

    With one ``prompt`` and no parallelism, ``batch_prompts=B`` adds B prompts batched into one
    prefill (needs ``rate``: the first prompt waits for the batch to fill) and ``chunk=C`` the
    prompt prefilled in chunks of C tokens (in the setting's attention mode). The setting
    options are those of :func:`setting` (one sequence per prefill).

    ``parallel="intra"`` without ``speedup``: K is derived from the model, the prefill time on
    one device over that on two devices with tensor parallelism (each prompt length's mean:
    K = E[t(1)]/E[t(2)]), and the result says so; ``speedup`` still overrides it.
    ``parallel="inter"``: the setting's layers split over twice its pipeline stages
    (:func:`roofline.serving.pipeline.doubled`), which the result's setting holds: the same
    answer as ``pp`` doubled, execution, first token, estimate and memory alike. Under
    ``pipeline="whole"`` the stage times come from the model (:func:`roofline.evaluate.parallel.stage_times`): the
    queue is served at the slowest stage's time and each prompt's execution is the stages' sum
    with the sends (:func:`roofline.derive.pipeline.interop_ttft`), not DistServe's t/2; the
    result says so. Under ``pipeline="chunked"`` (the default bound) a prompt's chunks fill
    the pipeline, which serves it in a stage's mean share of its time.
    """
    from . import serving as queueing
    from .serving.result import TTFTResult
    import numpy as np

    from .specs.distribution import Distribution, read_distribution

    if (prompt is None) == (prompt_dist is None):
        raise InputError("prompt", "give one of prompt (tokens) and prompt_dist (lengths)",
                         prompt)
    if rate is not None:
        queueing.checks.check_rate(rate)
    if slo is not None:
        queueing.checks.check_slo(slo)
    for name, value in (("batch_prompts", batch_prompts), ("chunk", chunk)):
        if value is not None and prompt_dist is not None:
            raise InputError(name, "needs one prompt length (prompt), not a distribution "
                             "(prompt_dist)", str(prompt_dist))
        if value is not None and parallel is not None:
            raise InputError(name, "models one prefill instance on one device, not parallel",
                             parallel)
    if batch_prompts is not None and rate is None:
        raise InputError("rate", "batching needs an arrival rate: the first prompt waits for "
                         "the batch to fill")
    if prompt is not None:
        queueing.checks.check_prompt(prompt)
        if chunk is not None:
            queueing.checks.check_chunk(chunk, prompt)
        dist = Distribution.of([prompt], where="prompt")
    elif isinstance(prompt_dist, Distribution):
        dist = prompt_dist
    elif isinstance(prompt_dist, (str, PathLike)):
        dist = read_distribution(prompt_dist)
    elif isinstance(prompt_dist, (Sequence, np.ndarray)):  # the lengths, equally likely
        dist = Distribution.of(prompt_dist, where="prompt_dist")
    else:
        raise InputError("prompt_dist", "a file, a Distribution or a sequence of prompt "
                         "lengths", prompt_dist)
    if batch_prompts is not None:
        queueing.checks.check_batch(batch_prompts)
    derive_k = parallel == "intra" and speedup is None
    queueing.queue_model(1.0, None, parallel, 1.5 if derive_k else speedup,
                         replicas)  # the options, before any work
    s = setting(hardware, model, dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                act_dtype=act_dtype,
                attention=attention, kv_cache=kv_cache, fusion=fusion, tp=tp, pp=pp,
                overlap=overlap, ep=ep, cp=cp, network=network, pipeline=pipeline)
    if parallel == "inter":  # the setting's stages doubled, queued as pp stages are
        s = queueing.pipeline.doubled(s)
    label = (None if prompt_dist is None else str(prompt_dist)
             if isinstance(prompt_dist, (str, PathLike)) else "the given distribution")
    longest = int(dist.lengths.max())
    message = s.model.beyond_context(longest, f"prompt: {longest} tokens" if prompt_dist is None
                                     else f"prompt_dist: {longest} tokens (the longest in "
                                     f"{label})")
    if message:
        warnings.warn(message, stacklevel=2)
    for name, value in (("batch_prompts", batch_prompts), ("chunk", chunk)):
        if value is not None and s.parallel:  # batches and chunks are one device's prefill
            raise InputError(name, "models the prefill on one device; give tp, pp, ep and cp "
                             f"of 1 (the setting: {s.parallel_words.removeprefix(', ')})",
                             value)
    batched = s if not batch_prompts else replace(s, batch=batch_prompts)
    message = evaluate.check_memory(batched, longest, "the prefill")
    if message:
        warnings.warn(message, stacklevel=2)
    mean, second = queueing.moments(dist, lambda lengths: _prefill_times(s, lengths))
    if prompt is not None:
        second = mean**2  # one length: exactly deterministic
    if derive_k:
        speedup = _intra_speedup(s, dist, mean)
    # the setting's pipeline stages take a new prompt when the slowest is free, as inter-op
    # does; each expert-parallel rank prefills its own prompts: N_ep servers of the arrivals
    stages = queueing.pipeline.stages(s, dist, prompt is not None) if s.pp > 1 else None
    queue = queueing.queue_model(mean, second, "inter" if stages else parallel, speedup,
                                 replicas * s.ep, None if stages is None else stages[:3])
    point = None if rate is None else queueing.ttft(rate, queue, slo)
    batch = None if batch_prompts is None else queueing.batching(
        s, prompt, batch_prompts, rate / replicas)  # each replica's batches fill at R/N
    chunks = None if chunk is None else queueing.chunking(s, prompt, chunk)
    first_token, estimate, estimate_queue = queueing.parts.ttft_parts(
        s, dist, prompt is not None, queue, rate, mean)
    return TTFTResult(s, dist, prompt, label, parallel, speedup, replicas, slo, mean, second,
                      queue, point, batch, chunks, speedup_derived=derive_k,
                      stage_s=None if stages is None else stages[3],
                      first_token_s=first_token, estimate=estimate,
                      estimate_queue=estimate_queue)


def _intra_speedup(s: Setting, dist: Any, mean: float) -> float:
    """DistServe's two-way intra-op speedup K from the model: the mean prefill time of the
    setting over that of the same setting on two tensor-parallel devices
    (:mod:`roofline.derive.tensor_parallel`). Where two devices cannot run it, or K falls
    outside (1, 2] (communication outweighs the split), an InputError naming ``speedup``."""
    from .serving.queue import moments

    try:
        two = replace(s, tp=2 * s.tp)
    except InputError as err:
        raise InputError("speedup", f"cannot be derived for two-way intra-op parallelism "
                         f"({err.rule}); give the speedup K", err.value) from None
    mean_two, _ = moments(dist, lambda lengths: _prefill_times(two, lengths))
    k = mean / mean_two
    if not 1 < k <= 2:
        raise InputError("speedup", f"derived K = {k:.4g} (t(TP {s.tp})/t(TP {2 * s.tp})) lies "
                         "outside (1, 2]: DistServe's Eq. 3 does not apply; give the speedup K")
    return k


def hybrid(hardware: str | Hardware, model: str | ModelShape, *, decodes: int,
           context: int | None = None, tpot: float | None = None, chunk: int | None = None,
           done: int = 0, prompt: int | None = None, **options: Any) -> Any:
    """Prefill beside decode (Sarathi-Serve's hybrid step, :mod:`roofline.serving.hybrid`):
    ``decodes`` sequences at ``context`` cached tokens, alone; with ``tpot`` (seconds) the
    largest chunk, after ``done`` tokens of its prompt, whose step meets that TPOT objective
    (the crossover ``tpot_chunk_budget_tokens.<mode>`` and the whole-token budget); with ``chunk``
    the step of that chunk after ``done``; with ``prompt`` that prompt prefilled in chunks of
    ``chunk`` (else of the budget) beside the decodes. ``decodes`` 0: the chunk (or the prompt's
    chunks) alone, with no context and no objective. One device, or one device's share under
    ``tp``; ``options`` as :func:`setting` (``batch`` stays 1: the decodes are ``decodes``)."""
    from .serving import hybrid as h

    if options.get("batch", 1) != 1:
        raise InputError("batch", "the step's decodes are given by decodes; batch stays 1",
                         options["batch"])
    h.check_options(decodes, context, tpot, chunk, done, prompt)
    s = setting(hardware, model, **options)
    at = context or 0  # the decodes' S: 0 where there are none (no term holds it then)
    b = h.budget(s, decodes, at, tpot, done) if tpot is not None else None
    one = h.step(s, chunk, done, decodes, at) if chunk is not None else None
    chunked = None if prompt is None else h.chunked_prompt(s, prompt, chunk, decodes, at, tpot)
    longest = max((context or 0) + (len(chunked.steps) if chunked else 1), done + (chunk or 0),
                  prompt or 0, done + (b.chunk or 0) if b else 0)
    messages = [s.model.beyond_context(longest, f"hybrid: {longest} tokens")]
    if decodes:
        messages.append(evaluate.check_memory(replace(s, batch=decodes), at + 1,
                                              "the decodes' step", "decode"))
    for message in messages:
        if message:
            warnings.warn(message, stacklevel=2)
    alone = h.step(s, 0, 0, decodes, at) if decodes else None
    return h.HybridResult(s, alone, b, one, chunked)


def request(hardware: str | Hardware, model: str | ModelShape, *, prompt: int, output: int,
            **options: Any) -> Any:
    """A batch of ``batch`` requests of ``prompt`` tokens in and ``output`` tokens out, end to
    end (:mod:`roofline.serving.request`): the prefill, the decode steps over the growing
    cache, the memory at the end, the throughput and its bound. ``options`` as
    :func:`setting` (tensor parallelism: one device's share; no pp, ep or cp)."""
    from .serving.request import request as run

    s = setting(hardware, model, **options)
    out = run(s, prompt, output)
    end = prompt + output - 1
    for message in (s.model.beyond_context(end, f"request: {end} tokens at its end"),
                    evaluate.check_memory(s, end, "the last decode step", "decode")):
        if message:
            warnings.warn(message, stacklevel=2)
    return out


def goodput(hardware: str | Hardware, model: str | ModelShape, *, prompt: int, output: int,
            ttft: float, tpot: float, attainment: float = 0.9, devices: int = 8,
            link_bandwidth: float | None = None, **options: Any) -> Any:
    """Goodput per device of a disaggregated prefill–decode pair (each side's tensor and
    pipeline degrees searched up to ``devices``, the KV cache sent between them over the
    interconnect, or at ``link_bandwidth`` bytes/s a link) against a colocated instance with
    chunked prefill, for requests of ``prompt`` and ``output`` tokens under a ``ttft`` and a
    ``tpot`` objective (seconds) met by ``attainment`` of the requests
    (:mod:`roofline.serving.goodput`). ``options`` as :func:`setting`, without splits."""
    from .serving import checks
    from .serving.goodput import goodput as run

    for value, name in ((prompt, "prompt"), (output, "output"), (devices, "devices")):
        evaluate.check_count(value, name)
    checks.check_slo(ttft, "ttft", "the TTFT objective")
    checks.check_slo(tpot, "tpot", "the TPOT objective")
    with warnings.catch_warnings():  # one device's weights too large: the search weighs it
        warnings.simplefilter("ignore")
        s = setting(hardware, model, **options)
    end = prompt + output - 1
    message = s.model.beyond_context(end, f"goodput: {end} tokens at a request's end")
    if message:
        warnings.warn(message, stacklevel=2)
    return run(s, prompt, output, ttft, tpot, attainment, devices, link_bandwidth)
