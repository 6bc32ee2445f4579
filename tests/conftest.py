"""Checks that several test modules share, and the garbage collector's work kept to what the
tests make."""

import atexit
import gc
import math
import os
import shutil
import tempfile
from dataclasses import replace

import pytest

# The generated code is kept in a cache of the test run's own, made by the first process
# (pytest's controller, or the only one) and shared with the workers it starts, which inherit the
# variable: every run derives afresh what it uses, as a new user's first calls do.
if "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="roofline-tests-")
    atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)

# The garbage collector's work kept few. A young collection waits for 10,000 new objects, not
# 700 (from here on: collecting the tests too): most of what SymPy and pytest make
# dies by its reference count before then and is never walked. A full collection, which walks
# every object the tests keep (SymPy's caches grow to millions of nodes), waits for ten times as
# many younger collections as by default: 40-43 full collections took 4-6 s of CPU on each
# worker and reclaimed next to nothing, now 14-15 do. Measured over the suite with a collector
# callback on both workers: 10,800 collections took 6.9 s of CPU, now about 540 take 2.8 s; the
# workers' peak memory 322 -> 325-332 MB.
_, _MIDDLE, _ = gc.get_threshold()
gc.set_threshold(10_000, _MIDDLE, 100)


def pytest_collection_finish(session):
    """The modules, catalogues and files loaded to collect the tests live until the end: moved
    out of the collector's generations."""
    gc.freeze()


@pytest.fixture(scope="session")
def crossovers_hold():
    """A check: at each crossover of a setting that exists, grows = other (its defining
    equality), evaluated from the equality's own generated code at the root, independently of
    the solved closed form."""
    from roofline.codegen import call
    from roofline.evaluate import crossover_values
    from roofline.evaluate.estimate import kernel_count

    def check(s) -> None:
        for name, c in crossover_values(s).items():
            if not c.exists:
                continue
            form = s.crossover_forms[name]
            vals = s.numbers(batch=form["unknown"] != "B")
            if form["kind"] == "overhead":  # the kernels its prefill launches in that mode
                vals["n_kern"] = kernel_count(replace(s, attention=name.rpartition(".")[2]))
            if form["unknown"] != "T":  # a batch crossover: at the model's context limit
                vals["T"] = s.model.max_position
            at = {**vals, form["unknown"]: c.value}
            grows, other = call(form["grows"], at), call(form["other"], at)
            assert math.isclose(grows, other, rel_tol=1e-6), (name, c.value, grows, other)
    return check


@pytest.fixture(scope="session")
def closed_form_holds():
    """A check: the main branch's closed form of a crossover ``c`` (roofline.derive.crossovers),
    at the symbol values ``v`` (its unknown left free, B and T given where they are not the
    unknown), is a root of that branch's equation; a branch with no real positive root there
    passes. ``batch`` and ``prompt`` fill B and T."""
    from sympy import Float, Integer, Max

    from roofline.symbols import B, T

    def check(c, v: dict, batch: int, prompt: int = 8192) -> None:
        v = {k: Float(x) if isinstance(x, float) else Integer(x) if isinstance(x, int) else x
             for k, x in v.items()}  # SymPy numbers: xreplace returns a replaced symbol as is
        v.pop(c.unknown, None)
        if c.unknown is not B:
            v[B] = Integer(batch)
        if c.unknown is not T:
            v[T] = Integer(prompt)  # a batch (or degree) crossover of prompts of T tokens
        branch = c.main_branch
        root = complex(c.closed_form(branch).xreplace(v))
        if abs(root.imag) > 1e-9 * abs(root) or root.real <= 0:
            return  # no crossover in this branch here
        at = {**v, c.unknown: Float(root.real)}
        residual = float(branch.equation.xreplace(at))
        scale = float(c.grows.xreplace(at).replace(Max, lambda *a: a[0]))
        assert abs(residual) <= 1e-6 * abs(scale) + 1e-6, (c.name, root)
    return check


@pytest.fixture
def small_figures(monkeypatch):
    """Every figure drawn at one inch by one: its plotting code runs in full, its rendering in
    a fraction of the time (for tests of a command's wiring; the figures themselves are
    checked by the plot tests and ``test_report``'s real report)."""
    from matplotlib.figure import Figure

    from roofline import plot

    monkeypatch.setattr(plot, "figure", lambda *a, **k: Figure(figsize=(1, 1)))


def _chunk_spread(s, x: float) -> float:
    """The relative error of a chunked-attention model's closed forms: they spread each
    chunk's work evenly (T/C_att chunks of C_att), which overcounts a chunk's quadratic work by
    at most C_att/(4T) of the whole (a·r·(C − r) at a remainder r, the most at r = C/2; exact at
    multiples of C_att); 0 for other models. At a root of those forms the exact balance is
    within it of 1."""
    arch = s.architecture
    if arch.window == "none" or arch.window_kind != "chunked":
        return 0.0
    return s.model.attention_chunk_size / (4 * x)


@pytest.fixture(scope="session")
def chunk_spread():
    """:func:`_chunk_spread`, for a test's own tolerance."""
    return _chunk_spread


@pytest.fixture(scope="session")
def changes_at():
    """A check that ``prefill``'s own bound changes as ``expected`` (("memory", "compute") or
    back) around a crossover's root x: on either side within 5 % (the staircase of the tiled
    schedules' ⌈T/B⌉ blocks, relaxed to T/B in the closed forms); or, where the root is
    ill-conditioned (head dimensions of 96 and 256, a sliding window, or a regime whose
    staircase intensity peaks within 6 % of the ridge: see ``test_crossover_roots``), the exact
    intensity at x within 2 % of the ridge; or, where the crossing is shallow (compute time over
    the slowest memory level's time moves under 10 % across the ±5 %), that balance within 2 %
    of 1 at x."""
    from roofline.evaluate import prefill

    tolerance, near = 0.05, 0.02

    def flat(s, c) -> bool:
        if c.ends_at is None:
            return False
        import numpy as np

        xs = [max(1, int(x)) for x in np.geomspace(c.value, c.ends_at, 40)]
        return max(p.intensity for p in prefill(s, xs)) / s.ridge < 1 + 3 * near

    def balance(s, xs: list[int]):
        """Compute time over the slowest memory level's time, the prefill taken as one
        operation (its bound's rule: compute-bound where it is at least 1)."""
        from roofline import sweeps

        k = sweeps.by_kind(s, xs)
        return k.flops["total"] / k.peak / k.memory["total"]

    def check(s, x: float, expected: tuple[str, str], c) -> bool:
        spread = _chunk_spread(s, x)
        below = max(1, math.floor(x * (1 - tolerance)) - 1)
        above = math.ceil(x * (1 + tolerance)) + 1
        if tuple(prefill(s, [below, above]).bound) == expected:
            return True
        ill = s.model.head_dim not in (64, 128) or s.model.window != "none" or flat(s, c)
        point = prefill(s, [max(1, round(x))])[0]
        if ill and abs(point.intensity / s.ridge - 1) < near:
            return True
        # a shallow crossing: the balance moves under 10 % over the ±5 % around the root, so
        # the staircase's steps of about a per cent cross it more than once there
        low, at, high = balance(s, [below, max(1, round(x)), above])
        if abs(high - low) < 0.1 and abs(at - 1) < near:
            return True
        # chunked attention: the exact balance at the root within the closed form's error
        return spread > 0 and abs(at - 1) <= spread
    return check
