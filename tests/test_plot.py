"""roofline.plot: the plotted data (each line's x and y against the evaluation), titles, units,
legends clear of the data, and byte-identical SVG and PDF; not pixels."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from roofline import api, evaluate, plot, sweeps  # noqa: E402
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
    for word in ("H100-SXM", "Llama-3-8B", "bf16", "kernel attention"):
        assert word in ax.get_title()
    _legend_clear_of_data(fig)


def test_roofline_draws_each_level_and_places_cached_attention_once_per_level(s):
    """The hierarchical roofline (Yang, Kurth & Williams, arXiv 2009.05257): a ceiling
    β_level·I for the L2 and the SRAM that H100-SXM's file gives, and the kernel attention at
    2,048 tokens once more at its L2 intensity: FLOPs over the bytes the L2 serves."""
    fig = plot.roofline_figure(s, prompts=(2048,), batches=(1,))
    ax = fig.axes[0]
    for level, bw in (("l2", 6.2e12), ("sram", 33.45e12)):
        x, y = _xy(_by_gid(ax, f"ceiling-{level}:H100-SXM"))
        assert y / x == pytest.approx([bw, bw])
    (point,) = evaluate.prefill(s, [2048])
    (attn,) = [o for o in point.operations if o.kind == "attention"]
    served = dict(attn.levels)
    lx, ly = _xy(_by_gid(ax, "point:H100-SXM:attention.kernel:2048:l2"))
    assert lx[0] == pytest.approx(attn.flops / served["l2"])
    assert ly[0] == pytest.approx(attn.flops / attn.time_s)
    hx, _ = _xy(_by_gid(ax, "point:H100-SXM:attention.kernel:2048"))
    assert hx[0] > 5 * lx[0]  # the L2 serves far more bytes than reach HBM at 2,048 tokens
    assert attn.level == "l2"  # and its time is the L2's
    # the ceiling labelled on its line (its series in --data keeps its long name); the note
    # under the legend says what the further marker is
    assert _by_gid(ax, "ceiling-l2:H100-SXM").get_label() == \
        "L2 ceiling: 6.2 TB/s × FLOP per L2 byte"
    assert _by_gid(ax, "memory-label:L2: 6.2 TB/s").get_color() == \
        _by_gid(ax, "ceiling-l2:H100-SXM").get_color()
    assert "at its L2 intensity" in _by_gid(ax, "note").get_text().replace("\n", " ")


def test_roofline_several_devices(s):
    a100 = api.setting("A100-80GB-SXM", "Llama-3-8B")
    ax = plot.plot_roofline([s, a100], prompts=(2048,), sram=False)
    x, y = _xy(_by_gid(ax, "memory:A100-80GB-SXM"))
    assert y / x == pytest.approx([a100.hardware.bandwidth()] * 2)
    assert "H100-SXM, A100-80GB-SXM" in ax.get_title()
    assert not [a for a in ax.findobj() if str(a.get_gid()).startswith("sram:")]


def _table(s, fig) -> tuple[list[str], list[list[str]]]:
    """The time figure's crossover table, for its axis, as text: headers and rows; the figure
    itself draws none (issue 28: tables beside the figure, not in it)."""
    assert not [a for a in fig.findobj() if a.get_gid() == "crossover-table"]
    return plot.time.crossover_table(s, *fig.axes[0].get_xlim())


def _stretches(ax, curve: str, fit: str = "fits"):
    """A curve's compute-bound (solid) and memory-bound (dashed) stretches, where it fits in
    memory (``fit="fits"``) or pale where it does not (``"no-fit"``): x, y solid, y dashed."""
    xs, yc = _xy(_by_gid(ax, f"{curve}:{fit}:compute"))
    _, ym = _xy(_by_gid(ax, f"{curve}:{fit}:memory"))
    return xs, yc, ym


def _drawn_total(ax, device="H100-SXM"):
    """The whole prefill as drawn: compute-bound, memory-bound, and pale where it does not fit
    (the pale stretches still solid and dashed, lighter and thinner than the full ones)."""
    curve = f"time:{device}:total"
    xs, yc, ym = _stretches(ax, curve)
    drawn = np.where(np.isnan(yc), ym, yc)
    fits = ~np.isnan(drawn)
    if [a for a in ax.get_lines() if str(a.get_gid()).startswith(f"{curve}:no-fit:")]:
        _, pc, pm = _stretches(ax, curve, "no-fit")
        drawn = np.where(fits, drawn, np.where(np.isnan(pc), pm, pc))
        _pale_styles(ax, curve)
    return xs, drawn, fits


def _pale_styles(ax, curve: str) -> None:
    """The pale stretches: solid where compute-bound, dashed where memory-bound, as the full
    ones, in their colour, lighter and thinner."""
    for bound, style in (("compute", "-"), ("memory", "--")):
        full, pale = (_by_gid(ax, f"{curve}:{fit}:{bound}") for fit in ("fits", "no-fit"))
        assert pale.get_linestyle() == full.get_linestyle() == style
        assert pale.get_color() == full.get_color()
        assert (pale.get_alpha() or 1) < 1 and pale.get_linewidth() < full.get_linewidth()
        assert full.get_alpha() in (None, 1)


def test_time_lines_and_crossovers(s):
    s = replace(s, attention="tiled")  # the paper's Algorithm 1: a regime that ends in range
    fig = plot.time_figure(s, max_prompt=2**20)  # the old range: every crossover on the axis
    ax = fig.axes[0]
    xs, yc, ym = _stretches(ax, "time:H100-SXM:total")
    xs, total, fits = _drawn_total(ax)
    assert total == pytest.approx(evaluate.prefill_time(s, xs), rel=1e-12)
    # solid (compute-bound) at 2,048 tokens, dashed (memory-bound) at 128 and past 41,196
    assert evaluate.prefill(s, [2048])[0].bound == "compute"
    at = {t: int(np.argmin(abs(xs - t))) for t in (128, 2048, 200_000)}
    assert np.isnan(ym[at[2048]]) and not np.isnan(yc[at[2048]])
    assert np.isnan(yc[at[128]]) and np.isnan(yc[at[200_000]])
    values = evaluate.crossover_values(s)
    # pale past where the prefill's peak (weights, KV cache, live activations) exceeds the
    # memory: before the KV cache alone would (487,820 tokens)
    peak = values[f"prefill_exceeds_memory_tokens.{s.attention}"].value
    assert np.array_equal(fits, xs <= peak)
    assert peak < values["kv_cache_exceeds_memory_tokens"].value
    for name in ("prefill_compute_bound_tokens.tiled", "projection_compute_bound_tokens",
                 "kv_cache_exceeds_memory_tokens", "naive_scores_exceed_memory_tokens"):
        line = _by_gid(ax, f"crossover:H100-SXM:{name}")
        assert _xy(line)[0][0] == pytest.approx(values[name].value)
    ends = _by_gid(ax, "crossover:H100-SXM:prefill_compute_bound_tokens.tiled:ends")
    assert _xy(ends)[0][0] == pytest.approx(values["prefill_compute_bound_tokens.tiled"].ends_at)
    # issue 14: the crossovers are a table, no longer a paragraph of legend; issue 28: beside
    # the figure, not in it
    headers, rows = _table(s, fig)
    assert headers == ["crossover (tokens, else as stated)", "tiled (drawn)",
                       "naive", "tiled_fa2", "kernel", "ideal"]
    table = {row[0]: row[1:] for row in rows}
    value = values["prefill_compute_bound_tokens.tiled"].value
    ends_at = values["prefill_compute_bound_tokens.tiled"].ends_at
    # second root: tagged like its line, 3 and 3′ (the launch and host overhead at 111 are 1,
    # the projections at 326 are 2)
    assert table["prefill compute-bound"][0] == f"[3] {value:,.0f} to [3′] {ends_at:,.0f}"
    assert table["decode critical batch"][0] == \
        f"{values['decode_critical_batch'].value:,.1f} sequences"  # 326.1: one decimal
    assert table["attention compute-bound"][0] == "never"  # tiled never reaches the ridge
    # the other modes listed without a line (no tag)
    naive = values["prefill_compute_bound_tokens.naive"]
    assert table["prefill compute-bound"][1] == f"{naive.value:,.0f} to {naive.ends_at:,.0f}"
    assert not ax.get_legend().get_texts()[0].get_text().startswith("crossovers")
    assert all(len(t.get_text()) < 50 for t in ax.get_legend().get_texts())
    # only the plotted mode (tiled) and the mode-free crossovers get a line; the other modes
    # are listed without one
    gids = {str(a.get_gid()) for a in ax.findobj()}
    for mode in ("naive", "tiled_fa2", "kernel", "ideal"):
        assert not [g for g in gids if g.startswith("crossover:") and g.endswith(f".{mode}")]
    # the numbered tags at the top of the lines never overlap one another
    r = _renderer(fig)
    boxes = [t.get_window_extent(r) for t in ax.texts if str(t.get_gid()).startswith("tag:")]
    # projection 326, prefill (tiled) 411 and its end, attention dominates (tiled), its Q and
    # O outgrowing the L2 (3,028), naive scores, attention equals projection FLOPs, KV cache;
    # the estimate's: launch and host overhead (110) and the peak with activations (264,580)
    assert len(boxes) == 10
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1:])
    # each tag keys the table's value of its line: "[n] value" (or "to [n′] value")
    cells = " ".join(c for row in rows for c in row[1:2])
    for text in ax.texts:
        gid = str(text.get_gid())
        if gid.startswith("tag:"):
            x = _xy(_by_gid(ax, gid.removeprefix("tag:")))[0][0]
            assert f"[{text.get_text()}] {x:,.0f}" in cells, (text.get_text(), x)
        assert text.get_fontsize() >= 7
    # the unit on each tick: seconds with its SI prefix (2 ms)
    assert ax.get_xlabel() == "prompt length T (tokens)"
    assert ax.get_ylabel() == "prefill time"
    ticks = ax.yaxis.get_major_formatter()
    assert [ticks(t, 0) for t in (2e-6, 2e-3, 2.0)] == ["2 µs", "2 ms", "2 s"]
    _legend_clear_of_data(fig)
    # a note under the plot says what the line styles, the shading and the tags mean, clear
    # of the plot and of its legend
    note = _by_gid(ax, "time-note")
    words = " ".join(note.get_text().split())
    assert "solid: compute-bound; dashed: memory-bound; pale: does not fit" in words
    assert "[n]: crossover n, its value in the crossover table" in words
    assert not note.get_window_extent(r).overlaps(ax.get_window_extent(r))
    assert not note.get_window_extent(r).overlaps(ax.get_legend().get_window_extent(r))
    # the operation classes, the whole prefill and its estimate
    assert len(ax.get_legend().get_texts()) == 7


def test_time_default_range_is_the_context(s):
    # issue 14: no longer to 10⁶ tokens; to twice the context limit (8,192 for Llama-3-8B),
    # the octave past it shaded; crossovers past the axis keep their value, without a line
    fig = plot.time_figure(s)
    ax = fig.axes[0]
    xs, _ = _xy(_by_gid(ax, "time:H100-SXM:total:fits:compute"))
    assert xs[0] == 16 and xs[-1] == 2 * s.model.max_position == 16384
    assert ax.get_xlim() == pytest.approx((16, 16384))
    values = evaluate.crossover_values(s)
    gids = {str(a.get_gid()) for a in ax.findobj()}
    assert "crossover:H100-SXM:kv_cache_exceeds_memory_tokens" not in gids
    table = {row[0]: row[1:] for row in _table(s, fig)[1]}
    assert table["KV cache exceeds memory"][0] == \
        f"{values['kv_cache_exceeds_memory_tokens'].value:,.0f}"
    # [1]: the launch and host overhead's crossover (111 tokens), before the projections' 326
    assert table["projection compute-bound"][0].startswith("[2] ")
    ax = plot.plot_time(s, max_prompt=4096, crossovers=False)
    assert ax.get_xlim() == pytest.approx((16, 4096))
    with pytest.raises(InputError, match="^max_prompt: must be more than 16 tokens"):
        plot.plot_time(s, max_prompt=16)


def _attention(setting, xs):
    """Attention's time and whether it is compute-bound at each T, from the evaluation."""
    ops = [[o for o in p.operations if o.kind == "attention"]
           for p in evaluate.prefill(setting, [int(x) for x in xs])]
    return (np.array([sum(o.time_s for o in os) for os in ops]),
            np.array([all(o.bound == "compute" for o in os) for os in ops]))


