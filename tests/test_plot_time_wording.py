"""Issue 28 ("Figures a paper can print as they are"), the time figure's table beside it: every
cell of ``FILE.crossovers.csv`` and ``.tex`` holds a value or says why there is none (a TPU v5e
has no cache for attention's K and V to spill from: its cell was blank); the table says where
the figure draws the whole prefill pale, in the figure's words, and a degree below one as
``roofline crossover`` words it ("fits on one"); a curve drawn pale throughout is keyed pale in
the legend (it was keyed in full colour). The numbers are checked against sums done here by
hand from the model's shape and the hardware files, and against the figure's own fit rule."""

from __future__ import annotations

import csv
import math
import warnings
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from roofline import api, evaluate, load_hardware, sweeps  # noqa: E402
from roofline.cli import main  # noqa: E402
from roofline.plot.time import crossover_table, plot_time, time_figure  # noqa: E402

DEVICES = "H100-SXM,TPU-v5e,L4"
# Llama-3-8B in bf16, from its shape (D 4096, L 32, n_kv 8, H 128): 8,030,261,248 parameters of
# 2 bytes, and a KV cache of 2 (K and V) x 8 heads x 128 x 32 layers x 2 bytes a token
WEIGHTS, KV_PER_TOKEN = 8_030_261_248 * 2, 2 * 8 * 128 * 32 * 2
CAPACITY = {"H100-SXM": 80e9, "TPU-v5e": 16 * 2**30, "L4": 24e9}  # the hardware files'
PALE = "pale: does not fit in the device's memory"  # the figure's note, and the table's row


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _tables(tmp_path, capsys, model: str, *more: str) -> tuple[dict, list[str], str]:
    """``roofline plot time`` for the three devices: the CSV beside the figure as {row label:
    row}, its headers, and the LaTeX text."""
    figure = tmp_path / "t.png"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Mixtral's weights exceed every memory: warned
        assert main(["plot", "time", "--hardware", DEVICES, "--model", model, *more,
                     "-o", str(figure)]) == 0
    capsys.readouterr()
    headers, *rows = list(csv.reader((tmp_path / "t.crossovers.csv").open(newline="")))
    return {row[0]: row for row in rows}, headers, (tmp_path / "t.crossovers.tex").read_text()


def _column(headers: list[str], device: str) -> int:
    return next(i for i, h in enumerate(headers) if h.startswith(f"{device} ("))


def test_every_cell_of_the_overlay_says_a_value_or_why_not(tmp_path, capsys):
    # the TPU v5e's file gives no L2 and no L3 (v5e has no CMEM), so no cache stands between
    # its core and HBM for the K and V to outgrow: the catalogue derives no spill, and the
    # cell was left blank; H100's 50 MB and L4's 48 MB L2s are outgrown where the K and V of
    # one key/value head, 2 x 128 x 2 bytes a token, fill them
    table, headers, tex = _tables(tmp_path, capsys, "Llama-3-8B")
    assert all(cell.strip() for row in table.values() for cell in row), table
    spill = table["attention cache spill"]
    tpu = load_hardware("TPU-v5e")
    assert tpu.l2_bytes is None and tpu.l3_bytes is None and tpu.sm_count is not None
    assert spill[_column(headers, "TPU-v5e")] == "– (no L2 or L3 cache in the hardware file)"
    for device in ("H100-SXM", "L4"):
        l2 = load_hardware(device).l2_bytes
        assert float(spill[_column(headers, device)].replace(",", "")) == \
            pytest.approx(l2 / (2 * 128 * 2), abs=0.5), device
    assert "attention cache spill & 97,656 & -- (no L2 or L3 cache in the hardware file) & " \
           "93,750 \\\\" in tex


def test_a_missing_spill_says_which_number_or_schedule_lacks():
    # one device: naive and ideal attention have no re-reads a cache serves (not tiled), and a
    # device file with its L2 but no SM count gives no thread blocks in flight to count
    s = api.setting("H100-SXM", "Llama-3-8B")
    headers, rows = crossover_table(s, 16, 16384)
    spill = next(row for row in rows if row[0] == "attention cache spill")
    cells = dict(zip(headers, spill))
    assert cells["naive"] == cells["ideal"] == "– (not tiled: no re-reads to spill)"
    assert cells["tiled"] == "3,028" and cells["kernel (drawn)"] == "97,656"
    blind = replace(s, hardware=replace(s.hardware, sm_count=None))
    assert blind.hardware.l2_bytes is not None
    assert "attention_cache_spill_tokens.kernel" not in evaluate.crossover_values(blind)
    headers, rows = crossover_table([blind, api.setting("L4", "Llama-3-8B")], 16, 16384)
    spill = next(row for row in rows if row[0] == "attention cache spill")
    assert spill[1:] == ["– (no SM count in the hardware file)", "93,750"]
    naive = api.setting("TPU-v5e", "Llama-3-8B", attention="naive")
    headers, rows = crossover_table([naive, s], 16, 16384)
    spill = next(row for row in rows if row[0] == "attention cache spill")
    assert spill[1:] == ["– (not tiled: no re-reads to spill)", "97,656"]


