"""Prefill beside decode (issue 30, part 1): the hybrid step by substitution into the existing
forms, by a published parameter count, the chunk budget at its closed form, and bad input."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from roofline.derive import attention
from roofline.errors import InputError

# Llama-3-8B: 8,030,261,248 parameters (its safetensors metadata on the Hugging Face Hub), of
# which the embedding table and the untied LM head are 128,256 × 4,096 each and the final norm
# 4,096: the 32 layers hold the rest.
LAYER_PARAMETERS = 8_030_261_248 - 2 * 128_256 * 4_096 - 4_096


@pytest.fixture(scope="module")
def h100():
    from roofline.api import setting

    return setting("H100-SXM", "Llama-3-8B")


def _totals(ops):
    from roofline.derive.layers import total_bytes, total_flops

    return total_flops(ops), total_bytes(ops)


@pytest.mark.parametrize("mode", attention.MODES)
def test_no_chunk_is_the_decode_step(mode):
    """C = 0: the step is decode_operations' with B → B_d, T_ctx → S (SymPy, exactly)."""
    from roofline.derive.decode import decode_operations
    from roofline.derive.hybrid import hybrid_operations
    from roofline.symbols import B, B_d, C, S, T_ctx

    step = _totals(hybrid_operations(mode=mode, caches=("l2",)))
    decode = _totals(decode_operations())
    for mine, theirs in zip(step, decode):
        assert (mine.subs(C, 0).xreplace({B_d: B}) - theirs.xreplace({T_ctx: S})).expand() == 0


@pytest.mark.parametrize("mode", attention.MODES)
def test_no_decodes_is_the_chunks_prefill(mode):
    """B_d = 0: the step is chunk_operations' (a chunk at offset i·c) and the embedding of its
    rows, which chunked prefill leaves out; no LM head runs."""
    from roofline.derive.architecture import Architecture
    from roofline.derive.batching import chunk_operations
    from roofline.derive.hybrid import hybrid_operations
    from roofline.derive.transformer import edge_operations
    from roofline.symbols import B_d, C, T_chunk, T_pre, i_chunk

    step = _totals(hybrid_operations(mode=mode, caches=("l2",)))
    chunk = _totals(chunk_operations(Architecture(), i_chunk, T_chunk, mode, caches=("l2",)))
    embed = edge_operations(Architecture(), T_chunk, T_chunk)[0]
    at = {C: T_chunk, T_pre: i_chunk * T_chunk, B_d: 0}
    assert (step[0].xreplace(at) - chunk[0] - embed.flops).expand() == 0
    assert (step[1].xreplace(at) - chunk[1] - embed.bytes).expand() == 0


def test_the_step_reads_the_layers_weights_once(h100):
    """A chunk beside decodes moves the bytes of the chunk alone and the decodes alone less one
    read of the layers' weights: the published parameter count's layers, at 2 bytes."""
    from roofline.serving.hybrid import step

    both = step(h100, 512, 1024, 32, 2048)
    chunk, decodes = step(h100, 512, 1024, 0, 2048), step(h100, 0, 0, 32, 2048)
    assert chunk.bytes + decodes.bytes - both.bytes == pytest.approx(2 * LAYER_PARAMETERS,
                                                                     rel=1e-12)
    assert both.flops == pytest.approx(chunk.flops + decodes.flops, rel=1e-12)


def test_no_chunk_in_numbers_is_decodes_result(h100):
    from roofline.evaluate.phases import decode
    from roofline.serving.hybrid import step

    alone, d = step(h100, 0, 0, 48, 3000), decode(replace(h100, batch=48), 3000)
    assert (alone.time_s, alone.flops, alone.bytes) == pytest.approx(
        (d.time_s, d.flops, d.bytes), rel=1e-12)


