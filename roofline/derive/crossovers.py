"""Crossover lengths in closed form, each solved by SymPy from its defining equality.

Every crossover is an equality ``grows(x) = other(x)`` in one unknown x (prompt tokens T, or the
decode batch B), oriented so that ``grows − other`` is negative at x → 0 and the crossover is its
smallest positive root. Both sides are polynomials of degree ≤ 2 in x once the ceilings of the
tiled attention are relaxed (``smooth``) and each ``Max``/``Min`` is resolved into one branch
(:meth:`Crossover.branch`: the catalogue shows the main one, a setting the one that holds at its
root); the root is then SymPy's solution of a₂x² + a₁x + a₀ = 0 for the branch:

    x* = (−a₁ + √(a₁² − 4·a₂·a₀)) / (2·a₂)      (x* = −a₀/a₁ when a₂ = 0),

the root that continues the linear solution as a₂ → 0, and the smaller positive one when a₂ < 0
(then the equality holds again at a larger x: the regime ends there). The simplified form for wide
layers neglects activation traffic (b_a → 0); its relative error is reported beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from math import prod

from sympy import (Dummy, Expr, Integer, Max, Min, Poly, PolynomialError, Pow, Rational, Symbol,
                   cancel, expand, factor, factor_terms, nan, oo, solve, together, zoo)

from ..symbols import B, C_mem, M_l2, M_l3, M_sram, N_sm, P_peak, T, W, b_a, beta_hbm
from . import attention, levels, window
from .bounds import memory_time, op_time
from .decode import decode_operations, model_kv_cache_bytes
from .entry import Entry
from .transformer import (Architecture, Operation, prefill_operations, total_bytes, total_flops,
                          weight_bytes)

__all__ = ["Crossover", "Branch", "Choice", "crossovers", "entries", "quadratic_root"]

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


@dataclass(frozen=True)
class Branch:
    """One branch of a piecewise equality: every Max/Min replaced by one of its arguments."""

    equation: Expr  # grows − other, a polynomial of degree ≤ 2 in the unknown
    choices: tuple[tuple[Expr, Expr], ...]  # (the Max/Min, the argument chosen)
    unknown: Symbol

    @cached_property
    def coefficients(self) -> tuple[Expr, Expr, Expr]:
        """(a₂, a₁, a₀) of the equation in the unknown, a root at 0 divided out."""
        return _coefficients(self.equation, self.unknown)

    @cached_property
    def root(self) -> Expr:
        """The closed form of this branch's crossover, solved by SymPy."""
        return _root(*self.coefficients)


# A branch is named by its choice: for each Max/Min atom of the equation (in the order of
# ``Crossover.atoms``), the index of the argument taken, in the atom's own ``args`` order.
Choice = tuple[int, ...]


@dataclass(frozen=True)
class Crossover:
    """A crossover: the defining equality, its closed form in the main branch, and notes.

    The equality is piecewise (each Max/Min), so its branches multiply: 2ᵏ for k two-argument
    atoms. None is enumerated. A setting's value is the first sign change of the equality itself
    (:mod:`roofline.evaluate.crossover` finds it numerically); the branch that holds at that root
    is then solved here, alone, for its closed form (:meth:`branch`)."""

    name: str
    meaning: str
    unit: str
    source: str
    unknown: Symbol
    grows: Expr  # the side that overtakes as the unknown grows
    other: Expr
    kind: str  # "intensity" (grows = FLOPs, other = P_peak·memory time) | "memory" | "balance"
    # | "cache" (grows = a working set, other = a cache's capacity)
    regime: tuple[str, ...] = ()  # assumptions of the main branch, in words
    main: tuple[tuple[Expr, Expr], ...] = ()  # the main branch's choices for Max/Min atoms
    wide_form: bool = False  # whether neglecting activation traffic gives a useful simple form

    @property
    def equation(self) -> Expr:
        return self.grows - self.other

    @cached_property
    def atoms(self) -> tuple[Expr, ...]:
        """The Max/Min atoms of the equality, innermost (shortest) first, so that a choice never
        lands inside an atom already replaced."""
        return tuple(sorted(self.equation.atoms(Max, Min), key=lambda a: (len(str(a)), str(a))))

    @cached_property
    def main_choice(self) -> Choice:
        """The main (catalogue) branch's choice: the regime of long prompts on a real device."""
        preferred = dict(self.main)
        return tuple(a.args.index(preferred[a]) if a in preferred else 0 for a in self.atoms)

    @property
    def branch_count(self) -> int:
        """How many branches the atoms make (none of them enumerated)."""
        return prod(len(a.args) for a in self.atoms)

    def branch(self, choice: Choice | None = None) -> Branch:
        """The branch of ``choice`` (the main one by default)."""
        return _branch(self, self.main_choice if choice is None else tuple(choice))

    @property
    def main_branch(self) -> Branch:
        return self.branch()

    def closed_form(self, branch: Branch | None = None) -> Expr:
        """The smallest positive root of the branch (the main one by default), solved by SymPy."""
        return (branch or self.main_branch).root

    def simplified(self) -> Expr | None:
        """The wide-layer form: activation traffic neglected (b_a → 0); None if the same."""
        eq = self.main_branch.equation
        if not self.wide_form or b_a not in eq.free_symbols:
            return None
        wide = eq.subs(b_a, 0)
        if wide.has(nan, zoo, oo) or not wide.has(self.unknown):
            return None  # all of its traffic is activations: no wide-layer form
        root = quadratic_root(wide, self.unknown)
        return None if root.has(nan, zoo, oo) else root


