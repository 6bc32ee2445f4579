"""The roofline of several devices under tensor parallelism (issue "figures a paper can print",
item 7: a link ceiling under parallelism): each device's link as a ceiling of its own,
β_link·I against FLOP per byte sent over it, in the device's colour and dash pattern; the
whole prefill of each device once more at its link intensity (a thin diamond), held against
``roofline prefill --json``; the note saying what they are; no label crossed, over a marker
or over other text, at a column's and a page's width; the same SVG bytes twice."""

from __future__ import annotations

import json
import sys
import tomllib
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))  # the labels' geometry lives beside the tests
from label_crossings import problems  # noqa: E402
from test_plot_roofline import _by_gid, _xy  # noqa: E402

from roofline import plot  # noqa: E402
from roofline.api import setting  # noqa: E402
from roofline.cli import main  # noqa: E402

HARDWARE = Path(__file__).resolve().parents[1] / "hardware"
THREE = ("H100-SXM", "A100-80GB-SXM", "L4")
LINKS = {"H100-SXM": "NVLink4", "A100-80GB-SXM": "NVLink3", "L4": "PCIe"}
PROMPTS = (128, 2048, 8192)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _beta(name: str) -> float:
    """Bytes/s each way of a device's interconnect, read from its file (900 GB/s, 600 GB/s,
    64 GB/s over both directions)."""
    link = tomllib.loads((HARDWARE / f"{name}.toml").read_text())["interconnect"]
    value, unit = link["bandwidth"]["value"].split()
    assert unit == "GB/s"
    return float(value) * 1e9 / link["directions"]["value"]


def _figure(size: str, model: str = "Mistral-7B"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plot.figure("roofline", [setting(h, model, tp=4) for h in THREE],
                           prompts=list(PROMPTS), batches=[1, 64], size=size)


@pytest.mark.parametrize("size", ["column", "page"])
def test_each_device_s_link_ceiling_and_diamonds(size, capsys):
    fig = _figure(size)
    ax = fig.axes[0]
    links = [line for line in ax.get_lines() if str(line.get_gid()).startswith("ceiling-link:")]
    assert sorted(str(line.get_gid()) for line in links) == sorted(
        f"ceiling-link:{h}:{name}" for h, name in LINKS.items())
    for h, name in LINKS.items():
        beta = _beta(h)
        line = _by_gid(ax, f"ceiling-link:{h}:{name}")
        x, y = _xy(line)
        assert y / x == pytest.approx([beta, beta])
        memory = _by_gid(ax, f"memory:{h}")  # in the device's colour and dash pattern, thinner
        assert line.get_color() == memory.get_color()
        assert line._unscaled_dash_pattern == memory._unscaled_dash_pattern
        assert line.get_linewidth() < memory.get_linewidth()
        assert main(["prefill", "--model", "Mistral-7B", "--tp", "4", "--hardware", h,
                     "--prompt", ",".join(map(str, PROMPTS)), "--json"]) == 0
        cli = json.loads(capsys.readouterr().out)
        for result in cli["results"]:
            t = result["prompt_tokens"]
            sent = sum(dict(o["levels"])["link"] for o in result["operations"]
                       if o["kind"] == "communication")
            px, py = _xy(_by_gid(ax, f"point:{h}:prefill:{t}:{name}"))
            assert px[0] == pytest.approx(result["flops"] / sent)
            assert py[0] == pytest.approx(result["flops"] / result["time_s"])
            assert py[0] < beta * px[0] * (1 + 1e-9)  # under its link's ceiling
            assert px[0] <= ax.spines["bottom"].get_bounds()[1]  # in view
    note = _by_gid(ax, "note").get_text().replace("\n", " ")
    assert "its link's ceiling" in note
    assert "whole prefill at its link intensity" in note
    assert "without its collectives" in note
    if size == "column":  # the labels name the links alone: the note gives their bandwidths
        assert "H100-SXM NVLink4 450 GB/s" in note and "L4 PCIe 32 GB/s" in note
    assert problems(fig) == {"crossed": [], "covered": [], "collisions": []}


def test_several_devices_links_same_bytes(tmp_path):
    a = plot.save(_figure("column"), tmp_path / "a.svg")
    b = plot.save(_figure("column"), tmp_path / "b.svg")
    assert a.read_bytes() == b.read_bytes()
