"""Published times to first token at several tensor-parallel degrees (published/parallel.toml)
against the prefill's bound: none may beat it; the bound is the public API's prefill; one row
checked by hand; a mixture of experts on a repeated prompt; the file's format refused where
malformed."""

import pytest

import roofline
from roofline.errors import InputError, SpecError
from roofline.evaluate.published import check_parallel, one_route
from roofline.specs.hardware import load_hardware
from roofline.specs.model import load_model
from roofline.specs.published import (load_parallel_measurements,
                                      read_parallel_measurements)

MEASUREMENTS = load_parallel_measurements()
CHECKS = [check_parallel(m, load_hardware(m.device), load_model(m.model)) for m in MEASUREMENTS]


def _row(**want):
    (c,) = [c for c in CHECKS
            if all(getattr(c.measurement, k) == v for k, v in want.items())]
    return c


def test_the_file_covers_degrees_devices_engines_and_models():
    assert len(MEASUREMENTS) >= 70
    assert {1, 2, 4, 8} <= {m.tp for m in MEASUREMENTS}
    assert {"H100-SXM", "H200-SXM", "A100-80GB-SXM", "L40S"} <= {m.device for m in MEASUREMENTS}
    assert {"TensorRT-LLM", "LMDeploy (TurboMind)"} <= {m.engine for m in MEASUREMENTS}
    assert {"Llama-2-7B", "Llama-2-70B", "Mistral-7B", "Mixtral-8x7B"} <= {
        m.model for m in MEASUREMENTS}
    assert {"fp16", "fp8"} == {m.dtype for m in MEASUREMENTS}
    # each degree above 1 has rows on more than one device
    for n in (2, 4, 8):
        assert len({m.device for m in MEASUREMENTS if m.tp == n}) >= 3


def test_no_published_time_beats_the_bound():
    beaten = [(c.measurement.engine, c.measurement.version, c.measurement.device,
               c.measurement.model, c.measurement.tp, c.measurement.prompt_tokens,
               round(c.ratio, 3)) for c in CHECKS if not c.holds]
    assert beaten == []
    # hiding the all-reduces under the compute only lowers the bound
    assert all(c.overlapped_s <= c.bound_s and c.overlapped_holds for c in CHECKS)