@cache
def _branch(c: Crossover, choice: Choice) -> Branch:
    if len(choice) != len(c.atoms) or any(not 0 <= i < len(a.args)
                                           for i, a in zip(choice, c.atoms)):
        raise ValueError(f"{c.name}: not a branch of {len(c.atoms)} atoms: {choice}")
    chosen = tuple((a, a.args[i]) for a, i in zip(c.atoms, choice))
    return Branch(expand(c.equation.subs(dict(chosen))), chosen, c.unknown)


def quadratic_root(equation: Expr, x: Symbol) -> Expr:
    """The root of a polynomial of degree ≤ 2 in x, which is negative at x → 0⁺, that crosses
    zero first: SymPy solves a₂x² + a₁x + a₀ for x with the coefficients as symbols, and the
    root is the one that tends to the linear solution −a₀/a₁ as a₂ → 0.

    >>> from sympy import symbols
    >>> x = symbols("x", positive=True)
    >>> quadratic_root(x**2 + x - 1, x)
    -1/2 + sqrt(5)/2
    """
    return _root(*_coefficients(equation, x))


def _coefficients(equation: Expr, x: Symbol) -> tuple[Expr, Expr, Expr]:
    """(a₂, a₁, a₀) of the branch's equation in x. A branch with x in a denominator (a miss
    fraction 1 − M/S with S ∝ x, over a sharing that grows with x) is multiplied through by it:
    every denominator is a product of positive quantities, so the roots and the sign are kept."""
    try:
        coeffs = Poly(equation, x).all_coeffs()
    except PolynomialError:
        numerator, _ = together(equation).as_numer_denom()
        coeffs = Poly(expand(numerator), x).all_coeffs()
    while len(coeffs) > 1 and coeffs[-1] == 0:  # a root at x = 0 is no crossover: divide it
        coeffs.pop()  # out (a polynomial without constant term, divided by x, drops that term)
    if len(coeffs) > 3:
        raise ValueError(f"degree {len(coeffs) - 1} in {x}: not a quadratic")
    return tuple([Integer(0)] * (3 - len(coeffs)) + coeffs)  # type: ignore[return-value]


def _root(a2: Expr, a1: Expr, a0: Expr) -> Expr:
    c2, c1, c0 = _COEFFS
    # xreplace: the coefficients are put in place of the dummies in one rebuild of the tree
    # (``subs`` gives the same expression, several times slower)
    if a2 == 0:
        return cancel(_generic_roots(False)[0].xreplace({c1: a1, c0: a0}))
    return _generic_roots(True)[0].xreplace(
        {c2: factor_terms(a2), c1: factor_terms(a1), c0: factor_terms(a0)})


_COEFFS = (Dummy("a2", real=True), Dummy("a1", real=True), Dummy("a0", real=True))