def _bounds_kept(xs, yc, ym, compute) -> None:
    """Solid only at compute-bound points and their neighbours (where the stretches join),
    dashed only at memory-bound ones and theirs; every point drawn in one or the other."""
    near = lambda m: m | np.r_[m[1:], False] | np.r_[False, m[:-1]]  # noqa: E731
    solid, dashed = ~np.isnan(yc), ~np.isnan(ym)
    assert not (solid & ~near(compute)).any() and not (dashed & ~near(~compute)).any()
    assert (solid | dashed).all()


def test_time_naive_curve_stops_where_scores_exceed_memory(s):
    naive = api.setting("H100-SXM", "Llama-3-8B", attention="naive")
    ax = plot.plot_time(naive, max_prompt=100_000)
    used = sweeps.footprint(naive, np.array([1000.0]))
    limit = evaluate.crossover_values(naive)["naive_scores_exceed_memory_tokens"].value
    for kind in ("total", "attention"):
        curve = f"time:H100-SXM:{kind}"
        xs, yc, ym = _stretches(ax, curve)
        drawn = ~(np.isnan(yc) & np.isnan(ym))
        # full only while the prefill's peak fits (issue 29: its live activations, which hold
        # the scores, counted): before weights, the KV cache (2·8·128·32·2 = 131,072 bytes a
        # token) and one layer's scores alone would exceed 80 GB
        peak = evaluate.crossover_values(naive)["prefill_exceeds_memory_tokens.naive"].value
        alone = used["weights"][0] + 131_072 * xs + 32 * xs**2 * 2 <= 80e9
        fits = xs <= peak
        assert np.array_equal(drawn, fits) and xs[drawn][-1] < peak < xs[~drawn][0]
        assert not (drawn & ~alone).any() and peak < limit
        # pale from the last point that fits on, solid and dashed as the evaluation's bound
        _, pc, pm = _stretches(ax, curve, "no-fit")
        pale = ~(np.isnan(pc) & np.isnan(pm))
        assert np.array_equal(pale, ~fits | np.r_[~fits[1:], False])
        if kind == "total":
            want = evaluate.prefill_time(naive, xs[pale])
            compute = np.array([p.bound == "compute"
                                for p in evaluate.prefill(naive, [int(x) for x in xs[pale]])])
        else:
            want, compute = _attention(naive, xs[pale])
        got = np.where(np.isnan(pc), pm, pc)[pale]
        assert got == pytest.approx(want, rel=1e-12)
        _bounds_kept(xs[pale], pc[pale], pm[pale], compute)
        assert (~compute).any()  # naive attention is memory-bound there: some dashes pale
        _pale_styles(ax, curve)
    assert "pale: does not fit in the device's memory" in \
        " ".join(_by_gid(ax, "time-note").get_text().split())
    # tiled attention needs no score matrix: nothing pale, and no fit to say for attention
    tiled = plot.plot_time(s, max_prompt=100_000, ax=plt.figure().subplots())
    gids = {str(a.get_gid()) for a in tiled.findobj()}
    assert not [g for g in gids if ":no-fit" in g]
    assert {"time:H100-SXM:attention:compute", "time:H100-SXM:total:fits:compute"} <= gids