def test_the_bound_is_not_so_loose_that_it_says_nothing():
    """The tightest rows sit within 1.3 times the bound, the median within 2.5 times; at every
    degree above 1 some row is within 1.5 times."""
    ratios = sorted(c.ratio for c in CHECKS)
    assert ratios[0] < 1.3 and ratios[len(ratios) // 2] < 2.5
    for n in (2, 4, 8):
        assert min(c.ratio for c in CHECKS if c.measurement.tp == n) < 1.75
    assert min(c.ratio for c in CHECKS if c.measurement.tp > 1 and
               c.measurement.model != "Mixtral-8x7B") < 1.5


def test_the_bound_is_what_the_public_api_gives():
    """Each dense row's bound is ``roofline.prefill(...)`` of the same setting, the function a
    user calls (and ``roofline prefill --tp N`` prints)."""
    for c in CHECKS[::7]:
        m = c.measurement
        if m.model == "Mixtral-8x7B":
            continue
        table = roofline.prefill(m.device, m.model, [m.prompt_tokens], dtype=m.dtype,
                                 batch=m.batch, tp=m.tp)
        assert c.bound_s == table.points[0].time_s


def test_llama2_70b_on_four_a100s_by_hand():
    """LMDeploy v0.1.0a1 (docs/en/benchmark/a100_fp16.md): Llama-2-70B, FP16, TP 4, batch 1,
    2,048 prompt tokens, first token after 0.402 s. By hand, one device's share of each layer
    (Megatron-LM: columns then rows, 64/4 query heads, 8/4 key/value heads, 28,672/4 of the MLP),
    each operation max(FLOPs/peak, bytes/bandwidth) in sequence, and two ring all-reduces of
    T·D fp16 values a layer, 2(N−1)/N of them over one direction of the link plus 2(N−1)
    latencies."""
    c = _row(engine="LMDeploy (TurboMind)", model="Llama-2-70B", prompt_tokens=2048)
    T, D, F, H, L, V, N = 2048, 8192, 28672, 128, 80, 32000, 4
    q, kv, f, v = 64 // N, 8 // N, F // N, V // N  # one device's heads, MLP width, vocabulary
    b = 2  # fp16
    peak, hbm = 312e12, 2039e9  # A100 80GB SXM datasheet: dense FP16, HBM2e
    l2, sram = 7.22e12, 19.49e12  # the hardware file's estimates of L2 and shared memory
    link, alpha = 300e9, 0.47e-6  # NVLink3: 600 GB/s both ways; NCCL's per-step latency

    def op(flops, nbytes):
        return max(flops / peak, nbytes / hbm)

    norm = op(4 * T * D, 2 * T * D * b + D * b)
    width = H * (q + 2 * kv)  # the QKV projection's output columns on one device
    qkv = op(2 * T * D * width, T * b * (D + width) + D * width * b)
    rope = op(3 * T * H * (q + kv), 2 * T * H * (q + kv) * b)
    # attention: T(T+1)/2 query-key pairs a head, 4·H FLOPs each; Q read, O and the row
    # statistics written once, K and V once from HBM (one head's K and V, 1 MiB, fit the L2);
    # through the L2 and shared memory each 128-row block of Q reads the K and V rows up to it
    blocks = T // 128
    kv_rows = 128 * blocks * (blocks + 1) // 2
    served = q * b * (2 * T * H + 2 * H * kv_rows + T)
    attention = max(2 * H * T * (T + 1) * q / peak,
                    (b * H * (2 * T * q + 2 * T * kv) + b * T * q) / hbm,
                    served / l2, served / sram)
    o_proj = op(2 * T * D * H * q, T * b * (D + H * q) + D * H * q * b)
    all_reduce = 2 * T * D * b * (N - 1) / N / link + 2 * (N - 1) * alpha
    residual = op(T * D, 3 * T * D * b)
    up = op(4 * T * D * f, T * b * (D + 2 * f) + 2 * D * f * b)
    act = op(5 * T * f, 3 * T * f * b)
    down = op(2 * T * D * f, T * b * (D + f) + D * f * b)
    layer = (norm + qkv + rope + attention + o_proj + all_reduce + residual
             + norm + up + act + down + all_reduce + residual)
    embedding = op(0, T * D * b + T * D * b) + all_reduce
    head = (op(4 * D, 2 * D * b + D * b) + op(2 * D * v, b * (D + v) + D * v * b)
            + V * b * (N - 1) / N / link + (N - 1) * alpha)  # last position; logits gathered
    bound = L * layer + embedding + head

    assert c.measurement.time_s == pytest.approx(0.402)
    assert c.bound_s == pytest.approx(bound, rel=1e-12)
    assert c.point.bound == "compute" and attention == 2 * H * T * (T + 1) * q / peak
    assert c.communication_s == pytest.approx((2 * L + 1) * all_reduce
                                              + V * b * (N - 1) / N / link + (N - 1) * alpha)
    assert 1.4 < c.ratio < 1.5  # 0.402 s measured, 0.274 s bound


def test_mixtral_on_a_repeated_prompt_reaches_two_experts():
    """TensorRT-LLM 0.9.0, Mixtral-8x7B FP16 on two A100s, 128 prompt tokens: 23.8 ms. The
    benchmark's prompt is its pad id repeated, so each MoE layer reads 2 of the 8 experts. With
    all 8 read (the model's count for varied tokens) the bound, 23.87 ms, is above the
    measurement: the expert weights alone, 45.1 GB a device, take 22.1 ms at 2,039 GB/s."""
    c = _row(engine="TensorRT-LLM", version="0.9.0", device="A100-80GB-SXM",
             model="Mixtral-8x7B", prompt_tokens=128)
    assert c.measurement.tokens == "repeated" and c.setting.model.num_experts == 2
    L, D, F, N, b = 32, 4096, 14336, 2, 2
    experts = L * 8 * 3 * D * (F // N) * b  # gate, up and down of every expert, one device
    assert experts / 2039e9 == pytest.approx(22.1e-3, rel=2e-3)
    assert c.spread_s > c.measurement.time_s > c.bound_s
    # at 2,048 tokens the prefill is compute-bound: the experts reached change (almost) nothing
    long = _row(engine="TensorRT-LLM", version="0.9.0", device="A100-80GB-SXM",
                model="Mixtral-8x7B", prompt_tokens=2048)
    assert long.bound_s == pytest.approx(long.spread_s, rel=1e-4)


def test_one_route_leaves_a_dense_model_alone():
    dense = load_model("Llama-2-7B")
    assert one_route(dense) is dense
    assert one_route(load_model("Mixtral-8x7B")).experts_per_token == 2


def _file(tmp_path, body):
    path = tmp_path / "p.toml"
    path.write_text(body)
    return path


GOOD = """[[measurement]]
engine = "e"
version = "1"
device = "H100-SXM"
model = "Llama-2-7B"
dtype = "fp16"
tp = 2
batch = 1
prompt_tokens = 128
time_ms = 10.0
metric = "first_token"
tokens = "varied"
source = "a page"
read = "a table"
confidence = "high"
"""


def test_a_good_file_reads(tmp_path):
    (m,) = read_parallel_measurements(_file(tmp_path, GOOD))
    assert (m.tp, m.prompt_tokens, m.time_s) == (2, 128, 0.01)
    assert m.note == ""


@pytest.mark.parametrize("change, where, rule", [
    (("tp = 2", "tp = 0"), "measurement[0].tp", "must be a positive integer"),
    (("tp = 2", "tp = 2.0"), "measurement[0].tp", "must be a positive integer"),
    (("time_ms = 10.0", "time_ms = -1"), "measurement[0].time_ms", "must be a number"),
    (("time_ms = 10.0", 'time_ms = "10"'), "measurement[0].time_ms", "must be a number"),
    (('dtype = "fp16"', 'dtype = "half"'), "measurement[0].dtype", "must be one of"),
    (('metric = "first_token"', 'metric = "ttft"'), "measurement[0].metric", "must be one of"),
    (('tokens = "varied"', 'tokens = "random"'), "measurement[0].tokens", "must be one of"),
    (('confidence = "high"', 'confidence = "sure"'), "measurement[0].confidence",
     "must be one of"),
    (('engine = "e"', 'engine = ""'), "measurement[0].engine", "must be a non-empty string"),
    (('read = "a table"\n', ""), "measurement[0].read", "missing required key"),
    (("batch = 1", "batch = 1\nlatency = 3"), "measurement[0].latency", "unknown key"),
    (("tp = 2", "tp = 2\nep = 0"), "measurement[0].ep", "must be a positive integer"),
    (("tp = 2", 'tp = 2\nnetwork = ""'), "measurement[0].network", "must be a non-empty string"),
    (("", ""), "measurement[1]", "repeats the setting of measurement[0]"),
])
def test_a_malformed_measurement_is_one_line_naming_it(tmp_path, change, where, rule):
    body = GOOD.replace(*change) if change[0] else GOOD + "\n" + GOOD
    with pytest.raises(SpecError) as err:
        read_parallel_measurements(_file(tmp_path, body))
    message = str(err.value)
    assert where in message and rule in message and "\n" not in message


def test_a_setting_the_model_refuses_is_one_line(tmp_path):
    """A degree that does not divide the heads is refused by the evaluation core itself."""
    (m,) = read_parallel_measurements(_file(tmp_path, GOOD.replace("tp = 2", "tp = 3")))
    with pytest.raises(InputError) as err:
        check_parallel(m, load_hardware(m.device), load_model(m.model))
    assert "tp" in str(err.value) and "divide" in str(err.value) and "\n" not in str(err.value)


def test_multi_node_expert_parallelism_by_hand():
    """SGLang, DeepSeek-V3 over 4 nodes of 8 H100 (EP 32), 4,096-token prompts, 16,384 tokens
    per device: 50,302 input tokens/s per node, 2,605.7 ms for a device's batch. Each of the 58
    MoE layers' dispatch (and combine) sends a token's 7,168 fp8 values once to each other node
    its 8 experts reach, 3·(1 − (3/4)⁸) of them on average, at 50 GB/s after 3 latencies of
    2.7 µs. Counted as GShard counts it (all 8 copies, 31/32 of them over the network) the bound
    would be 2.9 s, beaten by the measurement; counted as DeepEP sends it, it holds."""
    c = _row(engine="SGLang", model="DeepSeek-V3", device="H100-SXM")
    ops = {o.name: o for o in c.point.operations}
    row = 16384 * 7168
    deepep = 58 * (3 * 2.7e-6 + 3 * (1 - 0.75**8) * row / 50e9)
    for name in ("ep.dispatch", "ep.combine"):
        assert ops[name].time_s == pytest.approx(deepep, rel=1e-12)
        assert ops[name].level == "network"
    gshard = 58 * (31 * 2.7e-6 + 31 / 32 * 8 * row / 50e9)
    compute = c.bound_s - 2 * deepep
    assert compute + 2 * gshard > c.measurement.time_s > c.bound_s


def test_a_chunked_pipeline_across_nodes_holds():
    """SGLang's chunked pipeline (PP 4 × TP 8 on 4 nodes of 8 H20), DeepSeek-V3.1 at 128K
    (128,000) tokens in 15.7 s: a TP+PP row of the table, its default bound (a stage's mean share) below
    the measurement and within 4× of it (tests/test_pipeline_schedules.py holds the whole
    schedule, the stages' sum, beaten by it)."""
    c = _row(engine="SGLang", device="H20")
    m = c.measurement
    assert (m.tp, m.pp, m.prompt_tokens) == (8, 4, 128_000) and c.holds
    assert c.bound_s < m.time_s < c.bound_s * 4
