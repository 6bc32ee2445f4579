"""``roofline measure`` and ``roofline validate`` end to end through main(), at tiny sizes
(the default sizes are swapped for tiny ones; the full run is a command, not a test)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

import roofline.cli as cli
from roofline.measure import cpu as M
from roofline.measure import gpu as gpu_measure
from roofline.measure import hwfile as H
from roofline.measure import validation as V
from roofline.specs.hardware import load_hardware

TINY = M.Plan(matmul_n=32, matmul_repeats=2, stream_elements=20_000, stream_repeats=2,
              chunk=4096, threads=2, why="tiny test sizes", gemm_d_in=64, gemm_d_out=256,
              gemm_repeats=2)


@pytest.fixture(autouse=True)
def _tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    if "measure" not in cli._COMMANDS:
        monkeypatch.setattr(cli, "_COMMANDS", (*cli._COMMANDS, "measure"))
    monkeypatch.setattr(M, "measure", functools.partial(M.measure, the_plan=TINY))
    monkeypatch.setattr(V, "validate", functools.partial(
        V.validate, tokens=[1, 2, 4, 8], width=64, attn_tokens=[8, 16], repeats=2, budget_s=0.05))
    monkeypatch.setattr(gpu_measure, "unavailable", lambda: "no GPU in the tests")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_measure_writes_a_hardware_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "me.toml"
    status, out, err = _run(capsys, "measure", "-o", str(path), "--name", "box")
    assert status == 0 and f"wrote {path}" in out and "fp32:" in out
    assert "GPU part skipped: no GPU in the tests" in err
    assert "%" not in err and "\r" not in err  # stderr is not a terminal: no progress bar
    hw = load_hardware(path)
    assert hw.name == "box" and hw.peak("fp32") > 0 and hw.bandwidth() > 0
    assert f"bandwidth efficiency (GEMM weight stream / triad): {hw.bandwidth_efficiency}" in out
    assert 0 < hw.bandwidth_efficiency <= 1


def test_measure_rejects_a_non_toml_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "measure", "-o", str(tmp_path / "me.txt"))
    assert status == 2
    assert err.strip() == (f"roofline: error: --output: must name a .toml file "
                           f"(got '{tmp_path / 'me.txt'}')")


@pytest.fixture
def no_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad target must be refused before any measuring starts."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("measured although the target was bad")

    monkeypatch.setattr(M, "measure", refuse)
    monkeypatch.setattr(V, "validate", refuse)


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == "" and err.count("\n") == 1
    return err


def test_measure_under_a_file_fails_before_measuring(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_measuring: None) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    target = a_file / "x.toml"
    err = _refused(capsys, "measure", "--quick", "-o", str(target))
    assert err == (f"roofline: error: --output: cannot write there: {a_file} is a file, "
                   f"not a folder (got '{target}')\n")
    assert [p.name for p in tmp_path.iterdir()] == ["afile"] and a_file.read_text() == "x"


def test_measure_into_a_folder_named_like_a_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_measuring: None) -> None:
    (tmp_path / "d.toml").mkdir()
    err = _refused(capsys, "measure", "-o", str(tmp_path / "d.toml"))
    assert err.startswith("roofline: error: --output: is a folder; give a file name")
    (tmp_path / "x-gpu.toml").mkdir()
    err = _refused(capsys, "measure", "-o", str(tmp_path / "x.toml"))
    assert f"--output: cannot write {tmp_path / 'x-gpu.toml'}: it is a folder" in err


@pytest.mark.parametrize("name, rule", [("", "must be a non-empty string"),
                                        (" ", "must be a non-empty string")])
def test_measure_refuses_a_name_the_reader_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_measuring: None, name: str,
        rule: str) -> None:
    err = _refused(capsys, "measure", "--name", name, "-o", str(tmp_path / "n.toml"))
    assert err == f"roofline: error: --name: {rule} (got {name!r})\n"
    assert list(tmp_path.iterdir()) == []


def test_measure_never_writes_a_file_the_reader_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # a measurement whose document the reader refuses (here: an unknown kind) is not written
    real = M.Measurement.document
    monkeypatch.setattr(M.Measurement, "document",
                        lambda self, name: {**real(self, name), "kind": "x"})
    target = tmp_path / "me.toml"
    err = _refused(capsys, "measure", "-o", str(target))
    assert err.startswith(f"roofline: error: {target}: kind: must be one of ")
    assert err.endswith("; nothing was written (got 'x')\n")
    assert list(tmp_path.iterdir()) == []


def test_validate_refuses_a_bad_folder_before_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_measuring: None) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    err = _refused(capsys, "validate", "--quick", "-o", str(a_file / "v"))
    assert err == (f"roofline: error: --output: cannot write there: {a_file} is a file, "
                   f"not a folder (got '{a_file / 'v'}')\n")
    (tmp_path / "v" / "validation.png").mkdir(parents=True)
    err = _refused(capsys, "validate", "-o", str(tmp_path / "v"))
    assert err == (f"roofline: error: --output: {tmp_path / 'v' / 'validation.png'} is a folder; "
                   f"a file is written there (got '{tmp_path / 'v'}')\n")
    (tmp_path / "w" / "hardware.toml").mkdir(parents=True)  # where the measured file would go
    err = _refused(capsys, "validate", "-o", str(tmp_path / "w"))
    assert "hardware.toml is a folder; a file is written there" in err
    assert {p.name for p in tmp_path.iterdir()} == {"afile", "v", "w"}  # nothing new written
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["hardware.toml"]


def test_validate_measures_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "val"
    status, out, err = _run(capsys, "validate", "-o", str(out_dir))
    assert status == 0
    assert {p.name for p in out_dir.iterdir()} == {"hardware.toml", "validation.md",
                                                   "validation.png"}
    text = (out_dir / "validation.md").read_text()
    assert "GPU part skipped: no GPU in the tests" in text
    assert "median absolute error" in out and err.count("GPU part skipped") == 1


def test_validate_with_a_hardware_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hw = H.write_hardware(tmp_path / "hw.toml", M.measure().document("given"))
    status, _, err = _run(capsys, "validate", "--hardware", str(hw), "-o", str(tmp_path / "v"))
    assert status == 0 and "GPU part skipped" in err
    assert f"`{hw}`" in (tmp_path / "v" / "validation.md").read_text()


def test_validate_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    status, _, err = _run(capsys, "validate", "-o", str(a_file))
    assert status == 2 and f"--output: must be a folder, not a file (got '{a_file}')" in err
    missing = tmp_path / "none.toml"
    status, _, err = _run(capsys, "validate", "--hardware", str(missing))
    assert status == 2 and err.startswith(f"roofline: error: {missing}: cannot read the file")
    doc = M.measure().document("no-fp32")
    del doc["peak_flops"]["fp32"]
    no_fp32 = tmp_path / "nofp32.toml"
    no_fp32.write_text(H.toml_document(doc))
    status, _, err = _run(capsys, "validate", "--hardware", str(no_fp32), "-o", str(tmp_path / "v"))
    assert status == 2 and f"{no_fp32}: peak_flops.fp32: validate needs the fp32 peak" in err


def test_gpu_unavailable_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the real check, with torch hidden
    monkeypatch.setitem(sys.modules, "torch", None)
    assert gpu_measure.unavailable() == ("PyTorch is not installed "
                                         "(optional: pip install 'roofline[gpu]')")


def test_validate_refuses_a_device_that_is_not_this_machine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate times work on this CPU: a shipped GPU file, or a CPU file measured on another
    machine, is refused before any work, naming the file and what it describes."""
    from roofline.measure.system import cpu_name

    gpu_file = load_hardware("H100-SXM").path
    out = tmp_path / "v"
    status, stdout, err = _run(capsys, "validate", "--hardware", str(gpu_file), "-o", str(out))
    assert status == 2 and stdout == "" and not out.exists()
    assert err == (f"roofline: error: --hardware: validate times work on this machine's CPU "
                   f"({cpu_name()}); H100-SXM is a gpu file: give a file `roofline measure` "
                   f"wrote here, or none (got '{gpu_file}')\n")
    doc = M.measure().document("elsewhere")
    doc["provenance"]["cpu"] = "Some Other CPU 9000"
    other = H.write_hardware(tmp_path / "other.toml", doc)
    status, _, err = _run(capsys, "validate", "--hardware", str(other), "-o", str(out))
    assert status == 2 and not out.exists()
    assert "the file's provenance.cpu is 'Some Other CPU 9000'" in err and err.count("\n") == 1
