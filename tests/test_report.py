"""roofline.report: report.md with its derivations, tables and linked figures; nothing half
written when a figure fails."""

from __future__ import annotations

import os
import re
import warnings
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from roofline import evaluate, report  # noqa: E402
from roofline.api import setting  # noqa: E402
from roofline.errors import InputError  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return report.build(output=tmp_path_factory.mktemp("r") / "report")


def test_files_and_links(built):
    assert built.markdown == built.directory / "report.md"
    assert sorted(p.name for p in built.directory.iterdir()) == [
        "attention.png", "phases.png", "report.md", "roofline.png", "time.png"]
    text = built.markdown.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links == ["roofline.png", "time.png", "attention.png", "phases.png"]
    for link in links:
        assert (built.directory / link).read_bytes()[:8] == PNG
    assert not list(built.directory.parent.glob(".report-*"))  # the temporary folder is gone


def test_figures_drawn_two_at_a_time_are_those_drawn_one_by_one(built, tmp_path, monkeypatch):
    # the fixture's report drew every other figure in a forked process (roofline.forked); on
    # one core all are drawn here: the same bytes
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    alone = report.build(output=tmp_path / "r", figures=("roofline", "time"))
    for name in ("roofline.png", "time.png"):
        assert (alone.directory / name).read_bytes() == (built.directory / name).read_bytes()


def test_contents(built):
    text = built.markdown.read_text()
    assert text.startswith("# Prefill roofline: Llama-3-8B on H100-SXM (bf16)\n")
    s = setting("H100-SXM", "Llama-3-8B")
    values = evaluate.crossover_values(s)
    # the crossover table: every crossover of the catalogue, with its value, "never", or "–"
    # where it was not evaluated (a number the device lacks; a collective on one device)
    for name, v in values.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        # whole tokens; a count of sequences with one decimal below 1,000 (59.5, of which 59 fit)
        shown = (f"{v.value:,.0f}" if v.unit == "tokens" or v.value >= 1000
                 else f"{v.value:,.1f}") if v.exists else None
        expected = f"{shown} {v.unit}" if v.exists else "never" if v.evaluated else "| – |"
        assert expected in row, (name, row)
    assert not values["tp_allreduce_hidden_tokens"].evaluated  # one device: nothing to hide
    # the prefill table at each prompt length, from the exact evaluation
    for p in evaluate.prefill(s, report.PROMPTS):
        assert re.search(rf"^\| {p.prompt_tokens} \| .* \| {p.bound} \|", text, re.M)
    # derivations in LaTeX, display math
    assert "$$\n\\frac{P_{\\mathrm{peak}}}{\\beta_{\\mathrm{HBM}}}\n$$" in text
    for name in report.DERIVATIONS:
        assert f"**`{name}`**" in text
    assert "T^{*} = " in text  # a long closed form in its own display block
    assert "Ridge 295.3 FLOP/byte" in built.summary and str(built.markdown) in built.summary


def test_failure_leaves_nothing(tmp_path, monkeypatch):
    from roofline import plot

    def broken(kind, *args, **kwargs):
        if kind == "phases":
            raise RuntimeError("drawing failed")
        return real(kind, *args, **kwargs)

    real = plot.figure
    monkeypatch.setattr(plot, "figure", broken)
    with pytest.raises(RuntimeError, match="drawing failed"):
        report.build(output=tmp_path / "out", figures=("roofline", "phases"))
    assert list(tmp_path.iterdir()) == []