@cache
def _generic_roots(quadratic: bool) -> list[Expr]:
    c2, c1, c0 = _COEFFS
    xs = Dummy("x")
    if not quadratic:
        return solve(c1 * xs + c0, xs)
    roots = solve(c2 * xs**2 + c1 * xs + c0, xs)
    # the root that crosses first from below: at (a₂, a₁, a₀) = (1, 1, −1) the positive one
    # and at (−1, 3, −1) the smaller of the two positive ones; it tends to −a₀/a₁ as a₂ → 0
    def first(r: Expr) -> bool:
        up = complex(r.subs({c2: 1, c1: 1, c0: -1}))
        down = complex(r.subs({c2: -1, c1: 3, c0: -1}))
        return up.real > 0 and down.real < 3 / 2
    return [r for r in roots if first(r)]


def _memory(ops: list[Operation]) -> Expr:
    """The memory time of a class of operations taken as one aggregated operation: its slowest
    level, HBM or one the operations' traffic is derived at (each level's bytes summed)."""
    present = [lv for lv in levels.LEVELS if any(lv in dict(op.levels) for op in ops)]
    return memory_time(total_bytes(ops), [(lv, total_bytes(ops, level=lv)) for lv in present])


def _sum_time(ops: list[Operation]) -> Expr:
    """One roofline time for a class of operations, taken as one aggregated operation."""
    present = [lv for lv in levels.LEVELS if any(lv in dict(op.levels) for op in ops)]
    return op_time(total_flops(ops), total_bytes(ops),
                   [(lv, total_bytes(ops, level=lv)) for lv in present])


def _layer_projections(arch: Architecture) -> list[Operation]:
    return [op for op in prefill_operations(arch, "tiled", smooth=True)
            if op.kind == "projection"]


def _attention(arch: Architecture, mode: str, caches: tuple[str, ...]) -> list[Operation]:
    return [op for op in prefill_operations(arch, mode, smooth=True, caches=caches)
            if op.kind == "attention"]


def _main_choice(atom: Expr, memory_bound: bool = False) -> Expr:
    """The argument of a Max/Min that the main (catalogue) branch takes: the regime of long
    prompts on a real device. max(1, x) block counts → x (at least one block); min(n_e, rows·n_a)
    → n_e (every expert receives a token); min(T, W) → W (the prompt outgrows the sliding
    window); min(H, B_c) → B_c (the SRAM limits the row block);
    a roofline time max(F/P, Q/β) → F/P (compute-bound), or Q/β where ``memory_bound``."""
    args = atom.args
    if isinstance(atom, Min) and W in args:
        return W  # min(T, W) → W: prompts longer than the sliding window
    if any(a.has(M_l2, M_l3) for a in args) and 0 in args:
        return Integer(0)  # max(0, 1 − M/S) → 0: the working set fits in the cache
    if any(a.has(N_sm) for a in args) and not all(a.has(N_sm) for a in args):
        if isinstance(atom, Min):  # min(N_sm, T·n_q/(n_kv·B_r)) → N_sm: every SM on one head
            return next(a for a in args if a == N_sm or a.has(N_sm))
        return next(a for a in args if not a.has(N_sm))  # the working set of long prompts
    numbers = [a for a in args if a.is_number]
    if numbers:
        return next(a for a in args if not a.is_number)
    if isinstance(atom, Min):
        fixed = [a for a in args if not a.has(B) and not a.has(M_sram)]
        if len(fixed) < len(args) and any(a.has(B) for a in args):
            return fixed[0]  # min(n_e, rows·n_a)
        return next((a for a in args if a.has(M_sram)), args[0])  # min(H, B_c)
    bound = beta_hbm if memory_bound else P_peak
    return next((a for a in args if a.has(bound)),
                next((a for a in args if a.has(beta_hbm)), args[0]))  # memory time: HBM's


def _cross(name, meaning, unit, source, unknown, grows, other, kind, regime=(),
           wide_form=False, memory_bound: tuple[Expr, ...] = ()) -> Crossover:
    """A crossover whose main branch takes :func:`_main_choice` for every Max/Min, the
    time maxima inside the expressions of ``memory_bound`` at their memory roof."""
    atoms = (grows - other).atoms(Max, Min)
    slow = {a for e in memory_bound for a in e.atoms(Max)}
    main = tuple((a, _main_choice(a, a in slow)) for a in atoms)
    return Crossover(name, meaning, unit, source, unknown, grows, other, kind, regime, main,
                     wide_form)


