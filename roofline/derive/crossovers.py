"""Crossover lengths in closed form, each solved by SymPy from its defining equality.

Every crossover is an equality ``grows(x) = other(x)`` in one unknown x (prompt tokens T, or the
decode batch B), oriented so that ``grows − other`` is negative at x → 0 and the crossover is its
smallest positive root. The equality is piecewise (each ``Max``/``Min``); its branches and their
closed forms are :mod:`roofline.derive.branches`. This module builds the equalities: the
prefill's intensity against the ridge, attention against the projections, the memory a prompt
needs against the device's, a working set against a cache, and the decode batch's. The
simplified form for wide layers neglects activation traffic (b_a → 0); its relative error is
reported beside it.
"""

from __future__ import annotations

from functools import cache

from sympy import Expr, Pow, Rational, cancel, factor

from ..symbols import B, C, C_mem, N_cp, N_tp, P_peak, T, tau_tpot
from . import attention, levels, local, parallel, tensor_parallel, window
from .bounds import aggregate_memory_time, aggregate_time, total_time
from .branches import Branch, Crossover, cross
from .decode import decode_operations, model_kv_cache_bytes
from .entry import Entry
from .parallel_crossovers import parallel_crossovers
from .transformer import (Architecture, Operation, prefill_operations, total_flops,
                          weight_bytes)

__all__ = ["crossovers", "catalogued", "entries", "FAMILIES"]

FA1 = "FlashAttention (arXiv 2205.14135)"
BOOK = "scaling-book 'All About Rooflines' and 'All the Transformer Math You Need to Know'"
INFERENCE = "scaling-book 'All About Transformer Inference'"
_ATTENTION_SOURCE = {
    "naive": f"{FA1} Algorithm 0 and Theorem 2: Θ(TH + T²) traffic caps the intensity at H/b_a",
    "tiled": f"{FA1} Algorithm 1 and Theorem 2: Θ(T²H²/M) traffic caps it at about 4·B_c/(3·b_a)",
    "tiled_fa2": "FlashAttention-2 (arXiv 2307.08691) loop order: K, V re-read per row block "
                 "caps the intensity at about 2·B_r/b_a",
    "kernel": "FlashAttention-2 (arXiv 2307.08691) loop order at the released kernels' "
              "128-row tiles: K, V re-read per row block cap the intensity at about 2·128/b_a",
    "ideal": "scaling-book 'All About Transformer Inference': ideal attention intensity "
             "S·T/(S+T)",
}


def _prefill(arch: Architecture, mode: str, caches: tuple[str, ...]) -> list[Operation]:
    """The prefill's compute operations (block counts relaxed), or where ``arch.parallel``
    one device's share of them (:func:`.parallel.device_prefill_operations`, its collectives
    left out: they move no memory bytes, and their own crossovers are
    :mod:`.parallel_crossovers`'s)."""
    if not arch.parallel:
        return prefill_operations(arch, mode, smooth=True, caches=caches)
    return [op for op in parallel.device_prefill_operations(arch, mode, True, caches)
            if op.kind != "communication"]


def _of(ops: list[Operation], kind: str) -> list[Operation]:
    return [op for op in ops if op.kind == kind]


def _held(arch: Architecture) -> tuple[Expr, Expr]:
    """The bytes of the weights and the KV cache, and of one layer's naive score matrix, that
    one device holds: the whole on one device; where ``arch.parallel`` its share, as
    ``prefill``'s memory check counts it (:func:`roofline.evaluate.memory.footprint`): the
    weights and KV cache of its tensor, expert and context splits (over N_pp stages the
    fullest stage's, :func:`.parallel.device_resident_bytes`), of one layer's scores its
    heads (1/N_tp) and query rows (1/N_cp)."""
    scores = local.largest_scores(arch)
    if not arch.parallel:
        return weight_bytes(arch) + model_kv_cache_bytes(arch), scores
    return parallel.device_resident_bytes(arch), scores / (N_tp * N_cp)