def _first_not_fitting(s) -> float:
    """The prompt length from which the figure draws the whole prefill pale, by bisection on
    the figure's own rule (:func:`roofline.sweeps.prefill_fits`)."""
    low, high = 1.0, 2.0**30
    assert sweeps.prefill_fits(s, [low])[0] and not sweeps.prefill_fits(s, [high])[0]
    while high - low > 1e-3:
        mid = (low + high) / 2
        low, high = (mid, high) if sweeps.prefill_fits(s, [mid])[0] else (low, mid)
    return high


def test_the_table_says_where_the_figure_is_pale_in_its_words(tmp_path, capsys):
    table, headers, tex = _tables(tmp_path, capsys, "Llama-3-8B")
    fig = time_figure([api.setting(d, "Llama-3-8B") for d in DEVICES.split(",")])
    note = " ".join(next(t for t in fig.findobj() if t.get_gid() == "time-note")
                    .get_text().split())
    assert PALE in note
    pale, kv = table[PALE], table["KV cache exceeds memory"]
    tags = {t.get_gid(): t.get_text() for t in fig.findobj() if str(t.get_gid()).startswith(
        "tag:crossover:")}
    peaks = {}
    for device in DEVICES.split(","):
        s = api.setting(device, "Llama-3-8B")
        kv_alone = (CAPACITY[device] - WEIGHTS) / KV_PER_TOKEN  # 487,820; 8,540; 60,573
        assert kv[_column(headers, device)].endswith(f"{kv_alone:,.0f}")
        # issue 29: pale where the peak with the live activations exceeds the memory (the
        # crossover prefill_exceeds_memory_tokens), before the KV cache alone would
        name = "prefill_exceeds_memory_tokens.kernel"
        peaks[device] = peak = evaluate.crossover_value(s, name).value
        assert _first_not_fitting(s) == pytest.approx(peak, abs=1e-2) and peak < kv_alone
        tag = tags.get(f"tag:crossover:{device}:{name}")
        assert pale[_column(headers, device)] == "from " + (f"[{tag}] " if tag else "") \
            + f"{peak:,.0f}", device
    assert pale[_column(headers, "TPU-v5e")].startswith("from [")  # on the axis: tagged
    assert f"{PALE} & from {peaks['H100-SXM']:,.0f} & from [" in tex
    # one device, naive attention: its live activations hold the scores (the figure's rule)
    naive = api.setting("H100-SXM", "Llama-3-8B", attention="naive")
    headers, rows = crossover_table(naive, 16, 16384)
    cells = dict(zip(headers, next(row for row in rows if row[0] == PALE)))
    first = _first_not_fitting(naive)
    assert cells["naive (drawn)"] == f"from {first:,.0f}"
    assert first < 30_600  # where one layer's scores beside weights and KV cache fill 80 GB
    assert cells["kernel"] == f"from {peaks['H100-SXM']:,.0f}"


def test_weights_that_fit_only_when_split_are_said_so_in_the_table(tmp_path, capsys):
    # Mixtral's 93.4 GB of weights: pale throughout on every device, and one device's share
    # fits from 1.2 H100s; Llama-3-8B's weights and KV cache (8,192 tokens) fit on one H100,
    # at a degree of 0.2, which the table said as a device count alone
    table, headers, tex = _tables(tmp_path, capsys, "Mixtral-8x7B")
    assert table[PALE][1:] == ["at every T: weights alone exceed memory"] * 3
    assert f"{PALE} & at every T: weights alone exceed memory &" in tex
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mixtral = [api.setting(d, "Mixtral-8x7B") for d in DEVICES.split(",")]
    for s in mixtral:
        assert not sweeps.prefill_fits(s, [16])[0]  # pale from the first point
    # 46,702,792,704 parameters of 2 bytes and the KV cache of its 32,768-token context
    share = (46_702_792_704 * 2 + KV_PER_TOKEN * 32_768) / 80e9
    assert table["tp fits memory degree"][_column(headers, "H100-SXM")] == \
        f"{share:.1f} devices" == "1.2 devices"
    table, headers, tex = _tables(tmp_path, capsys, "Llama-3-8B")
    share = (WEIGHTS + KV_PER_TOKEN * 8192) / 80e9
    cell = table["tp fits memory degree"][_column(headers, "H100-SXM")]
    assert cell == f"{share:.1f} devices (fits on one)" == "0.2 devices (fits on one)"
    # the words of `roofline crossover` for the same setting
    s = api.setting("H100-SXM", "Llama-3-8B")
    rows = {row[0]: row[1] for row in
            api.CrossoverTable(s, evaluate.crossover_values(s)).rows()[1]}
    assert rows["tp_fits_memory_degree"] == cell
    assert "tp fits memory degree & 0.2 devices (fits on one) &" in tex