def test_time_says_why_a_crossover_has_no_value():
    # issue 28: Mixtral's 93 GB of weights exceed an H100's 80 GB, so its KV cache and naive
    # scores have no crossover with the memory; "never" read as the opposite. The figure's
    # table, the crossover command and the report say that the weights alone exceed it.
    from roofline.report import _crossovers

    with pytest.warns(UserWarning, match="do not fit"):
        mixtral = api.setting("H100-SXM", "Mixtral-8x7B")
    values = evaluate.crossover_values(mixtral)
    names = ("kv_cache_exceeds_memory_tokens", "naive_scores_exceed_memory_tokens",
             "kv_cache_exceeds_memory_batch")
    for name in names:
        assert values[name].reason.startswith("never fits: the weights alone (93.41 GB)")
    table = {row[0]: row[1] for row in plot.time.crossover_table(mixtral, 16, 65536)[1]}
    for label in ("KV cache exceeds memory", "naive scores exceed memory",
                  "KV cache exceeds memory batch"):
        assert table[label] == "weights alone exceed memory"
    assert table["attention compute-bound"] == "never"  # kernel: its L2 traffic binds
    command = api.CrossoverTable(mixtral, values)
    rows = {row[0]: row[1] for row in command.rows()[1]}
    assert [rows[n] for n in names] == ["weights alone exceed memory"] * 3
    assert "  weights alone exceed memory  " in str(command)
    report = "\n".join(_crossovers(command))
    for name in names:
        assert f"| `{name}` | – | weights alone exceed memory |" in report