@cache
def crossovers(arch: Architecture = Architecture(),
               caches: tuple[str, ...] = ()) -> dict[str, Crossover]:
    """Every crossover of the catalogue for one architecture behind the cache levels
    ``caches`` (:mod:`roofline.derive.levels`), by name: on one device, or where
    ``arch.parallel`` on one device's share under the degrees N_tp, N_pp, N_ep, N_cp (with
    every degree 1 the same values)."""
    out: list[Crossover] = []
    device = ("one device's share",) if arch.parallel else ()
    proj = _of(_prefill(arch, "tiled", ()), "projection")
    out.append(cross(
        "projection_compute_bound_tokens",
        "prompt length at which the layer's projections reach the ridge intensity", "tokens",
        f"{BOOK}: a matmul is compute-bound when its batch exceeds ≈ I_ridge·b_w/2", T,
        total_flops(proj), P_peak * aggregate_memory_time(proj), "intensity",
        ("projections of one layer (QKV, O, MLP) as one operation", "B sequences"), True))
    cached = f"; cache levels from {levels.SOURCE}" if caches else ""
    for mode in attention.MODES:
        ops = _prefill(arch, mode, caches)
        out.append(cross(
            f"prefill_compute_bound_tokens.{mode}",
            f"prompt length at which the whole prefill ({mode} attention) reaches the ridge",
            "tokens", f"{BOOK}; attention bytes from {FA1}{cached}", T,
            total_flops(ops), P_peak * aggregate_memory_time(ops), "intensity",
            ("all operations as one: total FLOPs / total bytes", f"attention: {mode}",
             *(("the slowest memory level binds",) if caches else ()), *device), True))
    attn_t = _of(_prefill(arch, "tiled", caches), "attention")
    out.append(cross(
        "attention_equals_projection_flops_tokens",
        "prompt length at which causal attention's FLOPs equal the projections' FLOPs", "tokens",
        f"{BOOK}: attention FLOPs equal QKVO FLOPs at T = 2D (MHA, non-causal, QKVO only)", T,
        total_flops(attn_t), total_flops(proj), "balance",
        ("one layer; causal attention; all projections (QKV, O, MLP)",)))
    for mode in attention.MODES:
        ops = _prefill(arch, mode, caches)
        attn = _of(ops, "attention")
        attn_time = total_time(attn)
        # the catalogue shows attention memory-bound where its intensity is capped (naive, tiled)
        slow = (attn_time,) if mode not in ("ideal", "kernel") else ()
        out.append(cross(
            f"attention_dominates_time_tokens.{mode}",
            f"prompt length at which {mode} attention's roofline time equals the projections'",
            "tokens", f"{BOOK} (roofline time max(F/P, Q/β)); {FA1}{cached}", T,
            attn_time, total_time(_of(ops, "projection")), "balance",
            ("all layers; each operation at its own roof, as prefill times it",
             "main branch: projections compute-bound; attention "
             + ("memory-bound" if slow else "compute-bound"), *device), memory_bound=slow))
        out.append(cross(
            f"attention_compute_bound_tokens.{mode}",
            f"prompt length at which {mode} attention reaches the ridge intensity", "tokens",
            _ATTENTION_SOURCE[mode] + cached, T,
            total_flops(attn), P_peak * aggregate_memory_time(attn), "intensity",
            (f"attention: {mode}",)))
    if caches:
        windowed = arch.window == "all"  # every layer windowed: its working set is the band's
        last = caches[-1]
        # one device's thread blocks in flight over its own heads (context parallelism splits
        # the query rows, not the keys a block re-reads)
        share = tensor_parallel.substitution() if arch.parallel else {}
        for mode in levels.TILED:
            out.append(cross(
                f"attention_cache_spill_tokens.{mode}",
                f"prompt length at which the K and V that {mode} attention's thread blocks in "
                f"flight re-read outgrow the {last.upper()} cache", "tokens", levels.SOURCE, T,
                levels.working_set(mode, windowed, smooth=True).xreplace(share),
                levels.CAPACITY[last],
                "cache", ("N_sm thread blocks in flight, one per SM",
                          "sliding-window layers: the keys of the band" if windowed else
                          "global (full causal) layers")))
    resident, scores = _held(arch)
    out.append(cross(
        "naive_scores_exceed_memory_tokens",
        "prompt length at which one layer's materialised scores no longer fit beside the weights "
        "and the KV cache", "tokens", f"{FA1} Algorithm 0 (S, P are T×T per head)", T,
        resident + scores, C_mem, "memory",
        ("one layer's scores at a time; weights and KV cache resident; activations ignored",
         *device)))
    out.append(cross(
        "kv_cache_exceeds_memory_tokens",
        "prompt length at which the KV cache no longer fits beside the weights", "tokens",
        f"{INFERENCE} (KV cache 2·bytes·H·K·L·T)", T,
        resident, C_mem, "memory", ("weights resident; B sequences", *device)))
    out.append(cross(
        "kv_cache_exceeds_memory_batch",
        "sequences at which the KV cache of T tokens each no longer fits beside the weights "
        "(evaluated at the model's context limit)", "sequences",
        f"{INFERENCE} (KV cache 2·bytes·H·K·L·T per sequence)", B,
        resident, C_mem, "memory",
        ("weights resident; each sequence's KV cache of T tokens",
         "the largest batch that fits is the value rounded down", *device)))
    step = parallel.device_decode_operations(arch) if arch.parallel else decode_operations(arch)
    dec = _of(step, "projection")
    out.append(cross(
        "decode_critical_batch",
        "decode batch at which one step's projections reach the ridge intensity", "sequences",
        f"{INFERENCE}: critical batch ≈ I_ridge·b_w/2 (240 in bf16 on TPU v5e, 120 with int8 "
        "weights)", B,
        total_flops(dec), P_peak * aggregate_memory_time(dec), "intensity",
        ("one decode step; projections of one layer as one operation",), True))
    out += _new_family_crossovers(arch)
    out += _this_year_crossovers(arch, caches)
    out += _overhead_crossovers(arch, caches)
    out += _workspace_crossovers(arch)
    out += _deadline_crossovers(arch, caches)
    out += parallel_crossovers(arch, caches)
    return {c.name: c for c in out}