def test_output_must_be_a_folder(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(InputError, match=f"^output: must be a folder, not a file \\(got '{target}'\\)"):
        report.build(output=target)


def test_markdown_alone(built):
    s = setting("H100-SXM", "Llama-3-8B")
    from roofline.api import CrossoverTable, PrefillTable

    table = PrefillTable(s, evaluate.prefill(s, [1024]), evaluate.decode(s, 1024))
    text = report.markdown(s, table, CrossoverTable(s, evaluate.crossover_values(s)), ["time"])
    assert "![time: Llama-3-8B on H100-SXM, bf16](time.png)" in text
    assert "roofline.png" not in text
    assert "| 1024 |" in text


def test_unknown_names(tmp_path):
    with pytest.raises(InputError, match="^dtype: H100-SXM has no fp4"):
        report.build(dtype="fp4", output=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_report_creates_missing_folders(tmp_path, small_figures):
    built = report.build(output=tmp_path / "a" / "b", figures=("time",))
    assert sorted(p.name for p in built.directory.iterdir()) == ["report.md", "time.png"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]


def test_parent_is_a_file(tmp_path, small_figures):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match=f"^output: cannot write there: {tmp_path / 'afile'} is a file, not a folder"):
        report.build(output=tmp_path / "afile" / "r", figures=("time",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_clash_made_while_drawing_replaces_nothing(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from roofline import plot

    out = tmp_path / "out"
    out.mkdir()
    (out / "time.png").write_bytes(b"old")

    def drawing(kind, *args, **kwargs):
        (out / "report.md").mkdir(exist_ok=True)  # appears after the first check
        return Figure(figsize=(1, 1))

    monkeypatch.setattr(plot, "figure", drawing)
    with pytest.raises(InputError, match=f"^output: {out / 'report.md'} is a folder; a file is "
                                         "written there"):
        report.build(output=out, figures=("time",))
    assert (out / "time.png").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left


def test_os_error_is_an_input_error(tmp_path, small_figures, monkeypatch):
    import os

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(InputError, match="^output: cannot write the report: Permission denied "
                                         f"\\(got '{tmp_path / 'new' / 'r'}'\\)"):
        report.build(output=tmp_path / "new" / "r", figures=("time",))
    assert list(tmp_path.iterdir()) == []  # the folders it made are gone again


def test_sizes_in_binary_prefixes(tmp_path, small_figures):
    with warnings.catch_warnings():  # 16.06 GB of weights fit in TPU-v5e's 16 GiB (17.18 GB)
        warnings.simplefilter("error")
        built = report.build(hardware="TPU-v5e", output=tmp_path / "r", figures=("time",),
                             attention="tiled")
    text = built.markdown.read_text()
    assert "| on-chip SRAM per SM | 128 MiB |" in text


def test_a_temporary_folder_left_by_a_killed_run_is_removed_by_the_next(tmp_path, small_figures):
    import subprocess
    import sys

    killed = ("import os, signal, sys\n"
              "from roofline import plot, report\n"
              "plot.figure = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
              "report.build(output=sys.argv[1], figures=('time',))\n")
    run = subprocess.run([sys.executable, "-c", killed, str(tmp_path / "r")], timeout=60)
    assert run.returncode == -9
    (left,) = tmp_path.iterdir()  # killed while drawing: its temporary folder stays
    assert left.name.startswith(".r.") and left.is_dir()
    mine = tmp_path / f".r.tmp-{os.getpid()}-other"  # a live process's: left alone
    mine.mkdir()
    report.build(output=tmp_path / "r", figures=("time",))
    assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name, "r"]


def test_interrupted_removes_its_temporary_folder(tmp_path, monkeypatch):
    from roofline import plot

    def interrupted(*args, **kwargs):
        assert [p.name[:7] for p in tmp_path.iterdir()] == [".r.tmp-"]
        raise KeyboardInterrupt

    monkeypatch.setattr(plot, "figure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        report.build(output=tmp_path / "r", figures=("time",))
    assert list(tmp_path.iterdir()) == []


def test_a_setting_that_does_not_fit_is_noted(tmp_path, small_figures):
    """L4 (24 GB), Llama-3-8B at batch 8: the 32,768-token prefill needs 16.06 GB of weights
    plus 8 × 2·32·8·128·32,768·2 B = 34.36 GB of KV cache and the live activations at their
    peak, the MLP's (3D + 3F)·2 B a row, 110,592 × 8 × 32,768 B = 28.99 GB: 79.41 GB in all;
    the report says so (it said nothing, where `roofline prefill` warned)."""
    built = report.build(hardware="L4", output=tmp_path / "r", figures=("time",), batch=8)
    text = built.markdown.read_text()
    assert ("the prefill of batch 8 at 32,768 tokens needs 79.41 GB (weights, KV cache and its "
            "live activations), 55.4 GB more than L4's 24 GB") in text  # 79.41 − 24.0 = 55.41


def test_figures_draw_the_decode_step_of_the_summary(tmp_path, monkeypatch):
    # DeepSeek-V2-Lite's context is 163,840 tokens: the summary's decode step is at the table's
    # longest prompt, 32,768, and the figures' was at their own longest, 8,192
    from matplotlib.figure import Figure

    from roofline import plot

    asked = []
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # every figure in this process, not forked
    monkeypatch.setattr(plot, "figure",
                        lambda kind, *a, **k: asked.append((kind, k["context"])) or Figure())
    built = report.build(model="DeepSeek-V2-Lite", output=tmp_path / "r",
                         figures=("roofline", "phases"))
    assert "A decode step at batch 1 (context 32,768)" in built.summary.replace("\n  ", " ")
    assert sorted(asked) == [("phases", 32_768), ("roofline", 32_768)]