def test_time_pale_where_the_prefill_does_not_fit():
    # issue 28: the README promised the stretches past the memory drawn apart; they were drawn
    # as any other. An L4's 24 GB hold Llama-3-8B's weights and its KV cache to 60,573 tokens:
    # the whole prefill is pale from there, in its own colour; Mixtral on an H100 is pale
    # throughout (its weights alone exceed the memory), its operation classes pale with it
    l4 = api.setting("L4", "Llama-3-8B")
    ax = plot.plot_time(l4, max_prompt=131072)
    kv = evaluate.crossover_values(l4)["kv_cache_exceeds_memory_tokens"].value
    assert kv == pytest.approx(60_573, abs=1)
    # issue 29: pale from where the peak with live activations exceeds 24 GB, 32,853 tokens
    # (test_workspace finds it by hand), before the KV cache alone fills it
    peak = evaluate.crossover_values(l4)["prefill_exceeds_memory_tokens.kernel"].value
    assert int(peak) == 32_853
    xs, total, fits = _drawn_total(ax, "L4")
    assert np.array_equal(fits, xs <= peak) and not fits.all()
    assert total == pytest.approx(evaluate.prefill_time(l4, xs), rel=1e-12)
    # compute-bound there: the pale stretch is solid, joined to the full one at its last point
    _, pc, pm = _stretches(ax, "time:L4:total", "no-fit")
    assert np.array_equal(~np.isnan(pc), ~fits | np.r_[~fits[1:], False]) and np.isnan(pm).all()
    assert _by_gid(ax, "time:L4:total:no-fit:compute").get_color() == _style.KIND["total"]
    # kernel attention: no scores in memory, no fit of its own; pale with the prefill (review)
    assert not [a for a in ax.get_lines() if str(a.get_gid()).startswith("time:L4:attention:")
                and ":fits" in str(a.get_gid())]
    _, ac, am = _stretches(ax, "time:L4:attention", "no-fit")
    assert np.array_equal(~(np.isnan(ac) & np.isnan(am)), ~fits | np.r_[~fits[1:], False])
    # Mixtral on an H100: pale throughout, and still solid where the evaluation says
    # compute-bound (from 1,361 tokens) and dashed where memory-bound (issue: the pale curve
    # was solid throughout, its bounds lost)
    with pytest.warns(UserWarning, match="do not fit"):
        mixtral = api.setting("H100-SXM", "Mixtral-8x7B")
    ax = plot.plot_time(mixtral, max_prompt=4096, ax=plt.figure().subplots())
    xs, total, fits = _drawn_total(ax)
    assert not fits.any() and total == pytest.approx(evaluate.prefill_time(mixtral, xs))
    _, pc, pm = _stretches(ax, "time:H100-SXM:total", "no-fit")
    compute = np.array([p.bound == "compute"
                        for p in evaluate.prefill(mixtral, [int(x) for x in xs])])
    assert compute.any() and (~compute).any()
    _bounds_kept(xs, pc, pm, compute)
    _, yc = _xy(_by_gid(ax, "time:H100-SXM:projection:compute"))
    assert np.isnan(yc).all()  # every curve pale where the prefill does not fit (review)
    _, yc = _xy(_by_gid(ax, "time:H100-SXM:projection:no-fit:compute"))
    assert not np.isnan(yc).all()


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
    assert y == pytest.approx(2 * 8_030_261_248 + 131_072 * x + 32 * x**2 * 2)  # + KV cache
    for word in ("H100-SXM", "Llama-3-8B", "bf16"):
        assert word in fig.get_suptitle()
    assert "(bytes)" in left.get_ylabel() and "(tokens)" in left.get_xlabel()
    _legend_clear_of_data(fig)


def test_attention_traffic_draws_the_kernel_mode(s, mi300x):
    # issue 28: the default mode, kernel (FlashAttention-2's order at the released kernels'
    # 128 query rows per block), is drawn on one device and on several (it needs no SRAM size)
    for group in (s, [s, mi300x]):
        left = plot.attention_figure(group).axes[0]
        line = _by_gid(left, "traffic:kernel")
        x, y = _xy(line)
        assert len(x) > 100 and y == pytest.approx(sweeps.attention_bytes(s, x, "kernel"))
        # per head: Q read and O written once (2TH), one logsumexp per row (T), K and V read
        # for the keys each 128-row block reaches: T + 128·T_r(T_r − 1)/2, T_r = ⌈T/128⌉
        rows = np.ceil(x / 128)
        keys = x + 128 * rows * (rows - 1) / 2
        assert y == pytest.approx(32 * 2 * (2 * x * 128 + x + 2 * 128 * keys))
        assert line.get_color() == _style.MODE["kernel"]
        labels = [t.get_text() for t in left.get_legend().get_texts()]
        assert any(t.startswith("kernel (") and "128-row" in t for t in labels)
        plt.close("all")


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
    x, y = _xy(_by_gid(left, "crossover:H100-SXM:prefill_compute_bound_tokens.kernel"))
    assert x[0] == pytest.approx(values["prefill_compute_bound_tokens.kernel"].value)
    x, y = _xy(_by_gid(right, "decode:step"))
    assert y[0] == pytest.approx(evaluate.decode(s, 8192).intensity)  # B = 1
    assert "kernel attention" in fig.get_suptitle() and "(FLOP/byte)" in left.get_ylabel()
    _legend_clear_of_data(fig)


def test_phases_marks_an_end_by_cache_traffic_on_the_curve():
    # DeepSeek-V2-Lite on H100-SXM: the prefill turns memory-bound again near 88,200 tokens
    # because of attention's L2 traffic; the HBM intensity drawn stays far above the ridge
    # there, so the end is marked on the curve (it floated on the ridge line, off every curve)
    ds = api.setting("H100-SXM", "DeepSeek-V2-Lite")
    fig = plot.phases_figure(ds, prompts=(2048,), context=8192)
    left = fig.axes[0]
    v = evaluate.crossover_values(ds)["prefill_compute_bound_tokens.kernel"]
    x, y = _xy(_by_gid(left, "crossover:H100-SXM:prefill_compute_bound_tokens.kernel:ends"))
    assert x[0] == pytest.approx(v.ends_at) and 80_000 < v.ends_at < 100_000
    assert sweeps.intensity(ds, [v.ends_at])[0] > 3 * ds.ridge
    # issue 28: the end sits on the prefill's L2 intensity (FLOP per L2 byte), drawn where the
    # L2 binds, where it meets the L2 ridge P/β_L2 (a hierarchical roofline)
    l2 = ds.peak / ds.level_bandwidths["l2"]
    assert _xy(_by_gid(left, "ridge:l2:H100-SXM"))[1][0] == pytest.approx(l2)
    lx, ly = _xy(_by_gid(left, "prefill:l2:H100-SXM"))
    assert y[0] == pytest.approx(np.interp(np.log(x[0]), np.log(lx), ly), rel=1e-2)
    assert y[0] == pytest.approx(l2, rel=1e-2)
    # beyond the end the prefill is memory-bound at an HBM intensity above the ridge: a further
    # level's traffic binds it, as the legend says
    (after,) = evaluate.prefill(ds, [int(v.ends_at * 1.01)])
    assert after.bound == "memory" and after.intensity > ds.ridge
    legend = [t.get_text().replace("\n", " ") for t in left.get_legend().get_texts()]
    assert any(t.endswith(f"memory-bound again from {v.ends_at:,.0f} (by L2 traffic)")
               for t in legend)


