"""Pipeline parallelism: the sends, one prompt's time, and the bubble against a simulation of
chunks moving through the stages."""

from __future__ import annotations

import warnings
from fractions import Fraction

import pytest
from sympy import Integer, Rational, simplify

from roofline import api
from roofline.derive import pipeline as pp
from roofline.symbols import B, D, N_pp, T, alpha_link, b_a, beta_link, c_chunk, t_pre

warnings.filterwarnings("ignore")


def _simulate(chunks: int, stages: int, per: Fraction) -> tuple[Fraction, Fraction]:
    """(span, idle fraction) of ``chunks`` chunks through ``stages`` stages, each chunk taking
    ``per`` on each stage; a stage starts a chunk when it has finished the one before and the
    stage before has finished this one."""
    done = [[Fraction(0)] * stages for _ in range(chunks)]
    for c in range(chunks):
        for s in range(stages):
            start = max(done[c - 1][s] if c else Fraction(0), done[c][s - 1] if s else Fraction(0))
            done[c][s] = start + per
    span = done[-1][-1]
    busy = chunks * per
    return span, 1 - busy / span


@pytest.mark.parametrize("chunks", [1, 2, 3, 8])
@pytest.mark.parametrize("stages", [1, 2, 4, 5])
def test_bubble_matches_simulation(chunks, stages):
    t = Fraction(7)  # the single device's prefill time
    span, idle = _simulate(chunks, stages, t / (chunks * stages))
    assert pp.chunked_time().subs({t_pre: 7, c_chunk: chunks, N_pp: stages}) == \
        Rational(span.numerator, span.denominator)
    assert pp.bubble_fraction(Integer(chunks), Integer(stages)) == \
        Rational(idle.numerator, idle.denominator)
    assert simplify(pp.chunked_speedup().subs({c_chunk: chunks, N_pp: stages})
                    - Rational(7) / Rational(span.numerator, span.denominator)) == 0


def test_single_prompt_time():
    expected = t_pre + (N_pp - 1) * (alpha_link + B * T * D * b_a / beta_link)
    assert simplify(pp.single_prompt_time() - expected) == 0


def test_pp_adds_the_sends_to_one_prompt():
    """Llama-2-70B at 2048 tokens over 4 stages on H100, the prompt whole through each: 3 sends
    of 2048·8192·2 bytes at 450 GB/s plus 0.47 us each."""
    one = api.prefill("H100-SXM", "Llama-2-70B", [2048]).points[0]
    four = api.prefill("H100-SXM", "Llama-2-70B", [2048], pp=4, pipeline="whole").points[0]
    sends = 3 * (0.47e-6 + 2048 * 8192 * 2 / 450e9)
    assert four.time_s == pytest.approx(one.time_s + sends, rel=1e-12)
    names = [o.name for o in four.operations if o.kind == "communication"]
    assert names == ["pp.send"]  # no all-reduce on one tensor-parallel device
