"""Evaluation: exact substitution and the numpy sweep agree; crossovers hold numerically."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from roofline import api
from roofline.api import setting
from roofline.errors import InputError
from roofline.evaluate import crossover_values, decode, prefill, prefill_time


@pytest.fixture(scope="module")
def h100_llama():
    return setting("H100-SXM", "Llama-3-8B")


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(1, 200_000), min_size=1, max_size=5))
def test_sweep_agrees_with_exact_substitution(prompts):
    s = setting("H100-SXM", "Llama-3-8B")
    exact = [p.time_s for p in prefill(s, prompts)]
    assert prefill_time(s, np.array(prompts)) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("model", ["Mixtral-8x7B", "OPT-13B", "Qwen2.5-7B"])
@pytest.mark.parametrize("mode", ["naive", "tiled_fa2", "ideal"])
def test_sweep_agrees_for_other_architectures_and_modes(model, mode):
    s = setting("MI300X", model, attention=mode, batch=3)
    prompts = [1, 7, 100, 1000, 5000]
    assert prefill_time(s, prompts) == pytest.approx([p.time_s for p in prefill(s, prompts)],
                                                     rel=1e-12)


def test_time_grows_with_the_prompt(h100_llama):
    t = prefill_time(h100_llama, np.arange(1, 100_001, 97))
    assert np.all(np.diff(t) > 0)


def test_short_prompt_is_memory_bound_and_long_one_compute_bound(h100_llama):
    short, mid = prefill(h100_llama, [16, 2048])
    assert short.bound == "memory" and mid.bound == "compute"
    # a short prompt takes about the time to read the weights once (all but the embedding
    # table, of which only the prompt's rows are read)
    read = 2 * (8_030_261_248 - 128256 * 4096)
    assert short.time_s == pytest.approx(read / 3.35e12, rel=0.02)


def test_decode_step_is_memory_bound_at_batch_one(h100_llama):
    d = decode(h100_llama, 1024)
    assert d.bound == "memory" and d.intensity < 2
    assert d.kv_cache_bytes == 1024 * 128 * 1024  # 128 KiB per token


def test_crossovers_match_the_numeric_roots(h100_llama):
    values = crossover_values(h100_llama)
    proj = values["projection_compute_bound_tokens"]
    pts = prefill(h100_llama, [int(proj.value) - 1, int(proj.value) + 2])
    ops = [[o for o in p.operations if o.kind == "projection"] for p in pts]
    ratio = [sum(o.flops for o in op) / sum(o.bytes for o in op) for op in ops]
    assert ratio[0] < h100_llama.ridge < ratio[1]  # the projections cross the ridge there
    naive = values["attention_compute_bound_tokens.naive"]
    assert not naive.exists and "64 FLOP/byte" in naive.reason  # H/b_a = 128/2
    assert values["decode_critical_batch"].value == pytest.approx(proj.value)


def test_prefill_crossover_separates_memory_and_compute_bound(h100_llama):
    tiled = replace(h100_llama, attention="tiled")
    c = crossover_values(tiled)["prefill_compute_bound_tokens.tiled"]
    # the closed form drops the tiles' ceilings: within a token or so of the exact model
    below, above = prefill(tiled, [int(c.value) - 1, int(c.value) + 2])
    assert below.bound == "memory" and above.bound == "compute"
    assert c.ends_at is not None  # tiled attention's traffic takes over at long prompts
    end, past = prefill(tiled, [int(c.ends_at) - 2, int(c.ends_at) + 2])
    assert end.bound == "compute" and past.bound == "memory"


def test_bad_settings_name_the_field_in_the_models_words():
    """The library names its own argument (``attention``), not a command-line flag."""
    with pytest.raises(InputError, match="^attention: must be one of naive, tiled"):
        setting("H100-SXM", "Llama-3-8B", attention="flash")
    with pytest.raises(InputError, match="^batch"):
        setting("H100-SXM", "Llama-3-8B", batch=0)
    with pytest.raises(InputError, match="^dtype: L4 has no fp64"):
        setting("L4", "Llama-3-8B", dtype="fp64")
    with pytest.raises(InputError, match="^prompt: a prompt length must be a positive"):
        prefill(setting("H100-SXM", "Llama-3-8B"), [128, -1])
    with pytest.raises(InputError, match="tiled attention needs the on-chip SRAM per SM, which TPU-v4"):
        prefill(setting("TPU-v4", "Llama-3-8B", attention="tiled"), [128])


@pytest.mark.parametrize("argv, flag", [
    (["--attention", "flash"], "--attention: must be one of"),
    (["--batch", "0"], "--batch"),
    (["--dtype", "fp64", "--hardware", "L4"], "--dtype: L4 has no fp64"),
    (["--weight-dtype", "int3"], "--weight-dtype: must be one of"),
    (["--prompt", "128", "--context", "0"], "--context: must be a positive integer"),
])
def test_the_command_line_names_its_flag(argv, flag, capsys):
    from roofline.cli import main

    base = {"--hardware": "H100-SXM", "--model": "Llama-3-8B"}
    for i in range(0, len(argv), 2):
        base[argv[i]] = argv[i + 1]
    assert main(["prefill", *[x for kv in base.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error: " + flag) and err.count("\n") == 1


def test_a_setting_that_does_not_fit_is_said():
    """Issue: 131,072 tokens × batch 64 on an 80 GB H100 reported a 1.1 TB KV cache without a
    word. By hand: weights 2 × 8,030,261,248 B (Llama-3-8B, bf16) plus the KV cache
    2·L·n_kv·H·T·b_kv·B = 2·32·8·128·131,072·2·64 B = 1,099,511,627,776 B: 1,115.57 GB, the
    resident footprint; the warning counts the live activations too, kernel attention's peak
    in the MLP: (3D + 3F)·2 B a row, 110,592 × 64 × 131,072 = 927,712,935,936 B: 2,043.29 GB."""
    from roofline import evaluate

    s = setting("H100-SXM", "Llama-3-8B", batch=64)
    assert evaluate.memory_bytes(s, 131_072) == 2 * 8_030_261_248 + 1_099_511_627_776
    with pytest.warns(UserWarning, match=r"the prefill of batch 64 at 131,072 tokens needs "
                                         r"2,043 GB \(weights, KV cache and its live activations\), "
                                         r"1.96 TB more than H100-SXM's "
                                         r"80 GB"):
        api.prefill("H100-SXM", "Llama-3-8B", [131_072], batch=64)
    one = setting("H100-SXM", "Llama-3-8B")
    assert evaluate.check_memory(one, 8192, "the prefill") is None  # 16.06 + 1.07 GB fit
    # naive attention also holds one layer's score matrix (P may overwrite S in place,
    # FlashAttention Algorithm 0): T² per head, 32 heads, 2 B each
    naive = setting("H100-SXM", "Llama-3-8B", attention="naive")
    assert evaluate.memory_bytes(naive, 8192) - evaluate.memory_bytes(one, 8192) == \
        32 * 8192**2 * 2


def test_largest_batch_that_fits_in_closed_form():
    """kv_cache_exceeds_memory_batch at the model's context limit, by hand: Llama-3-8B on H100,
    (80e9 − 2 × 8,030,261,248 B) / (2·32·8·128·8,192·2 B) = 59.55 sequences; Llama-2-70B's
    138 GB of weights never fit in an A100's 80 GB."""
    c = crossover_values(setting("H100-SXM", "Llama-3-8B"))["kv_cache_exceeds_memory_batch"]
    assert c.value == pytest.approx((80e9 - 2 * 8_030_261_248) / (2 * 32 * 8 * 128 * 8192 * 2))
    with pytest.warns(UserWarning, match="do not fit"):
        big = setting("A100-80GB-SXM", "Llama-2-70B")
    c = crossover_values(big)["kv_cache_exceeds_memory_batch"]
    assert not c.exists and c.reason.startswith("never fits: the weights alone")