@cache
def crossovers(arch: Architecture = Architecture(),
               caches: tuple[str, ...] = ()) -> dict[str, Crossover]:
    """Every crossover of the catalogue for one architecture behind the cache levels
    ``caches`` (:mod:`roofline.derive.levels`), by name."""
    out: list[Crossover] = []
    proj = _layer_projections(arch)
    out.append(_cross(
        "projection_compute_bound_tokens",
        "prompt length at which the layer's projections reach the ridge intensity", "tokens",
        f"{BOOK}: a matmul is compute-bound when its batch exceeds ≈ I_ridge·b_w/2", T,
        total_flops(proj), P_peak * _memory(proj), "intensity",
        ("projections of one layer (QKV, O, MLP) as one operation", "B sequences"), True))
    cached = f"; cache levels from {levels.SOURCE}" if caches else ""
    for mode in attention.MODES:
        ops = prefill_operations(arch, mode, smooth=True, caches=caches)
        out.append(_cross(
            f"prefill_compute_bound_tokens.{mode}",
            f"prompt length at which the whole prefill ({mode} attention) reaches the ridge",
            "tokens", f"{BOOK}; attention bytes from {FA1}{cached}", T,
            total_flops(ops), P_peak * _memory(ops), "intensity",
            ("all operations as one: total FLOPs / total bytes", f"attention: {mode}",
             *(("the slowest memory level binds",) if caches else ())), True))
    attn_t = _attention(arch, "tiled", caches)
    out.append(_cross(
        "attention_equals_projection_flops_tokens",
        "prompt length at which causal attention's FLOPs equal the projections' FLOPs", "tokens",
        f"{BOOK}: attention FLOPs equal QKVO FLOPs at T = 2D (MHA, non-causal, QKVO only)", T,
        total_flops(attn_t), total_flops(proj), "balance",
        ("one layer; causal attention; all projections (QKV, O, MLP)",)))
    for mode in attention.MODES:
        attn = _attention(arch, mode, caches)
        attn_time = _sum_time(attn)
        # the catalogue shows attention memory-bound where its intensity is capped (naive, tiled)
        slow = (attn_time,) if mode not in ("ideal", "kernel") else ()
        out.append(_cross(
            f"attention_dominates_time_tokens.{mode}",
            f"prompt length at which {mode} attention's roofline time equals the projections'",
            "tokens", f"{BOOK} (roofline time max(F/P, Q/β)); {FA1}{cached}", T,
            attn_time, _sum_time(proj), "balance",
            ("one layer; each class as one operation at its own roof",
             "main branch: projections compute-bound; attention "
             + ("memory-bound" if slow else "compute-bound")), memory_bound=slow))
        out.append(_cross(
            f"attention_compute_bound_tokens.{mode}",
            f"prompt length at which {mode} attention reaches the ridge intensity", "tokens",
            _ATTENTION_SOURCE[mode] + cached, T,
            total_flops(attn), P_peak * _memory(attn), "intensity", (f"attention: {mode}",)))
    if caches:
        windowed = arch.window == "all"  # every layer windowed: its working set is the band's
        last = caches[-1]
        for mode in levels.TILED:
            out.append(_cross(
                f"attention_cache_spill_tokens.{mode}",
                f"prompt length at which the data {mode} attention's thread blocks in flight "
                f"re-read outgrow the {last.upper()} cache", "tokens", levels.SOURCE, T,
                levels.working_set(mode, windowed, smooth=True), levels.CAPACITY[last],
                "cache", ("N_sm thread blocks in flight, one per SM",
                          "sliding-window layers: the keys of the band" if windowed else
                          "global (full causal) layers")))
    weights = weight_bytes(arch)
    out.append(_cross(
        "naive_scores_exceed_memory_tokens",
        "prompt length at which one layer's materialised scores no longer fit beside the weights",
        "tokens", f"{FA1} Algorithm 0 (S, P are T×T per head)", T,
        weights + window.largest_scores(arch), C_mem, "memory",
        ("one layer's scores at a time; weights resident; KV cache and activations ignored",)))
    out.append(_cross(
        "kv_cache_exceeds_memory_tokens",
        "prompt length at which the KV cache no longer fits beside the weights", "tokens",
        f"{INFERENCE} (KV cache 2·bytes·H·K·L·T)", T,
        weights + model_kv_cache_bytes(arch), C_mem, "memory", ("weights resident; B sequences",)))
    out.append(_cross(
        "kv_cache_exceeds_memory_batch",
        "sequences at which the KV cache of T tokens each no longer fits beside the weights "
        "(evaluated at the model's context limit)", "sequences",
        f"{INFERENCE} (KV cache 2·bytes·H·K·L·T per sequence)", B,
        weights + model_kv_cache_bytes(arch), C_mem, "memory",
        ("weights resident; each sequence's KV cache of T tokens",
         "the largest batch that fits is the value rounded down")))
    dec = [op for op in decode_operations(arch) if op.kind == "projection"]
    out.append(_cross(
        "decode_critical_batch",
        "decode batch at which one step's projections reach the ridge intensity", "sequences",
        f"{INFERENCE}: critical batch ≈ I_ridge·b_w/2 (240 in bf16 on TPU v5e, 120 with int8 "
        "weights)", B,
        total_flops(dec), P_peak * _memory(dec), "intensity",
        ("one decode step; projections of one layer as one operation",), True))
    out += _new_family_crossovers(arch)
    out += _tensor_parallel_crossovers(arch, caches)
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

    naive, absorbed = (_sum_time(mla.decode_step(form)) for form in ("naive", "absorbed"))
    return [_cross(
        "mla_absorption_pays_off_context",
        "decode context beyond which latent attention's absorbed step is faster than expanding "
        "the latent cache", "tokens", f"{mla.SOURCE}; {mla.REFERENCE}", T_ctx,
        naive, absorbed, "balance",
        ("one layer's decode operations that differ between the forms, each form as one "
         "operation at its roof", "B sequences, one new token each",
         "main branch: both forms memory-bound"), memory_bound=(naive, absorbed))]


