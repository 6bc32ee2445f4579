"""Issue 28, "Figures a paper can print as they are", for the attention and phases figures:

- ``--max-prompt`` (the longest prompt drawn) on ``plot attention`` and ``plot phases`` as on
  ``plot time``: the same validation and messages, the prompt axis ending there, and the series
  of ``--data`` with it;
- the on-chip SRAM named per what it serves, as the hardware file says (``kind``, ``vendor``):
  per SM on an NVIDIA GPU, per CU on an AMD one, per TensorCore on a TPU (TPU-v5e's legend
  said "128 MiB/SM");
- four devices, or a windowed model on three, at a column's width: at most 8.5 in tall (they
  were 8.5 to 9.4 in), no text under 7 pt or over another, none past the figure's edge, no
  legend of more than seven entries (the checks of tests/test_plot_print.py, its helpers).
"""

import csv
import functools
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))  # the print checks' helpers live beside us
from test_cli_plot import _commands, _run  # noqa: E402
from test_plot_print import TALLEST, print_problems  # noqa: E402

import roofline.cli as cli  # noqa: E402
from roofline import plot, sweeps  # noqa: E402
from roofline.api import setting  # noqa: E402
from roofline.errors import InputError  # noqa: E402

pytestmark = pytest.mark.usefixtures(_commands.__name__)  # the plot command registered

BASE = ["--hardware", "H100-SXM", "--model", "Llama-3-8B"]
SHIPPED = Path(plot.__file__).parents[2] / "hardware"


def _series(path: Path) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]:
    """(panel, id) → (x, y) of each series of a ``--data`` CSV drawn in data coordinates."""
    rows = csv.DictReader(line for line in path.read_text().splitlines()
                          if not line.startswith("#"))
    out: dict[tuple[int, str], tuple[list, list]] = {}
    for row in rows:
        if row["coordinates"] != "data" or not row["x"] or not row["y"]:
            continue
        xs, ys = out.setdefault((int(row["panel"]), row["id"]), ([], []))
        xs.append(float(row["x"]))
        ys.append(float(row["y"]))
    return {key: (np.array(x), np.array(y)) for key, (x, y) in out.items()}


# --- --max-prompt ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind, panels", [("attention", (0, 1, 2)), ("phases", (0,))])
def test_max_prompt_ends_the_axis_and_the_data(capsys, tmp_path, kind, panels):
    """``--max-prompt 4096``: every prompt-length panel's axis and every series on it (the
    windowed model's attention figure has three) end at 4,096 tokens, in the figure and in the
    data file; the series are the sweeps' values at the points drawn."""
    figure, data = tmp_path / f"{kind}.svg", tmp_path / f"{kind}.csv"
    status, out, err = _run(capsys, "plot", kind, "--hardware", "H100-SXM", "--model",
                            "Mistral-7B", "--max-prompt", "4096", "--size", "column", "-o",
                            str(figure), "--data", str(data))
    assert (status, err) == (0, "") and figure.exists()
    series = _series(data)
    on = {key: xy for key, xy in series.items() if key[0] in panels}
    assert {panel for panel, _ in on} == set(panels)
    curves = {key: (x, y) for key, (x, y) in on.items() if len(x) > 10}  # not the markers
    assert curves and all(x.max() == 4096 for x, _ in curves.values())
    assert all(x.max() <= 4096 for x, _ in on.values())  # no marker past the axis either
    s = setting("H100-SXM", "Mistral-7B")
    if kind == "attention":
        x, y = series[(0, "traffic:naive")]
        assert x[0] == 64 and y == pytest.approx(sweeps.attention_bytes(s, x, "naive"))
    else:
        x, y = series[(0, "prefill:H100-SXM")]
        assert x[0] == 16 and y == pytest.approx(sweeps.intensity(s, x))
        # the prompts marked: 128 and 2,048 of the default 128,2048,8192 (8,192 is past it)
        assert list(series[(0, "prompts:H100-SXM")][0]) == [128, 2048]


@pytest.mark.parametrize("kind", ["attention", "phases"])
def test_max_prompt_through_the_api(kind):
    s = setting("H100-SXM", "Llama-3-8B")
    draw = plot.attention_figure if kind == "attention" else plot.phases_figure
    fig = draw(s, max_prompt=100_000)
    assert fig.axes[0].get_xlim()[1] == pytest.approx(100_000)
    if kind == "attention":
        assert fig.axes[1].get_xlim()[1] == pytest.approx(100_000)
    # a short axis is labelled: 16 to 100 tokens has no two decades to tick
    fig = draw(s, max_prompt=100)
    low, high = fig.axes[0].get_xlim()
    ticks = [t for t in fig.axes[0].get_xticks() if low <= t <= high]
    assert (low, high) == pytest.approx((16, 100)) and len(ticks) >= 2
    for bad in (16, 0, -3):  # as the time figure refuses them
        with pytest.raises(InputError, match="^max_prompt: must be more than 16 tokens"):
            draw(s, max_prompt=bad)
    with pytest.raises(InputError, match="^max_prompt: must be more than 16 tokens"):
        plot.time_figure(s, max_prompt=16)


@pytest.mark.parametrize("value", ["16", "0", "-5", "abc", "1.5", "", "4096,8192",
                                   "99999999999999999999"])
@pytest.mark.parametrize("kind", ["attention", "phases"])
def test_bad_max_prompt_is_one_line_as_for_time(capsys, tmp_path, monkeypatch, kind, value):
    """A bad ``--max-prompt``: exit status 2, one line, the time figure's very words, no file."""
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, "plot", kind, *BASE, "--max-prompt", value, "-o", "x.png",
                            "--data", "x.csv")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("roofline: error: --max-prompt: ") and "Traceback" not in err
    same = _run(capsys, "plot", "time", *BASE, "--max-prompt", value, "-o", "x.png")
    assert same == (status, out, err)
    assert list(tmp_path.iterdir()) == []