@pytest.mark.parametrize("hw, model, options", [
    ("H100-SXM", "Llama-3-8B", {}),  # the kernel's attention timed at SRAM and L2 too
    ("H100-SXM", "Llama-3-70B", {"tp": 4, "overlap": True}),  # all-reduces cut to their share
    ("H100-SXM", "Llama-3-8B", {"cp": 2, "attention": "naive"})])
def test_the_points_columns_and_records_are_each_operation_timed_on_its_own(hw, model, options):
    """The prefill at several lengths (columns, records built when read) against each operation
    evaluated at one point by its scalar form and timed by hand: max(F/P, Q/β, Q_l/β_l); the
    totals are the sums over the operations; indexing, slicing, iterating and pickling agree."""
    from roofline.evaluate import operations

    s = setting(hw, model, **options)
    prompts = [4, 300, 4096, 70_000]  # at least 2·cp tokens
    points = prefill(s, prompts)
    assert len(points) == 4 and points.prompt_tokens == prompts
    assert list(points) == [points[i] for i in range(4)] == points[:] == [points[-4], *points[1:]]
    with pytest.raises(IndexError):
        points[4]
    import pickle  # pickled and copied as the list of its points

    assert pickle.loads(pickle.dumps(points)) == list(points) and points != tuple(points)
    for i, (t, p) in enumerate(zip(prompts, points)):
        for op, r in zip(operations(s), p.operations):
            f, q = float(op.flops(t)) * op.count, float(op.bytes(t)) * op.count
            levels = [float(q_at(t)) * op.count / b for _, b, q_at in op.levels]
            assert (r.name, r.flops, r.bytes) == (op.name, pytest.approx(f, rel=1e-12),
                                                  pytest.approx(q, rel=1e-12))
            alone = max(f / s.peak, q / s.bandwidth, *levels)
            if op.kind == "communication" and (s.overlap or op.name.startswith("cp.")):
                assert r.time_s <= alone * (1 + 1e-12)  # only its exposed share
            else:
                assert r.time_s == pytest.approx(alone, rel=1e-12)
        assert p.time_s == pytest.approx(sum(r.time_s for r in p.operations), rel=1e-12)
        assert p.flops == pytest.approx(sum(r.flops for r in p.operations), rel=1e-12)
        assert (points.time_s[i], points.flops[i], points.bytes[i], points.intensity[i],
                points.bound[i]) == (p.time_s, p.flops, p.bytes, p.intensity, p.bound)
