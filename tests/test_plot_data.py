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
    whole = [s for s in drawn if s["id"].startswith("time:H100-SXM:total:")]
    assert {s["id"] for s in whole} == {"time:H100-SXM:total:fits:compute",
                                        "time:H100-SXM:total:fits:memory"}  # it all fits
    assert [s["label"] for s in whole] == ["whole prefill", "time:H100-SXM:total:fits:memory"]
    assert all(s["fits"] is True for s in whole)
    points = {x: y for s in whole for x, y in zip(s["x"], s["y"]) if y is not None}
    lengths = sorted(int(x) for x in points)
    assert len(lengths) > 50
    table = roofline.prefill_columns("H100-SXM", "Llama-3-8B", lengths)
    for t, expected in zip(lengths, table["time_s"]):
        assert points[float(t)] == pytest.approx(expected, rel=1e-12)
    # the operation classes are not drawn by memory: their fit not said
    assert {s["fits"] for s in drawn if s["id"].startswith("time:H100-SXM:projection:")} == {None}
    crossovers = roofline.crossovers("H100-SXM", "Llama-3-8B").values
    tags = [s for s in drawn if s["label"].startswith("crossover:H100-SXM:")]
    assert tags and all(s["coordinates"] == "x" for s in tags)
    for s in tags:
        name = s["label"].removeprefix("crossover:H100-SXM:")
        assert s["x"][0] == pytest.approx(crossovers[name].value, rel=1e-12), name


def _prefill_json(capsys, device: str, model: str, lengths: list[int]) -> dict:
    """``roofline prefill --json`` at these prompt lengths."""
    capsys.readouterr()
    assert main(["prefill", "--hardware", device, "--model", model, "--json",
                 "--prompt", ",".join(map(str, lengths))]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_time_figures_data_keeps_what_does_not_fit(tmp_path, capsys):
    # issue "figures a paper can print": Mixtral's 93.4 GB of weights exceed an H100's 80 GB
    # and a TPU v5e's 16 GB: their curves, pale, were written as empty series (the values
    # only under an id, their bounds lost). Now every point is written, each row saying
    # whether it fits and, by its id, whether it is drawn solid (compute) or dashed (memory)
    data = tmp_path / "t.csv"
    assert main(["plot", "time", "--hardware", "H100-SXM,MI300X,TPU-v5e", "--model",
                 "Mixtral-8x7B", "-o", str(tmp_path / "t.png"), "--data", str(data)]) == 0
    assert "weights (93.41 GB in bf16) do not fit in H100-SXM's memory" in capsys.readouterr().err
    lines = [line for line in data.read_text().splitlines() if not line.startswith("#")]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    for device, pale in (("H100-SXM", True), ("MI300X", False), ("TPU-v5e", True)):
        mine = [r for r in rows if r["id"].startswith(f"time:{device}:total:")]
        assert mine, device
        drawn = [r for r in mine if r["y"]]
        lengths = sorted({int(float(r["x"])) for r in drawn})
        assert len(lengths) > 50 and lengths[-1] == 65536  # twice the 32,768-token context
        made = _prefill_json(capsys, device, "Mixtral-8x7B", lengths)
        results = {r["prompt_tokens"]: r for r in made["results"]}
        memory = made["memory"]  # at the longest prompt: the weights, and the KV cache's
        per_token = memory["kv_cache"] / memory["prompt_tokens"]
        for r in drawn:
            t = int(float(r["x"]))
            fits = memory["weights"] + per_token * t <= memory["capacity"]
            assert float(r["y"]) == pytest.approx(results[t]["time_s"], rel=1e-12)
            assert r["fits"] == ("true" if fits else "false"), (device, t)
            assert r["id"].rsplit(":", 1)[0] == \
                f"time:{device}:total:{'fits' if fits else 'no-fit'}"
        # solid (compute) and dashed (memory) as prefill's bound; the two meet at a point
        # drawn in both styles
        styles: dict[int, set[str]] = {}
        for r in drawn:
            styles.setdefault(int(float(r["x"])), set()).add(r["id"].rsplit(":", 1)[1])
        for t, bound in styles.items():
            if len(bound) == 1:
                assert bound == {results[t]["bound"]}, (device, t)
        assert {results[t]["bound"] for t in lengths} == {"compute", "memory"}
        assert all(r["fits"] == "false" for r in mine) == pale
    assert {r["y_label"] for r in rows if r["id"].startswith("time:")} == \
        {"whole-prefill time"}
    # a line with nothing drawn is not written: no empty series of H100-SXM's
    assert not [r for r in rows if r["label"] == "H100-SXM"]
    assert {r["fits"] for r in rows if r["id"].startswith("crossover:")} == {""}


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
    # the bound's stacked parts as areas; the estimate's total (not a bound) as a curve
    assert {s["label"]: s["coordinates"] for s in drawn} == {
        "prompt execution": "outline", "first token": "outline", "queueing": "outline",
        "estimate: total (not a bound)": "data"}


def test_a_data_file_of_another_kind_is_refused_before_any_work(tmp_path, capsys):
    assert main(["plot", "time", *BASE, "-o", str(tmp_path / "t.png"),
                 "--data", str(tmp_path / "t.txt")]) == 2
    assert capsys.readouterr().err == (f"roofline: error: --data: must name a .csv or .json "
                                       f"file (got '{tmp_path / 't.txt'}')\n")
    assert list(tmp_path.iterdir()) == []