# --- issue 13: tensor parallelism (appended) -------------------------------------------------
def _tensor_parallel_crossovers(arch: Architecture, caches: tuple[str, ...]) -> list[Crossover]:
    """Crossovers of N_tp-way tensor parallelism (:mod:`roofline.derive.tensor_parallel`):
    the prompt length above which a layer's all-reduces take less time than its compute (they
    can then be hidden under it), the degree beyond which they take more time than the device's
    share of the layers' roofline time, and the smallest degree whose memory holds one device's
    weights and KV cache."""
    from ..symbols import N_tp
    from . import tensor_parallel as tp

    layers = tp.layer_operations_per_device(arch, "kernel", caches)  # the default attention
    comm = [op for op in tp.tp_prefill_operations(arch, "kernel", True, caches)
            if op.name.startswith("tp.all_reduce.") and op.count != 1]  # the layers' own
    link = sum((op.count * op.levels[0][1] for op in comm), Integer(0)) / tp.beta_link
    source = f"{tp.SOURCE}; {tp.comm.SOURCE}"
    held = tp.device_weight_bytes(arch) + tp.device_kv_cache_bytes(arch)
    return [
        _cross("tp_allreduce_hidden_tokens",
               "prompt length above which a layer's all-reduces take less time than its "
               "compute (FLOP time) on one tensor-parallel device: overlapped, they are hidden",
               "tokens", source, T, total_flops(layers) / P_peak, link, "hidden",
               ("N_tp devices; ring all-reduces of B·T·D·b_a bytes, two per layer",
                "compute: the device's share of the layers' FLOPs at P_peak")),
        _cross("tp_communication_dominates_degree",
               "tensor-parallel degree beyond which a layer's all-reduces take longer than the "
               "device's share of its roofline time (at the model's context length)", "devices",
               source, N_tp, link, _sum_time(layers), "balance",
               ("T at the model's context length; B sequences",
                "the layers' operations as one at their roof; ring all-reduces")),
        _cross("tp_fits_memory_degree",
               "smallest tensor-parallel degree whose device memory holds one device's weights "
               "and KV cache (at the model's context length); round it up to a degree the heads "
               "allow", "devices", source, N_tp, C_mem, held, "balance",
               ("weights and KV cache resident; activations ignored",
                "KV heads replicated where N_tp > n_kv")),
    ]


def entries() -> list[Entry]:
    """The crossovers of the default (Llama-style) architecture on a GPU with an L2 cache."""
    out = []
    for c in [*crossovers(Architecture(), ("l2",)).values(),
              *_new_family_crossovers(Architecture(mla=True))]:
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