# --- issue 12: crossovers of the new families (appended) ------------------------------------
def _new_family_crossovers(arch: Architecture) -> list[Crossover]:
    """Crossovers that exist only for some architectures: multi-head latent attention's
    context beyond which its weight-absorbed decode step is faster than the naive one, which
    re-expands the latent cache (:func:`roofline.derive.mla.decode_step`)."""
    if not arch.mla:
        return []
    from . import mla
    from ..symbols import T_ctx

    naive, absorbed = (aggregate_time(mla.decode_step(form)) for form in ("naive", "absorbed"))
    return [cross(
        "mla_absorption_pays_off_context",
        "decode context beyond which latent attention's absorbed step is faster than expanding "
        "the latent cache", "tokens", f"{mla.SOURCE}; {mla.REFERENCE}", T_ctx,
        naive, absorbed, "balance",
        ("one layer's decode operations that differ between the forms, each form as one "
         "operation at its roof", "B sequences, one new token each",
         "main branch: both forms memory-bound"), memory_bound=(naive, absorbed))]


# --- issue 31: windows, linear-attention hybrids, sparse attention (appended) ---------------
def _this_year_crossovers(arch: Architecture, caches: tuple[str, ...]) -> list[Crossover]:
    """Crossovers of this year's families: where a windowed layer's attention stops growing
    quadratically (T = W); where a hybrid's full-attention layers take as long as its
    linear-attention layers' recurrence (T² against T); where sparse attention's indexer,
    quadratic, takes as long as the top-k attention, linear beyond k_top."""
    from . import linear_attention, sparse_attention
    from ..symbols import W

    out: list[Crossover] = []
    if arch.window != "none" and arch.window_kind == "sliding":
        out.append(cross(
            "window_stops_growing_tokens", "prompt length beyond which a windowed layer's "
            "attention grows as W·T instead of T² (each query sees W keys)", "tokens",
            window.SOURCE, T, T, W, "balance", ("windowed layers",)))
    if arch.window != "none" and arch.window_kind == "chunked":
        from . import chunked
        from ..symbols import C_att

        out.append(cross(
            "chunk_stops_growing_tokens", "prompt length beyond which a chunked layer's "
            "attention grows as C_att·T instead of T² (a query sees at most its chunk)",
            "tokens", chunked.SOURCE, T, T, C_att, "balance", ("chunked layers",)))
    device = ("one device's share",) if arch.parallel else ()
    for mode in attention.MODES if arch.linear_attention else ():
        attn = _of(_prefill(arch, mode, caches), "attention")
        linear = [op for op in attn if op.name.startswith("linear_attn")]
        full, lin = total_time([op for op in attn if op not in linear]), total_time(linear)
        slow = (lin, full) if mode in ("naive", "tiled") else (lin,)
        out.append(cross(
            f"full_attention_overtakes_linear_tokens.{mode}",
            f"prompt length at which the full-attention layers' {mode} attention takes as long "
            "as the linear-attention layers' recurrence", "tokens",
            f"{linear_attention.PAPER}; {BOOK} (roofline time max(F/P, Q/β))", T, full, lin,
            "balance", ("L − L_lin full layers against L_lin linear layers; each operation at "
                        "its own roof, as prefill times it", *device), memory_bound=slow))
    for mode in sparse_attention.SPARSE_MODES if arch.sparse_attention else ():
        attn = _of(_prefill(arch, mode, caches), "attention")
        indexer = total_time([op for op in attn if op.name.startswith("dsa.indexer")])
        main = total_time([op for op in attn if op.name.startswith("dsa.attention")])
        out.append(cross(
            f"sparse_indexer_overtakes_attention_tokens.{mode}",
            f"prompt length at which sparse attention's indexer (its scores and top-k) takes as "
            f"long as the top-k attention ({mode})", "tokens",
            f"{sparse_attention.SOURCE}; {BOOK} (roofline time max(F/P, Q/β))", T, indexer,
            main, "balance", ("every layer; the indexer scores all causal pairs, the attention "
                              "min(i + 1, k_top) keys a query", *device), memory_bound=(main,)))
    return out