def test_phases_draws_the_l2_intensity_where_the_l2_binds(s):
    # issue 28: Llama-3-8B on H100-SXM turns memory-bound again from 187,833 tokens by L2
    # traffic, while its HBM intensity is ten times the ridge: the prefill's FLOP per L2 byte
    # is drawn against the L2 ridge, the axis long enough to show where they meet
    fig = plot.phases_figure(s, prompts=(2048,), context=8192)
    left = fig.axes[0]
    v = evaluate.crossover_values(s)["prefill_compute_bound_tokens.kernel"]
    assert 187_000 < v.ends_at < 189_000
    x, y = _xy(_by_gid(left, "prefill:l2:H100-SXM"))
    assert x[-1] >= v.ends_at and left.get_xlim()[1] >= v.ends_at
    for t in (2048, 65536):  # against the evaluation: FLOPs over the bytes at the L2
        (p,) = evaluate.prefill(s, [t])
        l2_bytes = sum(dict(o.levels).get("l2", o.bytes) for o in p.operations)
        assert np.interp(np.log(t), np.log(x), y) == pytest.approx(p.flops / l2_bytes, rel=2e-2)
    ridge = PEAK / 6.2e12  # hardware/H100-SXM.toml: l2_bandwidth 6.2 TB/s
    assert _xy(_by_gid(left, "ridge:l2:H100-SXM"))[1][0] == pytest.approx(ridge)
    ex, ey = _xy(_by_gid(left, "crossover:H100-SXM:prefill_compute_bound_tokens.kernel:ends"))
    assert ex[0] == pytest.approx(v.ends_at) and ey[0] == pytest.approx(ridge, rel=1e-2)
    assert sweeps.intensity(s, [v.ends_at])[0] > 10 * s.ridge
    # where no cache level ends the regime (Mistral-7B), no L2 curve
    other = plot.phases_figure(api.setting("H100-SXM", "Mistral-7B"), prompts=(2048,))
    assert not [a for a in other.findobj() if str(a.get_gid()).startswith("prefill:l2:")]


def test_titles_name_the_parallel_degrees():
    # Llama-3-70B's 141 GB of weights over TP 4: a quarter of them on each H100 (80 GB), so
    # every prefill point and the decode step at B = 1 fit (they were drawn hollow)
    tp = api.setting("H100-SXM", "Llama-3-70B", tp=4, pp=2)
    fig = plot.roofline_figure(tp, prompts=(2048,), context=8192)
    ax = fig.axes[0]
    assert ax.get_title().endswith("kernel attention, TP 4, PP 2 chunked)")  # its schedule
    points = [a for a in ax.get_lines() if (a.get_gid() or "").startswith("point:")]
    assert points and all(p.get_markerfacecolor() != "white" for p in points)


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


@pytest.mark.parametrize("kind, ext", [("roofline", "svg"), ("time", "pdf")])
def test_changed_figures_same_bytes(tmp_path, kind, ext):
    # the roofline lays out once to place its ceiling labels; the time figure has a table
    group = [api.setting("H100-SXM", "Llama-3-8B"), api.setting("MI300X", "Llama-3-8B")]
    a = plot.save(plot.figure(kind, group, prompts=(512, 8192)), tmp_path / f"a.{ext}")
    b = plot.save(plot.figure(kind, group, prompts=(512, 8192)), tmp_path / f"b.{ext}")
    assert a.read_bytes() == b.read_bytes()


def test_output_checks(tmp_path):
    with pytest.raises(InputError, match=r"^output: the file's extension names the format; "
                                         r"matplotlib writes .*png.* \(got '.*x\.xyz'\)"):
        _style.check_output(tmp_path / "x.xyz")
    with pytest.raises(InputError, match=r"^output: the file's extension names the format; "
                                         r"matplotlib writes .*png.* \(got '.*x\.pgf'\)"):
        _style.check_output(tmp_path / "x.pgf")  # it ran xelatex, and gave 98 lines without
    folder = tmp_path / "x.png"
    folder.mkdir()
    with pytest.raises(InputError,
                       match=f"^output: is a folder; give a file name \\(got '{folder}'\\)"):
        _style.check_output(folder)
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(InputError, match=f"^output: cannot write there: {afile} is a file, not a folder "):
        _style.check_output(afile / "sub" / "x.png")
    # a missing folder is fine: savefig creates it
    assert _style.check_output(tmp_path / "missing" / "x.png") == tmp_path / "missing" / "x.png"


