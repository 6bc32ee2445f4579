"""The scaling figure: its plotted data are the evaluated times and efficiencies."""

from __future__ import annotations

import warnings

import pytest

from roofline import api
from roofline.cli import main
from roofline.errors import InputError
from roofline.evaluate.parallel import scaling
from roofline.plot import figure
from roofline.plot._style import headless

warnings.filterwarnings("ignore")


@pytest.fixture(scope="module")
def setting():
    return api.setting("H100-SXM", "Llama-2-70B")


def test_scaling_numbers(setting):
    data = scaling(setting, [128, 2048])
    assert data.degrees == (1, 2, 4, 8)
    t8 = api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=8).points[0]
    assert data.time_s[8][1] == t8.time_s
    assert data.efficiency[1] == (1.0, 1.0)
    assert data.efficiency[8][1] == pytest.approx(data.time_s[1][1] / (8 * t8.time_s))
    assert data.communication_s[1] == (0.0, 0.0) and data.communication_s[8][1] > 0
    with pytest.raises(InputError, match="tp: the degrees must include 1"):
        scaling(setting, [128], (2, 4))


def test_figure_plots_the_data(setting):
    headless()
    fig = figure("scaling", [setting], prompts=[128, 2048])
    left, right = fig.axes[:2]
    data = scaling(setting, [128, 2048])
    for i, line in enumerate(left.get_lines()):
        assert list(line.get_xdata()) == [1, 2, 4, 8]
        assert list(line.get_ydata()) == [data.time_s[n][i] for n in (1, 2, 4, 8)]
    for i, line in enumerate(right.get_lines()):
        assert list(line.get_ydata()) == [data.efficiency[n][i] for n in (1, 2, 4, 8)]
    assert len(left.collections) == 2  # the communication shaded under each line


def test_cli(tmp_path, capsys):
    out = tmp_path / "s.svg"
    assert main(["plot", "scaling", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                 "--prompt", "512", "-o", str(out)]) == 0
    assert out.exists() and "wrote" in capsys.readouterr().out
