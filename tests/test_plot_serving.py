"""The serving figures: plot tpot (what it draws is the hybrid step's numbers, each budget at the
objective, bad options one line) and plot goodput (each goodput at the attainment)."""

from __future__ import annotations

import pytest

from roofline import cli


@pytest.fixture(scope="module")
def drawn():
    from roofline.api import setting
    from roofline.plot import _style
    from roofline.plot.tpot import tpot_figure

    _style.headless()
    s = setting("H100-SXM", "Llama-3-8B")
    return s, tpot_figure(s, [8, 64], 4096, 0.04, done=512)


def _line(fig, gid):
    return next(line for line in fig.axes[0].lines if line.get_gid() == gid)


def test_the_curves_start_at_the_decode_step(drawn):
    from dataclasses import replace

    from roofline.evaluate.phases import decode

    s, fig = drawn
    for count in (8, 64):
        x, y = _line(fig, f"tpot.{count}").get_data()
        assert x[0] == 0
        assert y[0] == pytest.approx(decode(replace(s, batch=count), 4096).time_s * 1e3)


def test_each_budget_dot_is_under_the_objective_and_the_next_token_over(drawn):
    from roofline.serving.hybrid import step

    s, fig = drawn
    for count in (8, 64):
        (c,), (t,) = _line(fig, f"budget.{count}").get_data()
        assert t <= 40 < step(s, int(c) + 1, 512, count, 4096).time_s * 1e3
    (_, _), (y, _) = _line(fig, "objective").get_data()
    assert y == pytest.approx(40)
    for count in (8, 64):  # each budget's line from its dot down to the chunk axis
        (c,), (t,) = _line(fig, f"budget.{count}").get_data()
        x, y = _line(fig, f"budget_line.{count}").get_data()
        assert list(x) == [c, c] and list(y) == [0, t]


def test_a_budget_beyond_the_axis_says_so():
    from roofline.api import setting
    from roofline.plot import _style
    from roofline.plot.tpot import tpot_figure

    _style.headless()
    fig = tpot_figure(setting("H100-SXM", "Llama-3-8B"), [1], 2048, 0.03, max_chunk=100)
    (label,) = [t.get_text() for t in fig.axes[0].get_legend().get_texts()
                if t.get_text().startswith("1 decode:")]
    assert "(beyond the axis)" in label


@pytest.mark.parametrize("extra, words", [
    (["--decodes", "1,2,3,4,5,6,7"], "one to six"),
    (["--decodes", "8", "--pp", "2"], "pp, ep and cp"),
    (["--decodes", "0"], "--decodes"),
    (["--decodes", "8", "--max-chunk", "0"], "--max-chunk")])
def test_bad_options_are_one_line(tmp_path, capsys, extra, words):
    argv = ["plot", "tpot", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--context",
            "1024", "--tpot", "0.05", "-o", str(tmp_path / "f.png"), *extra]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and words in err
    assert not (tmp_path / "f.png").exists()


def test_goodput_figure_marks_each_goodput_at_the_attainment(tmp_path, capsys):
    """`plot goodput`: each curve reaches the attainment at its goodput and the dots sit there;
    the figure is written."""
    from roofline.api import goodput
    from roofline.plot import _style
    from roofline.plot.goodput import goodput_figure
    from roofline.serving.goodput import attainment_curves

    _style.headless()
    g = goodput("A100-80GB-SXM", "OPT-13B", prompt=512, output=128, ttft=0.25, tpot=0.1)
    fig = goodput_figure(g)
    for gid, rate in (("disaggregated", g.disaggregated_per_device),
                      ("colocated", g.colocated_per_device)):
        (x,), (y,) = _line(fig, f"goodput.{gid}").get_data()
        assert (x, y) == pytest.approx((rate, 90))
    pair, colo = attainment_curves(g, [0.99 * g.disaggregated_per_device,
                                       0.99 * g.colocated_per_device])
    assert pair[0] >= 0.9 and colo[1] >= 0.9
    pair, colo = attainment_curves(g, [1.01 * g.disaggregated_per_device,
                                       1.01 * g.colocated_per_device])
    assert pair[0] < 0.9 and colo[1] < 0.9
    path = tmp_path / "g.svg"
    assert cli.main(["plot", "goodput", "--hardware", "A100-80GB-SXM", "--model", "OPT-13B",
                     "--prompt", "512", "--output", "128", "--ttft", "0.25", "--tpot", "0.1",
                     "-o", str(path)]) == 0
    assert path.stat().st_size > 0 and "wrote" in capsys.readouterr().out