@pytest.mark.parametrize("mode", ["ideal", "naive", "kernel", "tiled"])
def test_budget_meets_the_objective_and_one_token_more_exceeds_it(h100, mode):
    from roofline.evaluate.phases import step_totals
    from roofline.serving.hybrid import _ops, budget, step

    s = replace(h100, attention=mode)
    b = budget(s, 32, 2048, 0.030, done=1000)
    assert b.chunk is not None and b.closed_form_tokens is not None
    assert step(s, b.chunk, 1000, 32, 2048).time_s <= 0.030 \
        < step(s, b.chunk + 1, 1000, 32, 2048).time_s
    if mode in ("ideal", "naive"):  # no block counts: the closed form's floor, and at its
        assert b.chunk == math.floor(b.closed_form_tokens)  # value the step takes τ exactly
        t = step_totals(_ops(s), s, b.closed_form_tokens, 1000, 32, 2048)[0]
        assert t == pytest.approx(0.030, rel=1e-9)
    else:  # the closed form relaxes the block counts: a few tokens apart
        assert abs(b.chunk - b.closed_form_tokens) < 16


def test_budget_closed_form_gives_its_value(h100):
    """The printed closed form, with its symbols' values put in by SymPy, is the printed value."""
    from sympy import parse_expr

    from roofline.serving.hybrid import budget
    from roofline.symbols import local_dict

    b = budget(replace(h100, attention="ideal"), 16, 4096, 0.025)
    numbers = {**h100.numbers(), "B_d": 16, "S": 4096, "T_pre": 0, "tau_tpot": 0.025}
    expr = parse_expr(b.closed_form, local_dict=local_dict())
    value = float(expr.xreplace({s: numbers[s.name] for s in expr.free_symbols}))
    assert value == pytest.approx(b.closed_form_tokens, rel=1e-9)


def test_budget_never_met_says_why(h100):
    from roofline.serving.hybrid import budget

    b = budget(h100, 256, 8000, 0.005)  # the decodes alone take longer than 5 ms
    assert b.chunk is None and b.reason.startswith("never: a step with a chunk of one token")


def test_chunked_prompt_sums_its_steps(h100):
    from roofline.serving.hybrid import chunked_prompt, step

    p = chunked_prompt(h100, 1000, 300, 8, 500)
    sizes = [s.chunk for s in p.steps]
    assert sizes == [300, 300, 300, 100] and [s.done for s in p.steps] == [0, 300, 600, 900]
    assert p.total_s == pytest.approx(sum(step(h100, c, o, 8, 500 + k).time_s
                                          for k, (c, o) in enumerate(zip(sizes, [0, 300, 600,
                                                                                 900]))))
    assert p.one_shot_s == pytest.approx(step(h100, 1000, 0, 0, 500).time_s)


@pytest.mark.parametrize("model, option, what", [
    ("DeepSeek-V2-Lite", {}, "latent attention"), ("Llama-3-8B", {"pp": 2}, "pp, ep and cp"),
    ("Llama-3-8B", {"tp": 2, "overlap": True}, "give no overlap"),
    ("Mistral-7B", {}, "local attention")])
def test_a_step_not_derived_is_refused(model, option, what):
    from roofline.api import hybrid

    with pytest.raises(InputError, match=what):
        hybrid("H100-SXM", model, decodes=8, context=1024, tpot=0.05, **option)


def test_crossover_table_says_where_the_budget_is_evaluated(h100):
    from roofline.evaluate.crossover import crossover_value

    v = crossover_value(h100, "tpot_chunk_budget_tokens.kernel")
    assert not v.exists and not v.evaluated and "roofline hybrid" in v.reason


# --- under tensor parallelism ---------------------------------------------------------------
def test_tp_no_chunk_is_decodes_result_under_tp(h100):
    """C = 0 under TP 4: one device's decode step with its all-reduces, as ``decode`` has it."""
    from roofline.evaluate.phases import decode
    from roofline.serving.hybrid import step

    s = replace(h100, tp=4)
    alone, d = step(s, 0, 0, 48, 3000), decode(replace(s, batch=48), 3000)
    assert (alone.time_s, alone.flops, alone.bytes) == pytest.approx(
        (d.time_s, d.flops, d.bytes), rel=1e-12)
    assert d.communication_s > 0