def test_save_creates_the_folder_and_cleans_up(s, tmp_path):
    fig = plot.phases_figure(s, prompts=(512,))
    path = plot.save(fig, tmp_path / "new" / "deeper" / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["p.png"]  # no temporary left

    class Broken:
        def savefig(self, *args, **kwargs):
            raise RuntimeError("drawing failed")

    with pytest.raises(RuntimeError, match="drawing failed"):
        plot.save(Broken(), tmp_path / "other" / "q.png")
    assert not (tmp_path / "other").exists()  # the folder it made is gone again

    class Unwritable:
        def savefig(self, *args, **kwargs):
            raise PermissionError(13, "Permission denied")

    with pytest.raises(InputError, match="^output: cannot write the file: Permission denied "
                                         f"\\(got '{tmp_path / 'r.png'}'\\)"):
        plot.save(Unwritable(), tmp_path / "r.png")
    assert not list(tmp_path.glob(".r-*"))


def test_unknown_kind(s):
    with pytest.raises(InputError, match="^kind: must be one of roofline, time, attention, "
                                         "phases, scaling \\(got 'bogus'\\)"):
        plot.figure("bogus", s)


def test_import_roofline_does_not_import_matplotlib():
    code = ("import sys, roofline, roofline.plot, roofline.sweeps, roofline.report; "
            "print(any(m.startswith('matplotlib') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def mi300x():
    return api.setting("MI300X", "Llama-3-8B")


def _overlaps(boxes) -> bool:
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_roofline_two_devices_readable_by_device(s, mi300x):
    fig = plot.roofline_figure([s, mi300x], prompts=(128, 2048), batches=(1, 64), context=8192)
    ax = fig.axes[0]
    colors = {}
    for name in ("H100-SXM", "MI300X"):
        memory = _by_gid(ax, f"memory:{name}").get_color()
        # every point of a device in the colour of its ceilings; operations told by markers
        points = [a for a in ax.lines if str(a.get_gid()).startswith(f"point:{name}:")]
        assert {p.get_color() for p in points} == {memory}
        assert _by_gid(ax, f"sram:{name}").get_color() == memory
        colors[name] = memory
        markers = {str(p.get_gid()).split(":")[2]: p.get_marker() for p in points}
        assert len(set(markers.values())) == len(markers)  # one marker per operation class
    assert colors["H100-SXM"] != colors["MI300X"]
    # SRAM limits: named by device and value (in --data); 64 KiB on MI300X, labelled on
    # the line in the device's colour; the devices named once, in a legend of their own
    cap = sweeps.attention_intensity_limit(mi300x, "tiled")
    assert _by_gid(ax, "sram:MI300X").get_label() == \
        f"MI300X: tiled attention's SRAM ceiling: {cap:,.0f} FLOP/byte\n" \
        "(T → ∞, 64 KiB SRAM per CU, no cache)"
    texts = {t.get_text(): t for t in ax.texts}
    assert texts[f"tiled attention ≤ {cap:,.0f}"].get_color() == colors["MI300X"]
    devices = [a for a in ax.artists if isinstance(a, matplotlib.legend.Legend)]
    assert [t.get_text() for t in devices[0].get_texts()] == \
        ["H100-SXM: HBM3 3.35 TB/s", "MI300X: HBM3 5.3 TB/s"]
    assert [h.get_color() for h in devices[0].legend_handles] == list(colors.values())
    # int8 counts operations: 1978.9 TOP/s on H100-SXM, beside fp8's FLOP/s; issue 14: the
    # label on the ceiling in the device's colour, without its name (names made them collide)
    assert texts["fp8: 1.98 PFLOP/s, int8: 1.98 POP/s"].get_color() == colors["H100-SXM"]
    # one "B = " label per batch (the decode stars of both devices share an intensity)
    assert sorted(t for t in texts if t.startswith("B = ")) == ["B = 1", "B = 64"]
    # no two labels on the axes overlap
    r = _renderer(fig)
    assert not _overlaps([t.get_window_extent(r) for t in ax.texts])
    _legend_clear_of_data(fig)


@pytest.mark.parametrize("devices", [("H100-SXM", "A100-80GB-SXM", "MI300X", "TPU-v5e"),
                                     ("H100-SXM", "MI300X", "A100-80GB-SXM", "L40S")])
def test_roofline_four_devices_ceiling_labels_apart(devices):
    # issue 14: with four devices the compute ceilings' labels collided; now each sits on its
    # own ceiling (just above or below it), in its device's colour, inside the axes, and no two
    # touch: where ceilings crowd they are staggered along x. With L40S, 15 ceilings, seven of
    # them between 600 TFLOP/s and 1.4 PFLOP/s, need more columns than the axis had: it runs a
    # decade further (the labels overlapped). Issue "figures a paper can print": a label that
    # no place beside its line leaves clear of every line drawn sits where its line begins
    # (level with its ridge), else is a callout whose leader ends on its line
    group = [api.setting(h, "Llama-3-8B")  # the 16.06 GB of weights fit TPU-v5e's 16 GiB
             for h in devices]
    fig = plot.roofline_figure(group, prompts=(128, 2048, 8192), batches=(1, 64), context=8192)
    ax = fig.axes[0]
    labels = [t for t in ax.texts if str(t.get_gid()).startswith("ceiling-label:")]
    from roofline.plot.roofline import ceiling_label, ceilings

    want = [(ceiling_label(n, p), p, _by_gid(ax, f"memory:{s.hardware.name}").get_color())
            for s in group for n, p, _ in ceilings(s)]
    assert sorted((t.get_text(), t.get_color()) for t in labels) == \
        sorted((text, color) for text, _, color in want)
    r = _renderer(fig)
    boxes = [matplotlib.text.Text.get_window_extent(t, r) for t in labels]  # not the leader
    grown = [b.expanded(1.02, 1.0) for b in boxes]
    assert not _overlaps(grown)
    axes_box = ax.get_window_extent(r)
    to_pixels = ax.transData.transform
    for t, box in zip(labels, boxes):
        assert axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1
        assert axes_box.y0 <= box.y0 and box.y1 <= axes_box.y1
        peak = next(p for text, p, c in want if text == t.get_text() and c == t.get_color())
        y = to_pixels((1.0, peak))[1]
        if t.arrow_patch is not None:  # a callout: its leader ends on its line
            assert t.xy[1] == pytest.approx(peak)
        else:  # on its own line: 2 points away, lifted just clear of the markers on it, or
            # level with it where it begins
            assert min(abs(box.y0 - y), abs(box.y1 - y), abs(box.y0 + box.y1 - 2 * y)) < 12
    # more than one column: the crowded ceilings are staggered along x
    assert len({round(b.x1) for b in boxes}) > 1
    # and no label lies over a plotted point
    points = [a for a in ax.lines if str(a.get_gid()).startswith("point:")]
    xs = [to_pixels((a.get_xdata()[0], a.get_ydata()[0])) for a in points]
    assert not any(b.contains(x, y) for b in boxes for x, y in xs)


def test_roofline_marks_what_does_not_fit_in_memory(s):
    # issue 14: a decode step of 64 sequences at 8,192 tokens holds 16.06 GB of weights and
    # 64 × 1.07 GB of KV cache, 84.8 GB > 80 GB: hollow, not drawn as if it ran
    assert sweeps.decode_memory(s, [64], 8192)[0] == pytest.approx(
        2 * 8_030_261_248 + 64 * 2 * 32 * 8 * 128 * 8192 * 2)
    assert sweeps.max_batch(s, 8192) == 59
    assert list(sweeps.decode_fits(s, [1, 59, 60], 8192)) == [True, True, False]
    fig = plot.roofline_figure(s, prompts=(2048, 32768), batches=(1, 64), context=8192)
    ax = fig.axes[0]
    one = _by_gid(ax, "point:H100-SXM:decode:decode step, batch 1")
    many = _by_gid(ax, "point:H100-SXM:decode:decode step, batch 64")
    assert one.get_markerfacecolor() == one.get_color()  # filled: it fits
    assert many.get_markerfacecolor() == "white"  # hollow
    assert many.get_markeredgecolor() == many.get_color()
    # naive attention at 32,768 tokens: one layer's scores (68.7 GB) beside the weights do not
    # fit; at 2,048 they do; fused (kernel) attention needs no score matrix
    assert _by_gid(ax, "point:H100-SXM:attention.naive:32768").get_markerfacecolor() == "white"
    assert _by_gid(ax, "point:H100-SXM:attention.naive:2048").get_markerfacecolor() != "white"
    assert _by_gid(ax, "point:H100-SXM:attention.kernel:32768").get_markerfacecolor() != "white"
    assert "hollow: does not fit in memory" in _by_gid(ax, "note").get_text().replace("\n", " ")
    _legend_clear_of_data(fig)


def test_phases_two_devices_attention_per_device(s, mi300x):
    fig = plot.phases_figure([s, mi300x], prompts=(2048,), batches=(1,), context=8192)
    left = fig.axes[0]
    x, y = _xy(_by_gid(left, "prefill:attention:MI300X"))
    # against the exact evaluation: attention's FLOPs over its bytes at two lengths
    for t in (1024, 16384):
        (p,) = evaluate.prefill(mi300x, [t])
        ops = [o for o in p.operations if o.kind == "attention"]
        want = sum(o.flops for o in ops) / sum(o.bytes for o in ops)
        assert np.interp(np.log(t), np.log(x), y) == pytest.approx(want, rel=2e-2)
    own = {name: _by_gid(left, f"prefill:{name}").get_color() for name in ("H100-SXM", "MI300X")}
    assert own["H100-SXM"] != own["MI300X"]
    assert _by_gid(left, "prefill:attention:MI300X").get_color() == own["MI300X"]
    assert _by_gid(left, "prefill:attention").get_color() == own["H100-SXM"]
    # the projections do not depend on the device: one grey line, no device's colour
    assert _by_gid(left, "prefill:projection").get_color() not in own.values()
    for name, color in own.items():
        assert _by_gid(left, f"ridge:{name}").get_color() == color
        marker = _by_gid(left, f"crossover:{name}:projection_compute_bound_tokens")
        assert marker.get_markeredgecolor() == color and marker.get_marker() == "s"
    _legend_clear_of_data(fig)


def test_phases_decode_memory(s):
    # issue 14: at context 8,192 an H100-SXM (80 GB) holds the weights and 59 sequences' KV
    # cache: the decode curves are solid to B = 59, dashed past it; B = 64 hollow; the axis
    # ends at the power of two past the critical batch (326 × 1.2), not at 4,096
    fig = plot.phases_figure(s, prompts=(2048,), batches=(1, 64), context=8192)
    right = fig.axes[1]
    for gid in ("decode:step", "decode:projection"):
        x, y = _xy(_by_gid(right, gid))
        _, past = _xy(_by_gid(right, f"{gid}:does-not-fit"))
        assert x[-1] == 512 and x[0] == 1
        assert np.all(np.isnan(y[x >= 60])) and not np.any(np.isnan(y[x <= 59]))
        assert np.all(~np.isnan(past[x > 60])) and np.all(np.isnan(past[x < 40]))
        assert _by_gid(right, f"{gid}:does-not-fit").get_linestyle() == "--"
    assert _xy(_by_gid(right, "memory:H100-SXM"))[0][0] == 59
    x, _ = _xy(_by_gid(right, "batches:does-not-fit"))
    assert list(x) == [64]
    assert _by_gid(right, "batches:does-not-fit").get_markerfacecolor() == "white"
    labels = [t.get_text().replace("\n", " ") for t in right.get_legend().get_texts()]
    assert "memory holds B ≤ 59 at context 8,192" in labels
    assert any(t.startswith("critical batch B = 326") and "more than memory holds" in t
               for t in labels)
    # a context short enough for the critical batch: solid to B = 476, no batch hollow
    right = plot.plot_decode_intensity(s, 1024, batches=(1, 64))
    _, past = _xy(_by_gid(right, "decode:step:does-not-fit"))
    x, y = _xy(_by_gid(right, "decode:step"))
    assert sweeps.max_batch(s, 1024) == 476 and x[-1] == 1024  # 2 × 476, to a power of two
    assert not np.any(np.isnan(y[x <= 476])) and np.all(np.isnan(y[x >= 477]))
    assert not [a for a in right.findobj() if a.get_gid() == "batches:does-not-fit"]


def test_phases_four_devices_each_visible():
    # issue 14: overlaid devices hid each other (ridges 247 and 241 FLOP/byte, critical batches
    # 268 and 261 on MI300X and TPU-v5e): each device's ridge has its own dash pattern, its
    # markers and lines are nested (the first largest, later ones smaller and on top)
    group = [api.setting(h, "Llama-3-8B")  # the 16.06 GB of weights fit TPU-v5e's 16 GiB
             for h in ("H100-SXM", "A100-80GB-SXM", "MI300X", "TPU-v5e")]
    names = [g.hardware.name for g in group]
    fig = plot.phases_figure(group, prompts=(128, 2048), batches=(1, 64), context=8192)
    left, right = fig.axes[:2]
    for ax in (left, right):
        dashes = [_by_gid(ax, f"ridge:{n}")._unscaled_dash_pattern for n in names]
        assert len({repr(d) for d in dashes}) == 4
        squares = [_by_gid(ax, f"crossover:{n}:" + ("projection_compute_bound_tokens"
                                                    if ax is left else "decode_critical_batch"))
                   for n in names]
        sizes = [m.get_markersize() for m in squares]
        assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 4
        orders = [m.get_zorder() for m in squares]
        assert orders == sorted(orders) and len(set(orders)) == 4
        assert len({m.get_markeredgecolor() for m in squares}) == 4
    widths = [_by_gid(left, f"prefill:{n}").get_linewidth() for n in names]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 4
    prompts = [_by_gid(left, f"prompts:{n}").get_markersize() for n in names]
    assert prompts == sorted(prompts, reverse=True) and len(set(prompts)) == 4
    # each device's memory limit: 59 on both 80 GB devices, 177 on MI300X; TPU-v5e holds one
    # sequence: (16 GiB − 16,060,522,496 B of weights) // (2·32·8·128·8192·2 B of KV) = 1
    held = {n: _xy(_by_gid(right, f"memory:{n}"))[0] for n in names}
    assert held["H100-SXM"][0] == held["A100-80GB-SXM"][0] == 59 and held["MI300X"][0] == 177
    assert held["TPU-v5e"][0] == 1
    _legend_clear_of_data(fig)


def test_attention_two_devices(s, mi300x):
    fig = plot.attention_figure([s, mi300x])
    left, right = fig.axes[:2]
    x, y = _xy(_by_gid(left, "traffic:tiled:MI300X"))
    assert y == pytest.approx(sweeps.attention_bytes(mi300x, x, "tiled"))
    caps = {_by_gid(right, f"capacity:{n}").get_color() for n in ("H100-SXM", "MI300X")}
    assert len(caps) == 2
    for gid in ("footprint:scores", "footprint:kv_cache"):
        assert _by_gid(right, gid).get_color() not in caps
    assert _by_gid(left, "traffic:tiled:MI300X").get_color() not in (
        _by_gid(left, "traffic:naive").get_color(), _by_gid(left, "traffic:ideal").get_color())
    labels = [" ".join(t.get_text().split()) for t in left.get_legend().get_texts()]
    assert "MI300X: tiled, SRAM 64 KiB/CU" in labels  # an AMD device's SRAM is per CU
    assert "ideal (Q, K, V read once, O written once): Θ(T)" in labels
    assert not any("  " in t for t in labels)


def test_sizes_and_intensities_formatted():
    tpu = api.setting("TPU-v5e", "Llama-3-8B", attention="tiled")  # 128 MiB VMEM "per SM"
    ax = plot.plot_roofline(tpu, prompts=(2048,))
    cap = sweeps.attention_intensity_limit(tpu, "tiled")
    assert cap > 1000
    assert _by_gid(ax, "sram:TPU-v5e").get_label() == \
        f"tiled attention's SRAM ceiling: {cap:,.0f} FLOP/byte\n" \
        "(T → ∞, 128 MiB SRAM per TensorCore, no cache)"
    assert any(t.get_text().endswith(f" ≤ {cap:,.0f}") for t in ax.texts)
    assert ax.get_xlim()[1] > cap  # the ceiling is on the axes
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("int8: ") and t.endswith(" TOP/s") for t in texts)
    assert any(t.startswith("ridge ") and t.endswith(" OP/byte") for t in texts)
    plt.close("all")
    fig = plot.attention_figure(tpu)
    left = [" ".join(t.get_text().split()) for t in fig.axes[0].get_legend().get_texts()]
    # one entry for tiled at ¼×, 1× and 4× the device's SRAM, the others told by their dashes;
    # a TPU's SRAM (VMEM) is per TensorCore, it has no SMs
    assert "tiled (FlashAttention), SRAM 128 MiB/TensorCore (TPU-v5e; dotted: 32 MiB, " \
           "dashed: 512 MiB)" in left


def test_user_names_are_plain_text(tmp_path):
    # issue 14: a '$' in a device's (or model's) name is escaped wherever a label shows it, so
    # matplotlib never reads the name as mathtext; the figure shows the name as it is
    from pathlib import Path

    from roofline.plot._common import plain

    assert plain("My$GPU^_$x") == r"My\$GPU^_\$x" and plain("H100-SXM") == "H100-SXM"
    shipped = Path(plot.__file__).parents[2] / "hardware" / "H100-SXM.toml"
    path = tmp_path / "mine.toml"
    path.write_text(shipped.read_text().replace('name = "H100-SXM"', 'name = "My$GPU^_$x"', 1))
    mine = api.setting(str(path), "Llama-3-8B")
    other = api.setting("A100-80GB-SXM", "Llama-3-8B")
    for fig in (plot.roofline_figure([mine, other], prompts=(2048,)),
                plot.time_figure([mine, other]), plot.attention_figure([mine, other]),
                plot.phases_figure([mine], prompts=(2048,))):
        _renderer(fig)  # drawing raised ParseException before
        shown = [t for t in fig.findobj(matplotlib.text.Text) if "GPU^" in t.get_text()]
        assert shown
        for t in shown:
            text, math = t._preprocess_math(t.get_text())
            assert math is False and "My$GPU^_$x" in text
        plt.close(fig)


def test_label_helpers():
    from roofline.plot._common import binary_size, grouped, work_unit
    from roofline.plot.roofline import ceiling_label

    assert binary_size(233_472) == "228 KiB" and binary_size(134_217_728) == "128 MiB"
    assert binary_size(80 * 2**30) == "80 GiB" and binary_size(1536) == "1.5 KiB"
    assert grouped(86_480.4) == "86,480" and grouped(295.33) == "295.3"
    assert work_unit("int8") == "OP" and work_unit("fp8, int8") == "FLOP"
    assert ceiling_label("int8", 393e12) == "int8: 393 TOP/s"
    assert ceiling_label("bf16, fp16", 989.4e12) == "bf16, fp16: 989 TFLOP/s"


def test_window_panel_on_a_device_without_sram():
    # TPU-v4's file gives no SRAM per SM: the window panel's FLOPs were taken in the tiled mode,
    # whose bytes need it (a traceback, for every TPU and Gaudi with Mistral, Gemma-2, Phi-3)
    fig = plot.attention_figure(api.setting("TPU-v4", "Mistral-7B"))
    flops = _xy(_by_gid(fig.axes[2], "window:flops"))
    # the fused modes count the same FLOPs: those drawn equal the tiled mode's on an H100
    h100 = api.setting("H100-SXM", "Mistral-7B")
    assert flops[1] == pytest.approx(sweeps.window_attention(h100, flops[0], "tiled")[0])
    assert flops[1][-1] < 0.1 * _xy(_by_gid(fig.axes[2], "window:flops:global"))[1][-1]
