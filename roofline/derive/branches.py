"""The branches of a crossover's piecewise equality and their closed forms.

A crossover (:class:`Crossover`) is an equality ``grows(x) = other(x)`` in one unknown x,
oriented so that ``grows − other`` is negative at x → 0; the crossover is its smallest positive
root. Both sides are polynomials of degree ≤ 2 in x once the ceilings of the tiled attention
are relaxed (``smooth``) and each ``Max``/``Min`` is resolved into one branch
(:meth:`Crossover.branch`: the catalogue shows the main one, a setting the one that holds at its
root); the root is then SymPy's solution of a₂x² + a₁x + a₀ = 0 for the branch:

    x* = (−a₁ + √(a₁² − 4·a₂·a₀)) / (2·a₂)      (x* = −a₀/a₁ when a₂ = 0),

the root that continues the linear solution as a₂ → 0, and the smaller positive one when a₂ < 0
(then the equality holds again at a larger x: the regime ends there). The crossovers themselves
are built in :mod:`roofline.derive.crossovers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from math import prod

from sympy import (Add, And, Dummy, Eq, Expr, Integer, Max, Min, Piecewise, Poly, PolynomialError,
                   Symbol, cancel, ceiling, expand, factor_terms, nan, oo, solve, sstr, together,
                   true, zoo)

from ..symbols import B, L, M_l2, M_l3, M_sram, N_pp, N_sm, P_peak, W, b_a, beta_hbm, k_top

__all__ = ["Branch", "Choice", "Crossover", "cross", "main_choice", "quadratic_root"]

# the layers of a pipeline's fullest inner stage (:func:`.pipeline.busiest_stage_bytes`)
_INNER_STAGE = ceiling(L / N_pp)


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

    @cached_property
    def conditions(self) -> tuple[Expr, ...]:
        """Where this branch holds: for each Max (Min) its chosen argument ≥ (≤) each other
        argument, every atom inside them replaced by its own choice; inequalities in the
        unknown and the other symbols (those that no shape makes false are left out).

        >>> x = Symbol("x", positive=True)
        >>> Crossover("c", "", "", "", x, Max(x, 4), Integer(8), "balance").branch((0,)).conditions
        (x >= 4,)
        """
        rule = dict(self.choices)
        out = []
        for atom, arg in self.choices:
            chosen = _chosen(arg, rule)
            for other in atom.args:
                if other != arg:
                    other = _chosen(other, rule)
                    holds = chosen >= other if isinstance(atom, Max) else chosen <= other
                    if holds is not true:
                        out.append(holds)
        return tuple(out)


def _chosen(expr: Expr, rule: dict[Expr, Expr]) -> Expr:
    """``expr`` with every Max/Min replaced by its chosen argument, outermost first."""
    while True:
        replaced = expr.xreplace(rule)
        if replaced == expr:
            return expr
        expr = replaced


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
        def key(atom: Expr) -> tuple[int, str]:
            text = sstr(atom, order="none")
            return len(text), text
        return tuple(sorted(self.equation.atoms(Max, Min), key=key))

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
        if not self.wide_form:
            return None
        eq = self.main_branch.equation
        if b_a not in eq.free_symbols:
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
    rule, equation = dict(chosen), c.equation
    while True:  # each pass replaces the outermost atoms left (an argument may hold more)
        replaced = equation.xreplace(rule)
        if replaced == equation:
            return Branch(expand(equation), chosen, c.unknown)
        equation = replaced


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
    coeffs = _term_coefficients(equation, x)
    if coeffs is None:
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


def _term_coefficients(equation: Expr, x: Symbol) -> list[Expr] | None:
    """The coefficients of an expanded polynomial in x, highest power first, read term by term
    (each term c·x^k): ten times faster than ``Poly`` over the many symbols of a crossover's
    coefficients. None where a term is not of that form (x in a denominator or a function)."""
    by_power: dict[int, list[Expr]] = {}
    for term in Add.make_args(equation):
        c, k = term.as_coeff_exponent(x)
        if not (k.is_Integer and k >= 0) or c.has(x):
            return None
        by_power.setdefault(int(k), []).append(c)
    top = max(by_power, default=0)
    return [Add(*by_power.get(k, [])) for k in range(top, -1, -1)]


def _root(a2: Expr, a1: Expr, a0: Expr) -> Expr:
    """The first root of a₂x² + a₁x + a₀; where a symbol that may be 0 (a latency that a device
    file does not give) takes a₂ to 0, a Piecewise that is the linear root there.

    >>> from sympy import symbols
    >>> a, b = symbols("a b", nonnegative=True)
    >>> _root(a, Integer(1), -b)
    Piecewise((b, Eq(a, 0)), ((sqrt(4*a*b + 1) - 1)/(2*a), True))
    """
    c2, c1, c0 = _COEFFS
    # xreplace: the coefficients are put in place of the dummies in one rebuild of the tree
    # (``subs`` gives the same expression, several times slower)
    def linear() -> Expr:
        return cancel(_generic_roots(False)[0].xreplace({c1: a1, c0: a0}))

    if a2 == 0:
        return linear()
    quadratic = _generic_roots(True)[0].xreplace(
        {c2: factor_terms(a2), c1: factor_terms(a1), c0: factor_terms(a0)})
    # a symbol that may be 0 (the latency a device file does not give) and takes a₂ to 0
    vanishing = [s for s in a2.free_symbols if s.is_nonnegative and s.is_zero is None]
    if vanishing and a2.xreplace(dict.fromkeys(vanishing, 0)) == 0:
        return Piecewise((linear(), And(*(Eq(s, 0) for s in vanishing))), (quadratic, True))
    return quadratic


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


def main_choice(atom: Expr, memory_bound: bool = False) -> Expr:
    """The argument of a Max/Min that the main (catalogue) branch takes: the regime of long
    prompts on a real device. max(1, x) block counts → x (at least one block); min(n_e, rows·n_a)
    → n_e (every expert receives a token); min(T, W) → W (the prompt outgrows the sliding
    window); min(T, k_top) → k_top and sparse attention's min(MQA, masked MHA) → MQA (the
    prompt outgrows the top k); min(H, B_c) → B_c (the SRAM limits the row block);
    a pipeline's fullest stage → the one of ⌈L/N_pp⌉ layers (:func:`.pipeline.busiest_stage_bytes`);
    a roofline time max(F/P, Q/β) → F/P (compute-bound), or Q/β where ``memory_bound``."""
    args = atom.args
    if isinstance(atom, Min) and W in args:
        return W  # min(T, W) → W: prompts longer than the sliding window
    if isinstance(atom, Min) and any(a.has(k_top) for a in args):
        # min(T, k_top) → k_top, min(MQA mode, masked MHA mode) → MQA mode over the top k
        return next(a for a in args if a.has(k_top))
    if any(a.has(M_l2, M_l3) for a in args) and 0 in args:
        return Integer(0)  # max(0, 1 − M/S) → 0: the working set fits in the cache
    if any(a.has(N_sm) for a in args) and not all(a.has(N_sm) for a in args):
        if isinstance(atom, Min):  # min(N_sm, T·n_q/(n_kv·B_r)) → N_sm: every SM on one head
            return next(a for a in args if a == N_sm or a.has(N_sm))
        return next(a for a in args if not a.has(N_sm))  # the working set of long prompts
    fullest = [a for a in args if a.has(_INNER_STAGE)]
    if isinstance(atom, Max) and fullest:
        return fullest[0]  # the fullest stage: the one with most layers (the KV cache grows)
    numbers = [a for a in args if a.is_number]
    if numbers:
        return next(a for a in args if not a.is_number)
    if isinstance(atom, Min):
        fixed = [a for a in args if not a.has(B) and not a.has(M_sram)]
        if fixed and len(fixed) < len(args) and any(a.has(B) for a in args):
            return fixed[0]  # min(n_e, rows·n_a)
        return next((a for a in args if a.has(M_sram)), args[0])  # min(H, B_c)
    bound = beta_hbm if memory_bound else P_peak
    return next((a for a in args if a.has(bound)),
                next((a for a in args if a.has(beta_hbm)), args[0]))  # memory time: HBM's


def cross(name, meaning, unit, source, unknown, grows, other, kind, regime=(),
           wide_form=False, memory_bound: tuple[Expr, ...] = ()) -> Crossover:
    """A crossover whose main branch takes :func:`_main_choice` for every Max/Min, the
    time maxima inside the expressions of ``memory_bound`` at their memory roof."""
    atoms = (grows - other).atoms(Max, Min)
    slow = {a for e in memory_bound for a in e.atoms(Max)}
    main = tuple((a, main_choice(a, a in slow)) for a in atoms)
    return Crossover(name, meaning, unit, source, unknown, grows, other, kind, regime, main,
                     wide_form)