def test_tp_step_communication_by_hand(h100):
    """The step's collectives under TP 2 (H100's NVLink: α = 0.47 µs, β = 450 GB/s), written
    out: 2·32 + 1 ring all-reduces of the (C + B_d)·D·2 bytes of the step's rows, each
    2(N − 1)·α + 2(N − 1)/N·bytes/β, and the ring all-gather of the B_d decodes' logits,
    (N − 1)·α + (N − 1)/N·B_d·V·2/β."""
    from roofline.evaluate.phases import _results
    from roofline.serving.hybrid import _ops

    s = replace(h100, tp=2)
    alpha, beta = 0.47e-6, 450e9
    rows, decodes, width, vocab = 512 + 32, 32, 4096, 128_256
    reduce = 2 * alpha + rows * width * 2 / beta
    gather = alpha + decodes * vocab * 2 / (2 * beta)
    results = _results(_ops(s), s.peak, s.bandwidth, 512, 1024, 32, 2048)
    links = sum(r.time_s for r in results if r.kind == "communication")
    assert links == pytest.approx(65 * reduce + gather, rel=1e-12)


def test_tp_halves_the_layers_weights_read(h100):
    """Under TP 2 a device reads half of each layer's projection weights: the bytes the chunk
    and the decodes share (read once) are half the published layers' parameters, at 2 bytes,
    less the norms' weights, which every device holds whole (2 a layer, 4,096 each)."""
    from roofline.serving.hybrid import step

    s = replace(h100, tp=2)
    both = step(s, 512, 1024, 32, 2048)
    chunk, decodes = step(s, 512, 1024, 0, 2048), step(s, 0, 0, 32, 2048)
    norms = 32 * 2 * 4096
    shared = (LAYER_PARAMETERS - norms) / 2 + norms
    assert chunk.bytes + decodes.bytes - both.bytes == pytest.approx(2 * shared, rel=1e-12)


@pytest.mark.parametrize("mode", ["ideal", "naive"])
def test_tp_budget_meets_the_objective_at_its_closed_form(h100, mode):
    """Under TP 2 the budget's closed form (its collectives' α and β in it) with the setting's
    numbers gives its value, where the step takes τ exactly; one token more exceeds τ."""
    from sympy import parse_expr

    from roofline.evaluate.phases import step_totals
    from roofline.serving.hybrid import _ops, budget, step
    from roofline.symbols import local_dict

    s = replace(h100, tp=2, attention=mode)
    b = budget(s, 32, 2048, 0.020, done=1000)
    assert b.chunk == math.floor(b.closed_form_tokens)
    assert step(s, b.chunk, 1000, 32, 2048).time_s <= 0.020 \
        < step(s, b.chunk + 1, 1000, 32, 2048).time_s
    assert step_totals(_ops(s), s, b.closed_form_tokens, 1000, 32, 2048)[0] == \
        pytest.approx(0.020, rel=1e-9)
    numbers = {**s.numbers(), "alpha_link": 0.47e-6, "beta_link": 450e9, "B_d": 32, "S": 2048,
               "T_pre": 1000, "tau_tpot": 0.020}
    expr = parse_expr(b.closed_form, local_dict=local_dict())
    assert float(expr.xreplace({x: numbers[x.name] for x in expr.free_symbols})) == \
        pytest.approx(b.closed_form_tokens, rel=1e-9)
    one = budget(replace(h100, attention=mode), 32, 2048, 0.020, done=1000)
    assert b.chunk > one.chunk  # half the work a device, less the all-reduces


def test_the_steps_collectives_under_tp():
    """Under TP 2 a step's collectives are its part of the time: with no chunk, the decode
    step's own all-reduces (``decode``'s communication_s, a second road); with a chunk, the
    all-reduces of C + B_d rows, as many as a prefill of that many tokens carries, and the
    gather of the B_d decodes' logits (one row's in the prefill)."""
    from dataclasses import replace

    from roofline.api import prefill, setting
    from roofline.evaluate.phases import decode
    from roofline.serving.hybrid import step

    s = setting("H100-SXM", "Llama-3-8B", tp=2)
    alone = step(s, 0, 0, 8, 1024)
    assert alone.communication_s == pytest.approx(
        decode(replace(s, batch=8), 1024).communication_s, rel=1e-12)
    both = step(s, 512, 0, 8, 1024)
    ops = {o.name: o.time_s
           for o in prefill("H100-SXM", "Llama-3-8B", [520], tp=2).points[0].operations}
    gather_one = ops["tp.all_gather.logits"]
    reduces = sum(t for n, t in ops.items() if n.startswith("tp.all_reduce"))
    gather_eight = both.communication_s - reduces
    assert 0 < gather_one < gather_eight < both.communication_s
    assert both.communication_s < both.time_s