# --- issue 29: the estimate's overhead (appended) --------------------------------------------
def _overhead_crossovers(arch: Architecture, caches: tuple[str, ...]) -> list[Crossover]:
    """The prompt length below which the launch and host overhead of a prefill
    (:mod:`.overhead`: n_kern kernels, each t_launch, and one step's t_host) take longer than
    its roofline time, per attention mode. n_kern is a symbol: the setting gives the kernels its
    prefill launches on one device, by the fusion choice and with its collectives, as
    ``prefill`` counts them (:func:`roofline.evaluate.estimate.kernel_count`; the default
    prefill's by fusion choice in :mod:`.overhead`'s entries). The roofline time is one
    device's share of the operations, its collectives' link time not counted (as the other
    prefill crossovers); its main branch has every operation memory-bound, as a short prompt
    runs."""
    from . import overhead

    out: list[Crossover] = []
    device = (("one device's share of the operations; its collectives' kernels counted in "
               "n_kern, their link time not",) if arch.parallel else ())
    for mode in attention.MODES:
        time = total_time(_prefill(arch, mode, caches))
        out.append(cross(
            f"overhead_dominates_below_tokens.{mode}",
            f"prompt length below which launch and host overhead take longer than the "
            f"prefill's roofline time ({mode} attention)", "tokens",
            f"{overhead.SOURCE}; {BOOK} (roofline time max(F/P, Q/β))", T, time,
            overhead.overhead_time(), "overhead",
            ("n_kern kernels back to back, each t_launch; one engine step's t_host",
             "each operation at its own roof, as prefill times it", *device),
            memory_bound=(time,)))
    return out


def _workspace_crossovers(arch: Architecture) -> list[Crossover]:
    """The prompt length at which a prefill's peak memory, its live activations and workspace
    counted (:mod:`.workspace`), outgrows the device's, per attention mode: the longest prompt
    that fits is its floor (:func:`.workspace.longest_prompt`'s closed form, solved here as
    every crossover is). One device, where the workspace is derived."""
    from . import workspace

    if not workspace.supported(arch):
        return []
    return [cross(
        f"prefill_exceeds_memory_tokens.{mode}",
        f"prompt length at which the prefill's peak memory (weights, KV cache and its live "
        f"activations, {mode} attention) exceeds the device's", "tokens", workspace.SOURCE, T,
        workspace.peak_bytes(arch, mode), C_mem, "memory",
        ("one layer's activations live at a time; weights and KV cache resident",
         "the logits of the last position"))
        for mode in attention.MODES]