def test_pale_only_where_the_activations_outgrow_a_bounded_kv_cache():
    # Mistral-7B's rolling window (4,096 tokens a layer) keeps its KV cache within an L4's
    # 24 GB at any prompt; its live activations still grow with T, so the prefill stops
    # fitting only where they fill what the weights and the window's cache leave: beyond a
    # 65,536-token axis nothing is pale, and the table says from where
    s = api.setting("L4", "Mistral-7B")
    peak = evaluate.crossover_value(s, "prefill_exceeds_memory_tokens.kernel").value
    assert peak > 65536 and evaluate.crossover_value(
        s, "kv_cache_exceeds_memory_tokens").exists is False
    assert list(sweeps.prefill_fits(s, [math.floor(peak), math.ceil(peak)])) == [True, False]
    ax = plot_time(s, max_prompt=65536)
    assert not [a for a in ax.get_lines() if ":no-fit:" in str(a.get_gid())]
    headers, rows = crossover_table(s, 16, 65536)
    assert next(row for row in rows if row[0] == PALE)[1] == f"from {peak:,.0f}"


def _keys(ax) -> dict[str, matplotlib.lines.Line2D]:
    legend = ax.get_legend()
    return {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}


def _line(ax, gid: str):
    found = [a for a in ax.get_lines() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def _drawn(line) -> bool:
    return bool(np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any())


@pytest.mark.parametrize("size", ["column", "page"])
def test_a_curve_pale_throughout_is_keyed_pale(size):
    # Mixtral on the three devices: every curve pale (alpha 0.4, thinner), the legend in full
    # colour; each key now as its curve is drawn: its colour, alpha, width and marker
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = [api.setting(d, "Mixtral-8x7B") for d in DEVICES.split(",")]
    ax = time_figure(group, size=size).axes[0]
    keys = _keys(ax)
    for device in DEVICES.split(","):
        curve = f"time:{device}:total"
        assert not any(_drawn(_line(ax, f"{curve}:fits:{b}")) for b in ("compute", "memory"))
        pale, full = _line(ax, f"{curve}:no-fit:compute"), _line(ax, f"{curve}:fits:compute")
        assert _drawn(pale) and pale.get_alpha() == 0.4
        key = keys[device]
        assert key.get_alpha() == pale.get_alpha()
        assert key.get_linewidth() == pytest.approx(pale.get_linewidth())
        assert key.get_linewidth() < full.get_linewidth()
        assert key.get_color() == pale.get_color() and key.get_marker() == pale.get_marker()
        assert key.get_linestyle() == "-"
    # Llama-3-8B: the TPU's curve is pale only past 8,540 tokens; its key stays in full, as
    # the most of the curve is drawn, and so are the others'
    group = [api.setting(d, "Llama-3-8B") for d in DEVICES.split(",")]
    ax = time_figure(group, size=size).axes[0]
    keys = _keys(ax)
    assert _drawn(_line(ax, "time:TPU-v5e:total:no-fit:compute"))
    for device in DEVICES.split(","):
        full = _line(ax, f"time:{device}:total:fits:compute")
        assert keys[device].get_alpha() in (None, 1)
        assert keys[device].get_linewidth() == pytest.approx(full.get_linewidth())


def test_one_device_keys_its_pale_curves_pale():
    # Mixtral on an H100 with naive attention: the whole prefill and naive attention pale
    # throughout, keyed pale; the other operation classes pale with it, keyed so
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = api.setting("H100-SXM", "Mixtral-8x7B", attention="naive")
    ax = plot_time(s, max_prompt=65536)
    keys = _keys(ax)
    for label, kind in (("whole prefill", "total"), ("attention", "attention")):
        pale = _line(ax, f"time:H100-SXM:{kind}:no-fit:compute")
        assert keys[label].get_alpha() == pale.get_alpha() == 0.4
        assert keys[label].get_linewidth() == pytest.approx(pale.get_linewidth())
    # the other classes pale with the prefill too (review), keyed as drawn
    projection = _line(ax, "time:H100-SXM:projection:no-fit:compute")
    assert keys["projections"].get_alpha() == projection.get_alpha() == 0.4
    assert keys["projections"].get_linewidth() == projection.get_linewidth()
