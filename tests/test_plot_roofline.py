"""The roofline figure under tensor parallelism (the link as a ceiling of its own, the whole
prefill at its link intensity, the time the collectives add), held against ``roofline prefill
--json`` and against the ring all-reduce's bytes worked out by hand from the device file; and
its labels: none crossed by a line drawn, each compute ceiling's with its value and its data
types (issue "figures a paper can print")."""

from __future__ import annotations

import json
import sys
import tomllib
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))  # the labels' geometry lives beside the tests
from label_crossings import crossed  # noqa: E402

from roofline import plot  # noqa: E402
from roofline.api import setting  # noqa: E402
from roofline.cli import main  # noqa: E402
from roofline.plot.ceilings import ceilings  # noqa: E402

HARDWARE = Path(__file__).resolve().parents[1] / "hardware" / "H100-SXM.toml"
PROMPTS = (128, 2048, 8192)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _by_gid(ax, gid: str):
    found = [a for a in ax.findobj() if a.get_gid() == gid]
    assert len(found) == 1, (gid, len(found))
    return found[0]


def _xy(line) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def _link() -> tuple[float, float]:
    """β (bytes/s each way) and α (s per message) of H100-SXM's interconnect, read from its
    file: 900 GB/s over both directions, 0.47 µs."""
    link = tomllib.loads(HARDWARE.read_text())["interconnect"]
    value, unit = link["bandwidth"]["value"].split()
    assert unit == "GB/s"
    alpha, unit = link["latency"]["value"].split()
    assert unit == "us"
    return float(value) * 1e9 / link["directions"]["value"], float(alpha) * 1e-6