def test_max_prompt_is_in_the_help(capsys):
    for kind in ("attention", "phases", "time"):
        with pytest.raises(SystemExit):
            cli.main(["plot", kind, "--help"])
        assert "--max-prompt N" in capsys.readouterr().out


# --- the on-chip SRAM, per what it serves --------------------------------------------------------
def _labels(fig) -> list[str]:
    return [" ".join(t.get_text().split()) for t in fig.axes[0].get_legend().get_texts()]


@pytest.mark.parametrize("device, unit", [("H100-SXM", "228 KiB/SM"), ("MI300X", "64 KiB/CU"),
                                          ("TPU-v5e", "128 MiB/TensorCore")])
def test_the_sram_is_named_per_what_it_serves(device, unit):
    fig = plot.attention_figure(setting(device, "Llama-3-8B", attention="tiled"), size="column")
    assert any(t.startswith(f"tiled (FlashAttention), SRAM {unit} ({device}")
               for t in _labels(fig))


def test_the_sram_unit_comes_from_the_file_not_the_name(tmp_path):
    """The wording follows the file's ``kind`` and ``vendor``: a TPU file under another name
    still says TensorCore; an NVIDIA file turned AMD says CU; several devices, each its own."""
    tpu = (SHIPPED / "TPU-v5e.toml").read_text().replace('name = "TPU-v5e"',
                                                           'name = "MyChip"', 1)
    (tmp_path / "mine.toml").write_text(tpu)
    amd = (SHIPPED / "H100-SXM.toml").read_text().replace('name = "H100-SXM"',
                                                            'name = "Other"', 1)
    (tmp_path / "other.toml").write_text(amd.replace('vendor = "NVIDIA"', 'vendor = "AMD"', 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weights past TPU-v5e's 16 GiB: drawn all the same
        group = [setting(str(tmp_path / name), "Llama-3-8B") for name in ("mine.toml",
                                                                         "other.toml")]
        group.append(setting("H100-SXM", "Llama-3-8B"))
        labels = _labels(plot.attention_figure(group, size="page"))
    assert "MyChip: tiled, SRAM 128 MiB/TensorCore" in labels
    assert "Other: tiled, SRAM 228 KiB/CU" in labels
    assert "H100-SXM: tiled, SRAM 228 KiB/SM" in labels
    assert [t for t in labels if "/SM" in t] == ["H100-SXM: tiled, SRAM 228 KiB/SM"]


# --- heights and print checks at a column's width ---------------------------------------------
FOUR = ["H100-SXM", "A100-80GB-SXM", "L4", "TPU-v5e"]
THREE = FOUR[:3]
CASES = {  # name: (model, devices); heights before at a column: attention, phases
    "dense-4": ("Llama-3-8B", FOUR),  # 8.33 in (8 legend entries), 8.48 in (8 entries)
    "window-3": ("Mistral-7B", THREE),  # 9.11 in
    "gemma2-3": ("Gemma-2-9B", THREE),  # 9.39 in, its title past the figure's edge
    "window-4": ("Mistral-7B", FOUR),  # 9.39 in
    "latent-4": ("DeepSeek-V2-Lite", FOUR),  # phases 9.06 in (two legends of 8 entries)
}


@functools.lru_cache(maxsize=None)
def _figure(kind, case, size):
    """The figure, built once for the checks that only look at it."""
    model, devices = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weights past a device's memory: drawn all the same
        group = [setting(h, model) for h in devices]
        if kind == "attention":
            return plot.attention_figure(group, size=size)
        return plot.phases_figure(group, prompts=[128, 2048, 8192], batches=[1, 64], size=size)


def _problems(fig, size) -> list[str]:
    """What tests/test_plot_print.py checks of a figure (:func:`print_problems`), and its
    height."""
    height = fig.get_size_inches()[1]
    return print_problems(fig, size) + ([f"{height:.2f} in tall at a {size}'s width"]
                                        if height > TALLEST[size] else [])


@pytest.mark.parametrize("kind", ["attention", "phases"])
@pytest.mark.parametrize("case", list(CASES))
def test_many_devices_fit_a_column(kind, case):
    assert _problems(_figure(kind, case, "column"), "column") == []


@pytest.mark.parametrize("kind", ["attention", "phases"])
@pytest.mark.parametrize("case", ["dense-4", "window-4"])
def test_many_devices_at_a_page(kind, case):
    assert _problems(_figure(kind, case, "page"), "page") == []


def test_several_devices_give_each_ridge_once():
    """The phases figure of several devices: the prefill panel's legend gives each device's
    ridge, the decode panel's (the same lines, on the same intensity scale) does not repeat
    it; what the dashes mean is in the decode panel's note, not an entry of its own."""
    fig = _figure("phases", "dense-4", "column")
    prefill, decode = ([" ".join(t.get_text().split()) for t in ax.get_legend().get_texts()]
                       for ax in fig.axes[:2])
    for name in FOUR:
        assert sum(t.startswith(f"{name}: ridge ") for t in prefill) == 1
        assert sum(t.startswith(f"{name}: ") for t in decode) == 1
        assert not any(t.startswith(f"{name}: ridge") for t in decode)
    note = " ".join(next(t for t in fig.axes[1].texts if t.get_gid() == "note").get_text()
                    .split())
    assert "fits no device" in note and not any("fits no device" in t for t in decode)
