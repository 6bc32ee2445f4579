"""Crossovers of context and expert parallelism: each closed form satisfies its equality
(hypothesis); the values found for a setting against hand computations; reported by
``roofline crossover`` only with the degree above 1."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings, strategies as st
from sympy import Integer, Rational

from roofline import api
from roofline.cli import main
from roofline.derive.architecture import Architecture
from roofline.derive.crossovers import crossovers
from roofline.symbols import CATALOGUE

warnings.filterwarnings("ignore")
P, BETA, ALPHA = 989.4e12, 450e9, 0.47e-6  # H100 SXM bf16; NVLink each way; NCCL ring step


def _values(extra):
    base = {"D": 4096, "F": 14336, "n_q": 32, "n_kv": 8, "H": 128, "L": 32, "V": 128256,
            "B": 1, "b_w": 2, "b_a": 2, "b_kv": 2, "N_sm": 132, "M_l2": 50 * 10**6,
            "n_e": 8, "n_a": 2, "N_tp": 1, "N_pp": 1, "N_ep": 1, "N_cp": 1}
    return {CATALOGUE[k].symbol: (Rational(v) if not isinstance(v, int) else Integer(v))
            for k, v in {**base, **extra}.items()}


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["cp_kv_pass_hidden_tokens", "ep_alltoall_hidden_tokens"]),
       n=st.sampled_from([2, 4, 8]), beta=st.integers(10, 2000), alpha=st.integers(1, 50),
       peak=st.integers(100, 5000), tp=st.sampled_from([1, 2]))
def test_root_satisfies_its_equality(name, n, beta, alpha, peak, tp):
    c = crossovers(Architecture(moe=True), ("l2",))[name]
    degree = "N_cp" if name.startswith("cp") else "N_ep"
    vals = _values({degree: n, "N_tp": tp, "beta_link": beta * 10**9,
                    "alpha_link": Rational(alpha, 10**8), "P_peak": peak * 10**12,
                    "beta_hbm": 3 * 10**12})
    root = c.main_branch.root.subs(vals)
    if not root.is_real or root <= 0:
        return  # no crossover on this branch at these numbers
    x = c.unknown
    scale = abs(float(c.other.subs(vals).subs(x, root)))
    assert abs(float(c.main_branch.equation.subs(vals).subs(x, root))) <= 1e-9 * scale


def test_ring_pass_hidden_by_hand():
    """Llama-3-8B over 4 H100: per layer the device's causal attention takes
    2·n_q·H·T(T+1)/(4·P) and its 3 passes 3·(α + (T/4)·2·n_kv·H·b_a/β); their equality is
    a·T² + (a − c)·T − d = 0."""
    v = api.crossovers("H100-SXM", "Llama-3-8B", cp=4).values["cp_kv_pass_hidden_tokens"]
    a = 2 * 32 * 128 / (4 * P)
    c = 3 * 2 * 8 * 128 * 2 / (4 * BETA)
    d = 3 * ALPHA
    root = (-(a - c) + math.sqrt((a - c) ** 2 + 4 * a * d)) / (2 * a)
    assert v.exists and v.value == pytest.approx(root, rel=1e-9)
    one = api.crossovers("H100-SXM", "Llama-3-8B").values["cp_kv_pass_hidden_tokens"]
    assert not one.exists and one.reason == "one device: no K/V pass to hide (give cp > 1)"


def test_all_to_all_hidden_by_hand():
    """Mixtral-8x7B over 8 H100: the routed GEMMs take 6·n_a·D·F·T/P a layer, the dispatch
    and combine 2·(7α + 105/64·T·D·b_a/β) (a token's two experts on 7·(1 − (7/8)²) = 105/64
    other devices on average): hidden from T = 14α/(6·n_a·D·F/P − 2·105/64·D·b_a/β), about 10
    tokens. At tp 2 over InfiniBand (16 devices, two nodes of four expert-parallel ranks) a
    token goes once to the other node with probability 1 − (1/2)² = 3/4, 2·(2.7 µs +
    3/4·T·D·b_a/50 GB/s), slower than NVLink but less than the GEMMs per token: hidden from
    T = 5.4 µs/(6·n_a·D·F/(2P) − 2·3/4·D·b_a/50 GB/s), about 49 tokens."""
    v = api.crossovers("H100-SXM", "Mixtral-8x7B", ep=8).values["ep_alltoall_hidden_tokens"]
    t = 14 * ALPHA / (6 * 2 * 4096 * 14336 / P - 2 * 105 / 64 * 4096 * 2 / BETA)
    assert v.exists and v.value == pytest.approx(t, rel=1e-9) and 9 < t < 11
    across = api.crossovers("H100-SXM", "Mixtral-8x7B", ep=8, tp=2,
                            network="InfiniBand-NDR").values["ep_alltoall_hidden_tokens"]
    t = 2 * 2.7e-6 / (6 * 2 * 4096 * 14336 / 2 / P - 2 * 3 / 4 * 4096 * 2 / 50e9)
    assert across.value == pytest.approx(t, rel=1e-9) and 45 < t < 55
    assert "ep_alltoall_hidden_tokens" not in api.crossovers("H100-SXM", "Llama-3-8B").values


def test_fits_memory_degree_under_expert_parallelism():
    """DeepSeek-style: the smallest tensor-parallel degree shrinks when the experts are spread:
    Mixtral-8x7B bf16 on H100 at its 32k context needs 1.3 devices alone, less over 8."""
    alone = api.crossovers("H100-SXM", "Mixtral-8x7B").values["tp_fits_memory_degree"].value
    spread = api.crossovers("H100-SXM", "Mixtral-8x7B", ep=8).values[
        "tp_fits_memory_degree"].value
    assert spread < 1 < alone


def test_cli_reports_the_ring_crossover(capsys):
    assert main(["crossover", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--cp",
                 "4"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("cp_kv_pass_hidden_tokens"))
    assert "tokens" in line
