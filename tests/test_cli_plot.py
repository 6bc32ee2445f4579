"""``roofline plot KIND`` and ``roofline report`` end to end through main(): valid image files,
a report that links them, and one line with exit status 2 for bad options."""

from __future__ import annotations

import re
from pathlib import Path
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import roofline.cli as cli  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
BASE = ["--hardware", "H100-SXM", "--model", "Llama-3-8B"]


@pytest.fixture(autouse=True)
def _commands(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tuple(c for c in ("plot", "report") if c not in cli._COMMANDS)
    if missing:
        monkeypatch.setattr(cli, "_COMMANDS", (*cli._COMMANDS, *missing))


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("kind, ext", [("roofline", "png"), ("time", "svg"),
                                       ("attention", "png"), ("phases", "svg")])
def test_each_kind(capsys, tmp_path, kind, ext):
    path = tmp_path / f"{kind}.{ext}"
    status, out, err = _run(capsys, "plot", kind, *BASE, "--prompt", "256,4096", "-o", str(path))
    assert status == 0 and err == ""
    tables = [f"wrote {path.with_name(f'time.crossovers.{ext}')} (every crossover's value; "
              "[n]: its tag on the figure)\n" for ext in ("csv", "tex")] if kind == "time" else []
    assert out == "".join([f"wrote {path} ({kind}: Llama-3-8B on H100-SXM (bf16))\n", *tables])
    if ext == "png":
        assert path.read_bytes()[:8] == PNG
    else:
        assert ET.parse(path).getroot().tag == "{http://www.w3.org/2000/svg}svg"


def test_several_devices(capsys, tmp_path):
    path = tmp_path / "r.pdf"
    status, out, _ = _run(capsys, "plot", "phases", "--hardware", "H100-SXM,A100-80GB-SXM",
                          "--model", "Llama-3-8B", "-o", str(path))
    assert status == 0 and "on H100-SXM, A100-80GB-SXM" in out
    assert path.read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("kind", ["roofline", "time", "attention", "phases"])
def test_names_are_text_not_mathtext(capsys, tmp_path, kind):
    # issue 14: two '$' in a device's name opened mathtext, where '^' ended the figure with a
    # ParseException; the name comes from the file's `name` key
    from pathlib import Path

    shipped = Path(cli.__file__).parents[2] / "hardware" / "H100-SXM.toml"
    text = shipped.read_text().replace('name = "H100-SXM"', 'name = "My$GPU^_$x"', 1)
    assert 'name = "My$GPU^_$x"' in text
    (tmp_path / "mine.toml").write_text(text)
    path = tmp_path / f"{kind}.png"
    status, out, err = _run(capsys, "plot", kind, "--hardware",
                            f"{tmp_path / 'mine.toml'},A100-80GB-SXM", "--model", "Llama-3-8B",
                            "--prompt", "2048", "-o", str(path))
    assert (status, err) == (0, "")
    assert path.read_bytes()[:8] == PNG


def test_time_max_prompt(capsys, tmp_path):
    # issue 14: the time figure's x-range, by default twice the context (8,192 → 16,384)
    path = tmp_path / "t.svg"
    status, out, err = _run(capsys, "plot", "time", *BASE, "--max-prompt", "131072",
                            "-o", str(path))
    assert (status, err) == (0, "")
    assert ET.parse(path).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    with pytest.raises(SystemExit):  # a time figure's option only
        cli.main(["plot", "roofline", *BASE, "--max-prompt", "9000", "-o", str(path)])
    assert "unrecognized arguments: --max-prompt" in capsys.readouterr().err


def test_time_writes_its_crossover_tables(capsys, tmp_path):
    # issue 28: the crossover table beside the figure, not in it: CSV and a LaTeX tabular,
    # the values those of `roofline crossover` for the same setting, the drawn ones tagged as
    # on the figure; Mixtral's weights alone exceed an H100's memory, and the cells say so
    import csv

    from roofline import evaluate
    from roofline.api import setting
    from roofline.plot.time import crossover_label

    path = tmp_path / "fig" / "t.pdf"
    status, out, err = _run(capsys, "plot", "time", "--hardware", "H100-SXM", "--model",
                            "Mixtral-8x7B", "-o", str(path))
    assert status == 0 and "do not fit in H100-SXM's memory" in err
    csv_path, tex_path = (tmp_path / "fig" / f"t.crossovers.{ext}" for ext in ("csv", "tex"))
    assert out.splitlines()[1:] == [f"wrote {p} (every crossover's value; [n]: its tag on the "
                                    "figure)" for p in (csv_path, tex_path)]
    headers, *rows = list(csv.reader(csv_path.open(newline="")))
    assert headers == ["crossover (tokens, else as stated)", "kernel (drawn)",
                       "naive", "tiled", "tiled_fa2", "ideal"]
    table = {row[0]: row for row in rows}
    values = evaluate.crossover_values(setting("H100-SXM", "Mixtral-8x7B"))
    tags = set()
    for name, v in values.items():
        base, _, mode = name.partition(".")
        cell = table[crossover_label(base)][1 if mode in ("", "kernel") else headers.index(mode)]
        if not v.exists:
            unevaluated = "– (roofline hybrid: a TPOT objective)" if name.startswith("tpot_") \
                else "– (one device)"
            assert cell == (unevaluated if not v.evaluated else "weights alone exceed "
                            "memory" if v.reason.startswith("never fits") else "never"), name
            continue
        if v.unit != "tokens":
            assert cell == f"{v.value:,.{1 if v.value < 1000 else 0}f} {v.unit}", name
            continue
        found = re.fullmatch(r"(?:\[(\d+)\] )?([\d,]+)(?: to (?:\[(\d+)′\] )?([\d,]+))?", cell)
        assert found, (name, cell)
        tag, first, end_tag, end = found.groups()
        assert float(first.replace(",", "")) == pytest.approx(v.value, abs=0.5), name
        assert (end is None) == (v.ends_at is None), name
        if end is not None:
            assert float(end.replace(",", "")) == pytest.approx(v.ends_at, abs=0.5), name
            assert end_tag in (None, tag)
        # tagged: drawn, of the figure's mode (or of none), on its axis (16 to 65,536 tokens)
        assert (tag is not None) == (mode in ("", "kernel") and 16 <= v.value <= 65536), name
        tags.add(tag)
    assert table["KV cache exceeds memory"][1] == "weights alone exceed memory"
    assert sorted(int(n) for n in tags - {None}) == list(range(1, len(tags - {None}) + 1))
    # the LaTeX: a booktabs tabular of as many rows, specials escaped
    tex = tex_path.read_text().splitlines()
    assert tex[1] == "\\begin{tabular}{" + "l" * len(headers) + "}"
    assert tex[2] == "\\toprule" and tex[4] == "\\midrule" and tex[-2:] == ["\\bottomrule",
                                                                         "\\end{tabular}"]
    body = tex[5:-2]
    assert len(body) == len(rows) and all(line.endswith(" \\\\") for line in body)
    assert all(line.count(" & ") == len(headers) - 1 for line in [tex[3], *body])
    assert "tiled\\_fa2" in tex[3] and not any(line.startswith("[") for line in body)
    assert any("$'$" in line for line in body) == any("′" in c for row in rows for c in row)


def test_time_tables_are_checked_before_any_work(capsys, tmp_path):
    (tmp_path / "t.crossovers.tex").mkdir()
    status, out, err = _run(capsys, "plot", "time", *BASE, "-o", str(tmp_path / "t.png"))
    assert status == 2 and out == ""
    assert err == ("roofline: error: --output: is a folder; give a file name (got "
                   f"'{tmp_path / 't.crossovers.tex'}')\n")
    assert [p.name for p in tmp_path.iterdir()] == ["t.crossovers.tex"]
    with pytest.raises(SystemExit):
        cli.main(["plot", "time", "--help"])
    assert "FILE.crossovers.csv and FILE.crossovers.tex" in " ".join(
        capsys.readouterr().out.split())


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_file_that_cannot_be_written_leaves_no_other(capsys, tmp_path):
    """The figure, its crossover tables and its data are written all or none: a --data file
    that the system refuses (a new file in /proc) leaves no figure, no table and no new
    folder behind."""
    status, out, err = _run(capsys, "plot", "time", *BASE, "-o", str(tmp_path / "new" / "t.png"),
                            "--data", "/proc/roofline-test.csv")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "/proc/roofline-test.csv" in err
    assert list(tmp_path.iterdir()) == []


def test_ttft(capsys, tmp_path):
    path = tmp_path / "ttft.png"
    status, out, _ = _run(capsys, "plot", "ttft", *BASE, "--prompt", "2048", "--slo", "0.2",
                          "-o", str(path))
    assert status == 0 and out.startswith(f"wrote {path} (ttft:")
    assert path.read_bytes()[:8] == PNG


def test_report(capsys, tmp_path, small_figures):
    folder = tmp_path / "rep"
    status, out, _ = _run(capsys, "report", "-o", str(folder))
    assert status == 0
    assert out.splitlines()[0] == f"Report: {folder / 'report.md'}"
    assert "figures: roofline.png, time.png, attention.png, phases.png" in out
    text = (folder / "report.md").read_text()
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (folder / link).read_bytes()[:8] == PNG


@pytest.mark.parametrize("argv, message", [
    (["plot", "time", *BASE, "-o", "x.xyz"],
     "roofline: error: --output: the file's extension names the format; matplotlib writes "),
    (["plot", "roofline", *BASE, "--prompt", "", "-o", "x.png"],
     "roofline: error: --prompt: needs at least one value"),
    (["plot", "roofline", *BASE, "--prompt", "128,-1", "-o", "x.png"],
     "roofline: error: --prompt: each value must be a positive integer (got '-1')"),
    (["plot", "phases", *BASE, "--batch", ",", "-o", "x.png"],
     "roofline: error: --batch: needs at least one value"),
    (["plot", "time", "--hardware", "H100-SXM,Nope", "--model", "Llama-3-8B", "-o", "x.png"],
     "roofline: error: unknown hardware 'Nope'"),
    (["plot", "time", *BASE, "--dtype", "fp4", "-o", "x.png"],
     "roofline: error: --dtype: H100-SXM has no fp4"),
    (["report", "--model", "Nope-1B"], "roofline: error: unknown model 'Nope-1B'"),
    (["plot", "time", *BASE, "--max-prompt", "16", "-o", "x.png"],
     "roofline: error: --max-prompt: must be more than 16 tokens (got 16)"),
    (["plot", "time", "--hardware", "H100-SXM,,MI300X", "--model", "Llama-3-8B", "-o", "x.png"],
     "roofline: error: --hardware: a device name is empty between commas (got "
     "'H100-SXM,,MI300X')"),
    (["plot", "ttft", "--hardware", "H100-SXM,MI300X", "--model", "Llama-3-8B", "--prompt",
      "2048", "-o", "x.png"],
     "roofline: error: --hardware: the ttft figure takes one device (got 'H100-SXM,MI300X')"),
    (["plot", "scaling", "--hardware", "H100-SXM,MI300X", "--model", "Llama-3-8B", "-o",
      "x.png"],
     "roofline: error: --hardware: the scaling figure takes one device (got 'H100-SXM, "
     "MI300X')"),
])
def test_bad_options_are_one_line(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["plot", "bogus"], "roofline: error: plot: argument KIND: invalid choice: 'bogus' "
                        "(choose from 'roofline', 'time', 'attention', 'phases', 'ttft', "
                        "'tpot', 'goodput', 'scaling', 'shapes')"),
    (["plot", "time", "--model", "Llama-3-8B", "-o", "x.png"],
     "roofline: error: plot time: the following arguments are required: --hardware"),
])
def test_argument_errors_are_one_line(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == message + "\n"


def test_plot_output_is_a_folder(capsys, tmp_path):
    folder = tmp_path / "x2.png"
    folder.mkdir()
    status, out, err = _run(capsys, "plot", "time", *BASE, "-o", str(folder))
    assert status == 2 and out == ""
    assert err == f"roofline: error: --output: is a folder; give a file name (got '{folder}')\n"
    assert list(folder.iterdir()) == [] and sorted(tmp_path.iterdir()) == [folder]


def test_plot_creates_a_missing_folder(capsys, tmp_path):
    path = tmp_path / "figs" / "sub" / "p.png"
    status, out, err = _run(capsys, "plot", "phases", *BASE, "--prompt", "512", "-o", str(path))
    assert status == 0 and err == "" and path.read_bytes()[:8] == PNG
    assert list(path.parent.iterdir()) == [path]


@pytest.mark.parametrize("clash", ["time.png", "report.md"])
def test_report_target_is_a_folder(capsys, tmp_path, clash):
    out_dir = tmp_path / "clash"
    (out_dir / clash).mkdir(parents=True)
    (out_dir / "roofline.png").write_bytes(b"old")
    status, out, err = _run(capsys, "report", "-o", str(out_dir))
    assert status == 2 and out == ""
    assert err == (f"roofline: error: --output: {out_dir / clash} is a folder; a file is written "
                   f"there (got '{out_dir}')\n")
    # nothing written or replaced
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([clash, "roofline.png"])
    assert (out_dir / "roofline.png").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clash"]


def test_report_on_a_device_without_sram(capsys, tmp_path, small_figures):
    # TPU-v4 gives no SRAM per SM: the default kernel attention needs none, and runs
    status, out, err = _run(capsys, "report", "--hardware", "TPU-v4", "-o", str(tmp_path / "r"))
    assert status == 0
    assert "Llama-3-8B on TPU-v4 (bf16, kernel attention)" in out
    assert "SRAM" not in err
    assert (tmp_path / "r" / "report.md").is_file()


@pytest.mark.parametrize("kind, text", [
    ("attention", "Attention's HBM traffic against prompt length T (naive, tiled, kernel, ideal)"),
    ("phases", "Intensity of prefill against prompt length T (and at the L2, where it binds)"),
])
def test_help_keeps_capitals(capsys, kind, text):
    with pytest.raises(SystemExit) as info:
        cli.main(["plot", kind, "--help"])
    assert info.value.code == 0
    assert text in " ".join(capsys.readouterr().out.split())


def test_prompts_beyond_the_models_context_are_a_warning(capsys, tmp_path, monkeypatch,
                                                          small_figures):
    # Phi-3-mini-4k reads 4,096 tokens: the figures' default prompts run to 8,192, drawn as
    # `prefill` evaluates them, with its warning (the figure said nothing)
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, "plot", "phases", "--hardware", "H100-SXM", "--model",
                            "Phi-3-mini-4k", "-o", "p.png")
    assert status == 0 and out.startswith("wrote p.png")
    assert err == ("roofline: warning: prompt: 8192 tokens is beyond Phi-3-mini-4k's context "
                   "of 4096 tokens\n")
    status, _, err = _run(capsys, "plot", "roofline", "--hardware", "H100-SXM", "--model",
                          "Llama-3-8B", "--context", "9000", "-o", "r.png")
    assert status == 0 and err == ("roofline: warning: context: 9000 tokens is beyond "
                                   "Llama-3-8B's context of 8192 tokens\n")
    status, _, err = _run(capsys, "plot", "time", "--hardware", "H100-SXM", "--model",
                          "Phi-3-mini-4k", "-o", "t.png")  # twice the context, on purpose
    assert status == 0 and err == ""


def test_dpi_of_a_png(capsys, tmp_path, monkeypatch, small_figures):
    # small_figures draws one inch by one: 150 pixels a side at the house style's 150 dpi,
    # 300 at --dpi 300 (print); out of range is one line
    import struct

    from roofline.cli.plot import DPI
    from roofline.plot._style import RC

    def size(path):
        return struct.unpack(">II", path.read_bytes()[16:24])  # the PNG's IHDR width, height

    monkeypatch.chdir(tmp_path)
    assert DPI == RC["savefig.dpi"] == 150
    for argv, pixels in (([], 150), (["--dpi", "300"], 300)):
        status, _, _ = _run(capsys, "plot", "roofline", *BASE, *argv, "-o", "r.png")
        assert status == 0 and size(tmp_path / "r.png") == (pixels, pixels)
    status, out, err = _run(capsys, "plot", "roofline", *BASE, "--dpi", "20", "-o", "x.png")
    assert status == 2 and err == "roofline: error: --dpi: must be from 50 to 1200 (got 20)\n"
    assert not (tmp_path / "x.png").exists()
