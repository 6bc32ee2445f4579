"""roofline.plot: the plotted data (each line's x and y against the evaluation), titles, units,
legends clear of the data, and byte-identical SVG and PDF; not pixels."""

from __future__ import annotations

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from roofline import api, evaluate, plot  # noqa: E402
from roofline.errors import InputError  # noqa: E402
from roofline.plot import _style  # noqa: E402

PEAK, BW = 989.4e12, 3.35e12  # H100-SXM bf16 dense, HBM3 (hardware/H100-SXM.toml)


@pytest.fixture(scope="module")
def s():
    return api.setting("H100-SXM", "Llama-3-8B")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _by_gid(fig_or_ax, gid: str):
    found = [a for a in fig_or_ax.findobj() if a.get_gid() == gid]
    assert len(found) == 1, (gid, len(found))
    return found[0]


def _xy(line) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def _renderer(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _legend_clear_of_data(fig) -> None:
    renderer = _renderer(fig)
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


def test_roofline_ceilings_ridges_and_points(s):
    fig = plot.roofline_figure(s, prompts=(128, 2048), batches=(1, 64), context=8192)
    ax = fig.axes[0]
    x, y = _xy(_by_gid(ax, "memory:H100-SXM"))
    assert y / x == pytest.approx([BW, BW])
    # one ridge per distinct peak, at P/β: fp32 67 TFLOP/s, bf16 = fp16, fp8 = int8
    for names, peak in (("fp32", 67e12), ("bf16, fp16", PEAK), ("fp8, int8", 1978.9e12)):
        rx, ry = _xy(_by_gid(ax, f"ridge:H100-SXM:{names}"))
        assert rx[0] == pytest.approx(peak / BW) and ry[0] == pytest.approx(peak)
        cx, cy = _xy(_by_gid(ax, f"compute:H100-SXM:{names}"))
        assert cx[0] == pytest.approx(peak / BW) and cy == pytest.approx([peak, peak])
    for point in evaluate.prefill(s, [128, 2048]):
        px, py = _xy(_by_gid(ax, f"point:H100-SXM:prefill:{point.prompt_tokens}"))
        assert px[0] == pytest.approx(point.intensity)
        assert py[0] == pytest.approx(point.flops / point.time_s)
    # compute-bound projections sit on the flat roof
    assert _xy(_by_gid(ax, "point:H100-SXM:projection:2048"))[1][0] == pytest.approx(PEAK)
    d = evaluate.decode(api.setting("H100-SXM", "Llama-3-8B", batch=64), 8192)
    dx, dy = _xy(_by_gid(ax, "point:H100-SXM:decode:decode step, batch 64"))
    assert dx[0] == pytest.approx(d.intensity) and dy[0] == pytest.approx(d.flops / d.time_s)
    # tiled attention's SRAM ceiling: 4·H·B_c/((3H + 4)·b_a), B_c = 233,472/(4·128·2) = 228
    assert _xy(_by_gid(ax, "sram:H100-SXM"))[0][0] == pytest.approx(4 * 128 * 228 / (388 * 2))
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "(FLOP/byte)" in ax.get_xlabel() and "(FLOP/s)" in ax.get_ylabel()
    for word in ("H100-SXM", "Llama-3-8B", "bf16", "tiled attention"):
        assert word in ax.get_title()
    _legend_clear_of_data(fig)


def test_roofline_several_devices(s):
    a100 = api.setting("A100-80GB-SXM", "Llama-3-8B")
    ax = plot.plot_roofline([s, a100], prompts=(2048,), sram=False)
    x, y = _xy(_by_gid(ax, "memory:A100-80GB-SXM"))
    assert y / x == pytest.approx([a100.hardware.bandwidth()] * 2)
    assert "H100-SXM, A100-80GB-SXM" in ax.get_title()
    assert not [a for a in ax.findobj() if str(a.get_gid()).startswith("sram:")]


def test_time_lines_and_crossovers(s):
    fig = plot.time_figure(s)
    ax = fig.axes[0]
    compute = _by_gid(ax, "time:H100-SXM:total:compute")
    memory = _by_gid(ax, "time:H100-SXM:total:memory")
    xs, yc = _xy(compute)
    _, ym = _xy(memory)
    total = np.where(np.isnan(yc), ym, yc)
    assert total == pytest.approx(evaluate.prefill_time(s, xs), rel=1e-12)
    # solid (compute-bound) at 2,048 tokens, dashed (memory-bound) at 128 and past 41,196
    assert evaluate.prefill(s, [2048])[0].bound == "compute"
    at = {t: int(np.argmin(abs(xs - t))) for t in (128, 2048, 200_000)}
    assert np.isnan(ym[at[2048]]) and not np.isnan(yc[at[2048]])
    assert np.isnan(yc[at[128]]) and np.isnan(yc[at[200_000]])
    values = evaluate.crossover_values(s)
    for name in ("prefill_compute_bound_tokens.tiled", "projection_compute_bound_tokens",
                 "kv_cache_exceeds_memory_tokens", "naive_scores_exceed_memory_tokens"):
        line = _by_gid(ax, f"crossover:H100-SXM:{name}")
        assert _xy(line)[0][0] == pytest.approx(values[name].value)
    ends = _by_gid(ax, "crossover:H100-SXM:prefill_compute_bound_tokens.tiled:ends")
    assert _xy(ends)[0][0] == pytest.approx(values["prefill_compute_bound_tokens.tiled"].ends_at)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    value = values["prefill_compute_bound_tokens.tiled"].value
    assert any(f"prefill compute-bound (tiled): {value:,.0f}" in t for t in labels)
    assert any("decode critical batch" in t and "sequences" in t for t in labels)
    assert any(t.startswith("never:") for t in labels)  # naive attention never reaches the ridge
    # the numbered tags at the top of the lines never overlap one another
    r = _renderer(fig)
    boxes = [t.get_window_extent(r) for t in ax.texts if str(t.get_gid()).startswith("tag:")]
    assert len(boxes) >= 13
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1:])
    assert ax.get_xlabel() == "prompt length T (tokens)" and "(s)" in ax.get_ylabel()
    _legend_clear_of_data(fig)