def test_tensor_parallel_link_and_collectives_agree_with_the_prefill(capsys):
    """Llama-3-8B over four H100s: each of the 65 all-reduces (two per layer, the embedding's)
    sends 2·3/4 of the T·4096·2 bytes of its activations in 6 ring steps of α, and the logits'
    all-gather (the last token's 128,256 bf16 values) 3/4 of them in 3 steps: that many bytes
    at β is the collectives' time in ``roofline prefill --json``; the link's ceiling is β·I,
    the whole prefill sits at FLOPs / link bytes, at its attained FLOP/s, under it; its bar
    reaches FLOPs / (time − the collectives' time)."""
    assert main(["prefill", "--model", "Llama-3-8B", "--tp", "4", "--hardware", "H100-SXM",
                  "--prompt", ",".join(map(str, PROMPTS)), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    beta, alpha = _link()
    assert beta == pytest.approx(450e9)
    fig = plot.roofline_figure(setting("H100-SXM", "Llama-3-8B", tp=4), prompts=PROMPTS,
                               batches=(1,), context=8192)
    ax = fig.axes[0]
    x, y = _xy(_by_gid(ax, "ceiling-link:H100-SXM:NVLink4"))
    assert y / x == pytest.approx([beta, beta])
    assert y[-1] == pytest.approx(989.4e12)  # up to the bf16 roof
    for result in cli["results"]:
        t = result["prompt_tokens"]
        comm = [o for o in result["operations"] if o["kind"] == "communication"]
        sent = sum(dict(o["levels"])["link"] for o in comm)
        by_hand = 65 * (1.5 * t * 4096 * 2 + 6 * alpha * beta) \
            + (0.75 * 128_256 * 2 + 3 * alpha * beta)
        assert sent == pytest.approx(by_hand, rel=1e-9)
        comm_s = sum(o["time_s"] for o in comm)
        assert comm_s == pytest.approx(sent / beta, rel=1e-9)  # not overlapped: all of it
        flops, time_s = result["flops"], result["time_s"]
        px, py = _xy(_by_gid(ax, f"point:H100-SXM:prefill:{t}:NVLink4"))
        assert px[0] == pytest.approx(flops / sent) and py[0] == pytest.approx(flops / time_s)
        assert py[0] < beta * px[0]  # under the link's ceiling
        bx, by = _xy(_by_gid(ax, f"collectives:H100-SXM:prefill:{t}"))
        assert bx == pytest.approx([result["intensity"]] * 2)
        assert by == pytest.approx([flops / time_s, flops / (time_s - comm_s)])
    decode = cli["decode"]  # batch 1 at 8,192 cached tokens, its all-reduces not overlapped
    _, by = _xy(_by_gid(ax, "collectives:H100-SXM:decode:decode step, batch 1"))
    assert by[1] == pytest.approx(decode["flops"] / (decode["time_s"] - decode["communication_s"]))
    note = _by_gid(ax, "note").get_text().replace("\n", " ")
    assert "whole prefill at its NVLink4 intensity" in note
    assert "without its collectives" in note
    assert "NVLink4: 450 GB/s" in {t.get_text() for t in ax.texts}


def test_one_device_draws_no_link():
    fig = plot.roofline_figure(setting("H100-SXM", "Llama-3-8B"), prompts=(2048,))
    gids = [str(a.get_gid()) for a in fig.axes[0].findobj()]
    assert not [g for g in gids if g.startswith(("ceiling-link:", "collectives:", "link-join:"))]
    assert "collectives" not in _by_gid(fig.axes[0], "note").get_text()


def test_several_devices_draw_each_prefill_s_collectives_and_link():
    """Several devices: the bars and each device's link ceiling, in that device's colour
    (tests/test_plot_roofline_links.py checks the ceilings' values)."""
    fig = plot.roofline_figure([setting(h, "Llama-3-8B", tp=4) for h in ("H100-SXM", "MI300X")],
                               prompts=(2048,))
    ax = fig.axes[0]
    for name in ("H100-SXM", "MI300X"):
        color = _by_gid(ax, f"memory:{name}").get_color()
        bar = _by_gid(ax, f"collectives:{name}:prefill:2048")
        assert bar.get_color() == color
        links = [a for a in ax.get_lines()
                 if str(a.get_gid()).startswith(f"ceiling-link:{name}:")]
        assert len(links) == 1 and links[0].get_color() == color


@pytest.mark.parametrize("model, devices, tp, size", [
    ("Llama-3-8B", ["H100-SXM", "MI300X", "TPU-v5e"], 1, "column"),
    ("Mixtral-8x7B", ["H100-SXM", "MI300X", "TPU-v5e"], 1, "page"),
    ("Llama-3-8B", ["H100-SXM"], 4, "column"),
])
def test_no_ceiling_label_is_crossed_and_each_keeps_value_and_type(model, devices, tp, size):
    """Issue "figures a paper can print": at a column's width three devices' compute ceilings
    crowd within two decades of FLOP/s; each label keeps its data types and its peak (in a
    column the peak with the y axis's prefix: 'bf16, fp16: 1.31P'), and no line drawn runs
    through it (where none beside its line is clear, it goes where its line begins, else it
    is a callout with a leader to its line)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Mixtral's weights past H100's and TPU-v5e's memory
        group = [setting(h, model, tp=tp) for h in devices]
        fig = plot.figure("roofline", group, prompts=list(PROMPTS), batches=[1, 64], size=size)
    assert crossed(fig) == []
    labels = [t.get_text() for t in fig.axes[0].texts
              if str(t.get_gid()).startswith("ceiling-label:")]
    assert len(labels) == sum(len(ceilings(s)) for s in group)
    for s in group:
        for names, peak, _ in ceilings(s):
            assert any(text.startswith(f"{names.split(', ')[0]}") and ":" in text
                       and any(f"{peak / scale:.3g}" in text for scale in (1e12, 1e15))
                       for text in labels), (names, peak, labels)


THREE = ["H100-SXM", "A100-80GB-SXM", "L4"]
CROWDED = [  # nine or ten compute ceilings within two decades; a sliding window under TP
    ("Llama-3-8B", THREE, 1), ("Mixtral-8x7B", THREE, 1), ("DeepSeek-V2-Lite", THREE, 1),
    ("Mistral-7B", ["H100-SXM"], 4),
]


def _crowded(model, devices, tp, size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Mixtral's and DeepSeek's weights past L4's memory
        group = [setting(h, model, tp=tp) for h in devices]
        return group, plot.figure("roofline", group, prompts=list(PROMPTS), batches=[1, 64],
                                  size=size)


@pytest.mark.parametrize("size", ["column", "page"])
@pytest.mark.parametrize("model, devices, tp", CROWDED)
def test_every_label_clear_of_lines_markers_and_text(model, devices, tp, size):
    """Issue "figures a paper can print", after layout, from the drawn artists: no label on the
    axes (a ceiling's, a ridge's, a limit's, a decode batch's) that a line or a leader runs
    through ("ridge 20" crossed the L2 and SRAM ceilings, "B = 64" another device's SRAM
    limit, "tiled ≤ 108" five lines), nor over a marker ("ridge 295" under the prefill's
    markers and bars at --tp 4), nor any text over another; every leader short (a compute
    ceiling's label was a callout 33 points from its line); the x axis drawn as far as the
    data and no further (it ran 2.5 decades past them, to 2·10⁶, to make room for labels); each
    compute ceiling labelled with its data types and peak; and what a label left out would
    have said in the note under the axes: a ridge's intensity, the batches, a limit's value."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from label_crossings import collisions, covered

    group, fig = _crowded(model, devices, tp, size)
    assert crossed(fig, every=True) == []
    assert covered(fig) == []
    assert collisions(fig) == []
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    for t in ax.texts:
        if t.arrow_patch is not None:
            path = t.arrow_patch.get_path().vertices
            assert np.hypot(*(path[-1] - path[0])) * 72 / fig.dpi <= 20, t.get_text()
    data = [line.get_xdata()[0] for line in ax.get_lines()
            if str(line.get_gid()).startswith(("point:", "ridge:", "sram:"))]
    bounds = ax.spines["bottom"].get_bounds() or ax.get_xlim()
    assert bounds[1] <= 2 * max(data) * (1 + 1e-9)
    drawn = [x for x in ax.xaxis.get_ticklocs() if x <= ax.get_xlim()[1]]  # in view
    assert max(drawn) <= bounds[1] * (1 + 1e-9)
    labels = {str(t.get_gid()).split(":", 1)[0]: [] for t in ax.texts}
    for t in ax.texts:
        labels[str(t.get_gid()).split(":", 1)[0]].append(t.get_text())
    note = ax.findobj(lambda a: a.get_gid() == "note")[0].get_text().replace("\n", " ")
    for s in group:
        for names, peak, ridge in ceilings(s):
            assert any(text.startswith(names.split(", ")[0]) and ":" in text
                       and any(f"{peak / scale:.3g}" in text for scale in (1e12, 1e15))
                       for text in labels["ceiling-label"])
            if len(group) == 1 and not any(text.startswith(f"ridge {ridge:,.0f}")
                                           for text in labels.get("ridge-label", [])):
                assert f"{ridge:,.0f} FLOP/byte ({names})" in note
        cap = ax.findobj(lambda a: a.get_gid() == f"sram:{s.hardware.name}")[0].get_xdata()[0]
        if not any(text.endswith(f"≤ {cap:,.0f}") for text in labels.get("limit-label", [])):
            assert f"{cap:,.0f} FLOP/byte" in note
    if sorted(labels.get("batch-label", [])) != ["B = 1", "B = 64"]:
        assert "batch B = 1, 64 (stars, left to right)" in note


def test_crowded_labels_same_bytes(tmp_path):
    """The labels at the compute ceilings' ends, a limit's value said in the note: the SVG
    byte for byte the same twice."""
    a = plot.save(_crowded("Llama-3-8B", THREE, 1, "column")[1], tmp_path / "a.svg")
    b = plot.save(_crowded("Llama-3-8B", THREE, 1, "column")[1], tmp_path / "b.svg")
    assert a.read_bytes() == b.read_bytes()
