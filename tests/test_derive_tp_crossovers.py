"""Crossovers of tensor parallelism: each closed form satisfies its defining equality
(hypothesis), the numbers found as sign changes agree with it, and the smallest degree that
fits is checked by hand for Llama-2-70B on A100-80GB."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings, strategies as st
from sympy import Integer, Rational

from roofline import api
from roofline.derive.architecture import Architecture
from roofline.derive.crossovers import crossovers
from roofline.symbols import CATALOGUE

warnings.filterwarnings("ignore")
NAMES = ("tp_allreduce_hidden_tokens", "tp_communication_dominates_degree",
         "tp_fits_memory_degree")
LLAMA2_70B = {"D": 8192, "F": 28672, "n_q": 64, "n_kv": 8, "H": 128, "L": 80, "V": 32000,
              "B": 1, "b_w": 2, "b_a": 2, "b_kv": 2, "N_sm": 132, "M_l2": 50 * 2**20}


def _values(extra):
    return {CATALOGUE[k].symbol: (Rational(v) if not isinstance(v, int) else Integer(v))
            for k, v in {**LLAMA2_70B, **extra}.items()}


@settings(max_examples=25, deadline=None)
@given(n=st.sampled_from([2, 4, 8]), beta=st.integers(10, 2000), alpha=st.integers(0, 50),
       peak=st.integers(100, 5000), hbm=st.integers(500, 8000))
def test_hidden_tokens_root_satisfies_its_equality(n, beta, alpha, peak, hbm):
    c = crossovers(Architecture(), ("l2",))["tp_allreduce_hidden_tokens"]
    vals = _values({"N_tp": n, "beta_link": beta * 10**9, "alpha_link": Rational(alpha, 10**8),
                    "P_peak": peak * 10**12, "beta_hbm": hbm * 10**9})
    root = c.main_branch.root.subs(vals)
    eq = c.main_branch.equation.subs(vals)
    if not root.is_real or root <= 0:
        return  # no crossover on this branch at these numbers
    x = c.unknown
    scale = abs(float(c.grows.subs(vals).subs(x, root)))
    assert abs(float(eq.subs(x, root))) <= 1e-9 * scale


def test_hidden_tokens_by_hand():
    """H100 (989.4 TFLOP/s bf16, NVLink 450 GB/s each way, 0.47 us a step), Llama-2-70B, N = 8:
    per token the device's compute is 2·P_layers/8/P_peak, the all-reduces 80·2·2·7/8·D·b_a/β;
    their latencies 80·2·14·0.47 us are hidden from T* = latency / (compute − comm) on."""
    t = api.crossovers("H100-SXM", "Llama-2-70B", tp=8).values["tp_allreduce_hidden_tokens"]
    layer_params = 80 * (8192 * (64 + 16) * 128 + 64 * 128 * 8192 + 3 * 8192 * 28672)
    compute = 2 * layer_params / 8 / 989.4e12
    comm = 80 * 2 * 2 * 7 / 8 * 8192 * 2 / 450e9
    latency = 80 * 2 * 14 * 0.47e-6
    linear = latency / (compute - comm)  # attention's FLOPs (∝ T²) neglected: a bit above
    assert t.exists and 0.97 * linear < t.value <= linear


def test_fits_memory_llama2_70b_a100_80gb_by_hand():
    """138.0 GB of bf16 weights (68,976,648,192 parameters), of which the norms, 2·(80·2·8192 +
    8192) bytes, are replicated, plus a 4096-token KV cache of 2·80·8·128·4096·2 bytes: one
    80 GB device cannot hold it, two can: N* = (W − norms + KV)/(C − norms) = 1.741."""
    weights, norms = 2 * 68_976_648_192, 2 * (80 * 2 * 8192 + 8192)
    kv = 2 * 80 * 8 * 128 * 4096 * 2
    capacity = 80e9
    expected = (weights - norms + kv) / (capacity - norms)
    v = api.crossovers("A100-80GB-SXM", "Llama-2-70B").values["tp_fits_memory_degree"]
    assert v.value == pytest.approx(expected, rel=1e-9)
    assert math.ceil(v.value) == 2


def test_communication_dominates_degree_is_where_the_times_meet():
    v = api.crossovers("H100-SXM", "Llama-2-70B", tp=8).values[
        "tp_communication_dominates_degree"]
    assert v.exists and 8 < v.value < 32
    # below the degree communication is smaller than the device's roofline time, above larger
    lo, hi = int(v.value), int(v.value) + 1
    c = crossovers(Architecture(), ("l2",))["tp_communication_dominates_degree"]
    s = api.setting("H100-SXM", "Llama-2-70B")
    vals = {**s.values(), CATALOGUE["T"].symbol: Integer(4096)}
    for n, sign in ((lo, -1), (hi, 1)):
        d = float((c.grows - c.other).xreplace({**vals, CATALOGUE["N_tp"].symbol: Integer(n)}))
        assert math.copysign(1, d) == sign


def test_without_interconnect_not_evaluated():
    v = api.crossovers("TPU-v4", "Llama-2-7B").values
    assert not v["tp_allreduce_hidden_tokens"].evaluated
    assert "gives no interconnect" in v["tp_communication_dominates_degree"].reason
    assert v["tp_fits_memory_degree"].exists
    one = api.crossovers("H100-SXM", "Llama-2-7B").values["tp_allreduce_hidden_tokens"]
    assert one.reason.startswith("one device")


def test_a_fit_degree_under_one_says_one_device_is_enough():
    """Llama-3-8B's 16 GB of weights fill a fifth of an H100's 80 GB: the degree crossover is
    0.2 devices, which the table words as fitting on one; Llama-2-70B's 138 GB need two
    A100-80GB, and say nothing more."""
    def row(hardware, model):
        head, rows = api.crossovers(hardware, model).rows()
        return next(r[1] for r in rows if r[0] == "tp_fits_memory_degree")

    assert row("H100-SXM", "Llama-3-8B").endswith("devices (fits on one)")
    assert "fits on one" not in row("A100-80GB-SXM", "Llama-2-70B")