def test_time_per_kind(s):
    ax = plot.plot_time(s, tokens=np.array([128.0, 2048.0]), crossovers=False)
    for kind in ("projection", "attention"):
        _, yc = _xy(_by_gid(ax, f"time:H100-SXM:{kind}:compute"))
        _, ym = _xy(_by_gid(ax, f"time:H100-SXM:{kind}:memory"))
        got = np.where(np.isnan(yc), ym, yc)
        for i, point in enumerate(evaluate.prefill(s, [128, 2048])):
            want = sum(o.time_s for o in point.operations if o.kind == kind)
            assert got[i] == pytest.approx(want)


def test_attention_traffic_and_footprint(s):
    fig = plot.attention_figure(s)
    left, right = fig.axes[:2]
    x, y = _xy(_by_gid(left, "traffic:naive"))
    assert y == pytest.approx(32 * 2 * (4 * x * 128 + 4 * x**2))  # Algorithm 0, 32 heads, bf16
    x, y = _xy(_by_gid(left, "asymptote:tiled"))
    assert y == pytest.approx(2 * 32 * 4 * 128 * 388 / 233472 * x**2)  # Θ(T²H²/M)
    own = _xy(_by_gid(left, "traffic:tiled:233472"))[1]
    big = _xy(_by_gid(left, "traffic:tiled:933888"))[1]
    assert np.all(big <= own)
    x, y = _xy(_by_gid(left, "traffic:ideal"))
    assert y == pytest.approx(128 * 2 * (2 * 32 * x + 2 * 8 * x))
    assert _xy(_by_gid(right, "capacity:H100-SXM"))[1][0] == pytest.approx(80e9)
    cross = evaluate.crossover_values(s)["naive_scores_exceed_memory_tokens"].value
    assert _xy(_by_gid(right, "crossover:H100-SXM:naive_scores_exceed_memory_tokens"))[0][0] == \
        pytest.approx(cross)
    x, y = _xy(_by_gid(right, "footprint:scores"))
    assert y == pytest.approx(2 * 8_030_261_248 + 32 * x**2 * 2)
    for word in ("H100-SXM", "Llama-3-8B", "bf16"):
        assert word in fig.get_suptitle()
    assert "(bytes)" in left.get_ylabel() and "(tokens)" in left.get_xlabel()
    _legend_clear_of_data(fig)


def test_phases(s):
    fig = plot.phases_figure(s, prompts=(128, 2048), batches=(1, 64), context=8192)
    left, right = fig.axes[:2]
    for ax in (left, right):
        assert _xy(_by_gid(ax, "ridge:H100-SXM"))[1][0] == pytest.approx(PEAK / BW)
    x, y = _xy(_by_gid(left, "prompts:H100-SXM"))
    assert y == pytest.approx([p.intensity for p in evaluate.prefill(s, [128, 2048])])
    values = evaluate.crossover_values(s)
    x, y = _xy(_by_gid(right, "crossover:H100-SXM:decode_critical_batch"))
    assert x[0] == pytest.approx(values["decode_critical_batch"].value)
    assert y[0] == pytest.approx(PEAK / BW)
    x, y = _xy(_by_gid(left, "crossover:H100-SXM:prefill_compute_bound_tokens.tiled"))
    assert x[0] == pytest.approx(values["prefill_compute_bound_tokens.tiled"].value)
    x, y = _xy(_by_gid(right, "decode:step"))
    assert y[0] == pytest.approx(evaluate.decode(s, 8192).intensity)  # B = 1
    assert "tiled attention" in fig.get_suptitle() and "(FLOP/byte)" in left.get_ylabel()
    _legend_clear_of_data(fig)


def test_axes_level_function_uses_the_current_axes(s):
    ax = plot.plot_prefill_intensity(s, tokens=np.array([64.0, 4096.0]))
    assert ax is plt.gca()


@pytest.mark.parametrize("ext", ["svg", "pdf"])
def test_same_inputs_same_bytes(s, tmp_path, ext):
    a = plot.save(plot.phases_figure(s, prompts=(512,)), tmp_path / f"a.{ext}")
    b = plot.save(plot.phases_figure(s, prompts=(512,)), tmp_path / f"b.{ext}")
    assert a.read_bytes() == b.read_bytes()
    assert b"Date" not in a.read_bytes() or ext == "pdf"
    assert b"CreationDate" not in a.read_bytes()


def test_output_checks(tmp_path):
    with pytest.raises(InputError, match=r"^-o: the file's extension names the format; "
                                         r"matplotlib writes .*png.* \(got '.*x\.xyz'\)"):
        _style.check_output(tmp_path / "x.xyz")
    with pytest.raises(InputError, match="^-o: the folder does not exist"):
        _style.check_output(tmp_path / "missing" / "x.png")


def test_unknown_kind(s):
    with pytest.raises(InputError, match="^kind: must be one of roofline, time, attention, "
                                         "phases \\(got 'bogus'\\)"):
        plot.figure("bogus", s)


def test_import_roofline_does_not_import_matplotlib():
    code = ("import sys, roofline, roofline.plot, roofline.sweeps, roofline.report; "
            "print(any(m.startswith('matplotlib') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
