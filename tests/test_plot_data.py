"""Issue "Figures a paper can print", data and provenance: ``plot ... --data FILE`` writes every
series drawn (read back from the figure) with the command, the version and each file's SHA-256;
the series equal ``prefill`` and ``crossover`` at the same points, and the recorded command
regenerates the same SVG bytes."""

import csv
import hashlib
import io
import json
import shlex

import pytest

import roofline
from roofline.cli import main

BASE = ["--hardware", "H100-SXM", "--model", "Llama-3-8B"]


def _plot(tmp_path, kind, suffix, *more):
    figure, data = tmp_path / f"{kind}.svg", tmp_path / f"{kind}{suffix}"
    argv = ["plot", kind, *BASE, *more, "-o", str(figure), "--data", str(data)]
    assert main(argv) == 0
    return argv, figure, data


def test_the_time_figures_data_is_prefill_and_its_crossovers(tmp_path, capsys):
    _, _, data = _plot(tmp_path, "time", ".json")
    drawn = json.loads(data.read_text())["series"]
    whole = [s for s in drawn if s["label"] in ("whole prefill", "time:H100-SXM:total:memory")]
    points = {x: y for s in whole for x, y in zip(s["x"], s["y"]) if y is not None}
    lengths = sorted(int(x) for x in points)
    assert len(lengths) > 50
    table = roofline.prefill_columns("H100-SXM", "Llama-3-8B", lengths)
    for t, expected in zip(lengths, table["time_s"]):
        assert points[float(t)] == pytest.approx(expected, rel=1e-12)
    crossovers = roofline.crossovers("H100-SXM", "Llama-3-8B").values
    tags = [s for s in drawn if s["label"].startswith("crossover:H100-SXM:")]
    assert tags and all(s["coordinates"] == "x" for s in tags)
    for s in tags:
        name = s["label"].removeprefix("crossover:H100-SXM:")
        assert s["x"][0] == pytest.approx(crossovers[name].value, rel=1e-12), name


def test_provenance_names_the_files_and_regenerates_the_same_bytes(tmp_path, capsys,
                                                                    monkeypatch):
    argv, figure, data = _plot(tmp_path, "attention", ".csv")
    lines = data.read_text().splitlines()
    comments = [line for line in lines if line.startswith("#")]
    assert comments[0] == "# command: " + shlex.join(["roofline", *argv])
    hw = roofline.load_hardware("H100-SXM").path
    digest = hashlib.sha256(hw.read_bytes()).hexdigest()
    assert f"# sha256 {digest} {hw}" in comments
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[len(comments):]))))
    assert rows and {r["coordinates"] for r in rows} <= {"data", "x", "outline"}
    assert "sha256 " + digest in figure.read_text()  # the figure's own metadata
    first = figure.read_bytes()
    command = shlex.split(comments[0].removeprefix("# command: "))
    assert command[0] == "roofline"
    figure.unlink()
    assert main(command[1:]) == 0
    assert figure.read_bytes() == first


@pytest.mark.parametrize("kind", ["roofline", "phases", "scaling"])
def test_every_kind_writes_its_series(tmp_path, capsys, kind):
    _, _, data = _plot(tmp_path, kind, ".json")
    written = json.loads(data.read_text())
    assert written["provenance"]["version"] and written["series"]
    assert all(len(s["x"]) == len(s["y"]) for s in written["series"])


def test_ttft_writes_its_areas(tmp_path, capsys):
    data = tmp_path / "t.json"
    assert main(["plot", "ttft", *BASE, "--prompt", "2048", "-o", str(tmp_path / "t.png"),
                 "--data", str(data)]) == 0
    drawn = json.loads(data.read_text())["series"]
    assert {s["coordinates"] for s in drawn} == {"outline"}


def test_a_data_file_of_another_kind_is_refused_before_any_work(tmp_path, capsys):
    assert main(["plot", "time", *BASE, "-o", str(tmp_path / "t.png"),
                 "--data", str(tmp_path / "t.txt")]) == 2
    assert capsys.readouterr().err == (f"roofline: error: --data: must name a .csv or .json "
                                       f"file (got '{tmp_path / 't.txt'}')\n")
    assert list(tmp_path.iterdir()) == []
