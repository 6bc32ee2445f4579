"""Issue 28 review of the time figure: under parallelism three overlaid devices draw each
device's collectives' time (as ``prefill`` sums its communication operations) and the note says
the totals include it; the note names no local file; where the prefill does not fit, every
curve of the device is pale over the same stretch, not only the whole prefill."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from roofline import api
from roofline.cli import main
from roofline.plot.time import plot_time, time_figure

DEVICES = ("H100-SXM", "A100-80GB-SXM", "L4")


def _note(ax) -> str:
    note, = [t for t in ax.texts if t.get_gid() == "time-note"]
    return " ".join(note.get_text().split())


def test_three_devices_draw_each_devices_communication(tmp_path, capsys):
    data = tmp_path / "t3.json"
    argv = ["plot", "time", "--hardware", ",".join(DEVICES), "--model", "Mistral-7B",
            "--tp", "4", "--size", "column", "-o", str(tmp_path / "t3.png"),
            "--data", str(data)]
    assert main(argv) == 0
    capsys.readouterr()
    series = {s["id"]: s for s in json.loads(data.read_text())["series"]}
    prompts = [128, 2048, 16384]
    for device in DEVICES:
        comm = series[f"time:{device}:communication"]  # drawn, and written to --data
        points = {x: y for x, y in zip(comm["x"], comm["y"]) if y is not None}
        assert main(["prefill", "--hardware", device, "--model", "Mistral-7B", "--tp", "4",
                     "--prompt", ",".join(map(str, prompts)), "--json"]) == 0
        results = json.loads(capsys.readouterr().out)["results"]
        for t, result in zip(prompts, results):
            assert result["prompt_tokens"] == t
            want = sum(o["time_s"] for o in result["operations"]
                       if o["kind"] == "communication")
            assert want > 0 and points[float(t)] == pytest.approx(want, rel=1e-9), (device, t)


def test_three_devices_communication_style_and_note():
    group = [api.setting(d, "Mistral-7B", tp=4) for d in DEVICES]
    for size in ("column", "page"):
        ax = time_figure(group, size=size).axes[0]
        lines = {str(line.get_gid()): line for line in ax.get_lines()}
        for i, device in enumerate(DEVICES):
            comm = lines[f"time:{device}:communication"]
            total = lines[f"time:{device}:total:fits:compute"]
            assert comm.get_linestyle() == "-."
            assert comm.get_color() == total.get_color()
            assert comm.get_marker() == total.get_marker()  # the device's own cue
        note = _note(ax)
        assert "dash-dot" in note and "included in the whole prefill" in note
        assert len(ax.get_legend().get_texts()) == 3  # the devices, said once
    one = plot_time(api.setting("H100-SXM", "Mistral-7B", tp=4))
    assert "included in the whole prefill" in _note(one)


def test_the_note_names_no_file(tmp_path, capsys):
    out = tmp_path / "f07_time_col_mistral_h100_tp4.svg"
    assert main(["plot", "time", "--hardware", "H100-SXM", "--model", "Mistral-7B", "--tp", "4",
                 "--size", "column", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    name = f"{out.stem}.crossovers.csv"  # what the CLI passes as the table (as cli/plot.py)
    for size in ("column", "page"):
        fig = time_figure(api.setting("H100-SXM", "Mistral-7B", tp=4), size=size, table=name)
        note = _note(fig.axes[0])
        assert "crossovers.csv" not in note and "f07_time" not in note
        assert "[n]: crossover n (values in the table beside the figure)" in note
    for ext in (".csv", ".tex"):  # still written, and the user told where
        path = out.with_name(f"{out.stem}.crossovers{ext}")
        assert path.is_file() and f"wrote {path}" in printed


def test_every_curve_pale_where_the_prefill_does_not_fit():
    s = api.setting("L4", "Llama-3-8B")
    ax = plot_time(s, max_prompt=131072)
    lines = {str(line.get_gid()): line for line in ax.get_lines()}

    def drawn(gid):
        line = lines.get(gid)
        return np.zeros(0, bool) if line is None else \
            np.isfinite(np.asarray(line.get_ydata(), dtype=float))

    total_full = drawn("time:L4:total:fits:compute") | drawn("time:L4:total:fits:memory")
    total_pale = drawn("time:L4:total:no-fit:compute") | drawn("time:L4:total:no-fit:memory")
    assert total_pale.any() and not total_full.all()
    for kind in ("projection", "attention", "elementwise", "embedding", "lm_head"):
        full = drawn(f"time:L4:{kind}:compute") | drawn(f"time:L4:{kind}:memory")
        pale = drawn(f"time:L4:{kind}:no-fit:compute") | drawn(f"time:L4:{kind}:no-fit:memory")
        assert np.array_equal(full, total_full), kind  # full colour over the same stretch
        assert np.array_equal(pale, total_pale), kind  # pale over the same stretch
        for bound in ("compute", "memory"):
            p = lines[f"time:L4:{kind}:no-fit:{bound}"]
            f = lines[f"time:L4:{kind}:{bound}"]
            assert p.get_alpha() == 0.4 and p.get_linewidth() < f.get_linewidth()
            assert p.get_color() == f.get_color() and p.get_linestyle() == f.get_linestyle()
    # a device that fits nowhere keys its operation classes pale too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mixtral = api.setting("H100-SXM", "Mixtral-8x7B")
    ax = plot_time(mixtral, max_prompt=4096)
    legend = ax.get_legend()
    keys = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert keys["projections"].get_alpha() == 0.4