# The architectures whose own crossovers the catalogue shows beside the default's: every layer
# windowed, a linear-attention hybrid, sparse attention on latent attention
FAMILIES = (Architecture(window="all"), Architecture(window="all", window_kind="chunked"),
            Architecture(linear_attention=True),
            Architecture(mla=True, q_lora=True, sparse_attention=True))


def catalogued() -> dict[str, Crossover]:
    """Every crossover the catalogue holds, by name: the default architecture's on a GPU with
    an L2, and those only latent attention and :data:`FAMILIES` have."""
    found = {c.name: c for arch in (Architecture(mla=True), *FAMILIES)
             for c in crossovers(arch, ("l2",)).values()}
    return {**found, **crossovers(Architecture(), ("l2",))}


def entries() -> list[Entry]:
    """The crossovers of the default (Llama-style) architecture on a GPU with an L2 cache, and
    those only latent attention, a window, a hybrid or sparse attention have."""
    out = []
    for c in [*crossovers(Architecture(), ("l2",)).values(),
              *_new_family_crossovers(Architecture(mla=True)),
              *(c for arch in FAMILIES for c in _this_year_crossovers(arch, ("l2",)))]:
        branch = c.main_branch
        root = branch.root
        steps: list[tuple[str, Expr]] = [
            ("defining equality: grows − other = 0", c.equation),
            ("main branch, as a polynomial", branch.equation),
            (f"solved for {c.unknown}", root),
        ]
        approx = c.simplified()
        if approx is not None:
            steps.append(("simplified (b_a → 0)", approx))
            if not _has_sqrt(root):  # a rational root: the error in closed form
                steps.append(("relative error of the simplified form",
                              factor(cancel(approx / root - 1))))
        out.append(Entry(f"crossover.{c.name}", root, c.meaning, c.unit, c.source,
                         (*c.regime, *_describe(branch)), steps=tuple(steps)))
    return out


def _has_sqrt(expr: Expr) -> bool:
    return any(p.exp == Rational(1, 2) for p in expr.atoms(Pow))


def _describe(branch: Branch) -> list[str]:
    return [f"branch: {atom} → {arg}" for atom, arg in branch.choices]


# --- issue 30: prefill beside decode (appended) -----------------------------------------------
def _deadline_crossovers(arch: Architecture, caches: tuple[str, ...]) -> list[Crossover]:
    """The largest prefill chunk whose hybrid step, beside B_d decodes at context S, meets the
    TPOT objective τ_TPOT, per attention mode (:mod:`.hybrid`: Sarathi-Serve's token budget less
    the decodes' tokens): on one device, or where ``arch.parallel`` on one device's share under
    N_tp-way tensor parallelism with its all-reduces (the step is derived under it alone)."""
    from . import hybrid

    if hybrid.unsupported(arch) is not None:
        return []
    device = ("one device's share under N_tp-way tensor parallelism; its all-reduces of the "
              "C + B_d rows at the link, on the critical path",) if arch.parallel else ()
    return [cross(
        f"tpot_chunk_budget_tokens.{mode}",
        f"largest prefill chunk whose hybrid step with B_d decodes at context S meets the TPOT "
        f"objective ({mode} attention)", "tokens", f"{hybrid.SOURCE}; {BOOK}", C,
        hybrid.step_time(arch, mode, caches, smooth=True), tau_tpot, "deadline",
        ("one engine step: the chunk after T_pre tokens of its prompt, B_d decodes at context "
         "S; the weights read once", *device, "each operation at its own roof, as prefill "
         "times it", "the chunk in whole tokens: the value rounded down in ideal and naive "
         "attention; in tiled modes, whose block counts the form relaxes, the largest whole "
         "chunk whose step meets the objective, up to a few tokens below (roofline hybrid)"))
        for mode in attention.MODES]
