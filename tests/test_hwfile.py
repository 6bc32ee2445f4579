"""roofline.hwfile: number formatting, the TOML writer, the atomic write, the read-back check
against the hardware reader, and the checks of an output target made before any measuring.

Expected values are worked by hand.
"""

from __future__ import annotations

import math
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import hwfile as H
from roofline.errors import InputError, SpecError
from roofline.specs.hardware import load_hardware


def test_formatting() -> None:
    assert H.format_rate(3.2e11, "FLOP/s") == "320 GFLOP/s"
    assert H.format_rate(1.5e12, "FLOP/s") == "1.5 TFLOP/s"
    assert H.format_rate(19_512_345_678, "B/s") == "19.51 GB/s"
    assert H.format_bytes(480 * 2**20) == "480 MiB"
    assert H.format_bytes(48 * 1024) == "48 KiB"
    assert H.format_bytes(3 * 2**30 // 2) == "1.5 GiB"
    with pytest.raises(ValueError, match="positive and finite"):
        H.format_rate(0.0, "B/s")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_toml_string_round_trip(text: str) -> None:
    assert tomllib.loads(f"x = {H._toml_string(text)}\n")["x"] == text


def test_toml_document_round_trip() -> None:
    doc = {"name": 'a "quoted" \\ name', "kind": "cpu",
           "memory": {"bandwidth": {"value": "1 GB/s", "source": "s\tt"}},
           "provenance": {"cores": "2"}, "on_chip": {"sm_count": {"value": 2, "source": "x"}}}
    assert tomllib.loads(H.toml_document(doc, header="two\nlines")) == doc
    with pytest.raises(ValueError, match="not a bare TOML key"):
        H.toml_document({"bad key": "x"})
    assert tomllib.loads(H.toml_document({"x": 1.5, "y": {"z": 1e-05}})) == {"x": 1.5,
                                                                          "y": {"z": 1e-05}}
    with pytest.raises(TypeError, match="cannot write float"):
        H.toml_document({"x": math.nan})
    with pytest.raises(TypeError, match="cannot write list"):
        H.toml_document({"x": [1]})


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_toml_float_round_trip(x: float) -> None:
    assert tomllib.loads(H.toml_document({"x": x}))["x"] == x


def test_write_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "sub" / "hw.toml"
    H.write_atomic(target, "a = 1\n")
    assert target.read_text() == "a = 1\n"

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(H.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        H.write_atomic(target, "a = 2\n")
    assert target.read_text() == "a = 1\n"  # the old file is intact
    assert [p.name for p in target.parent.iterdir()] == ["hw.toml"]  # no temporary left


def test_write_atomic_check_runs_before_the_rename(tmp_path: Path) -> None:
    target = tmp_path / "hw.toml"
    target.write_text("old\n")
    seen: list[str] = []

    def refuse(tmp: Path) -> None:
        seen.append(tmp.read_text())
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        H.write_atomic(target, "new\n", check=refuse)
    assert seen == ["new\n"]  # the check read the text about to be renamed
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["hw.toml"]


def _hardware_document(name: str) -> dict[str, object]:
    """A small hardware file as a nested dict: what the reader needs, values written by hand."""
    def entry(value: str) -> dict[str, str]:
        return {"value": value, "source": "by hand"}

    return {"name": name, "vendor": "test", "kind": "cpu",
            "peak_flops": {"fp32": entry("100 GFLOP/s")},
            "memory": {"bandwidth": entry("20 GB/s"), "capacity": entry("16 GiB")}}


def test_hardware_check_refuses_what_the_reader_refuses(tmp_path: Path) -> None:
    doc = _hardware_document("ok")
    target = tmp_path / "n.toml"
    good = H.write_atomic(target, H.toml_document(doc), H.hardware_check(target))
    assert load_hardware(good).name == "ok"
    target.unlink()
    doc["name"] = ""
    with pytest.raises(SpecError) as info:
        H.write_atomic(target, H.toml_document(doc), H.hardware_check(target))
    # the message names the file that was not written, not the temporary one
    assert str(info.value) == f"{target}: name: must be a non-empty string; nothing was written (got '')"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, rule", [("", "must be a non-empty string"),
                                        ("   ", "must be a non-empty string"),
                                        ("\udcff", "must be UTF-8 text")])
def test_check_name_refuses(name: str, rule: str) -> None:
    with pytest.raises(InputError) as info:
        H.check_name(name)
    assert str(info.value) == f"--name: {rule} (got {name!r})"


def test_check_name_accepts_any_printable_text() -> None:
    for name in ("this-machine", 'quote " and \\ backslash', "Zürich box #1"):
        H.check_name(name)  # no error


def test_check_output_file(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    for target in (a_file / "x.toml", a_file / "sub" / "x.toml"):
        with pytest.raises(InputError) as info:
            H.check_output_file(target)
        assert str(info.value) == (f"-o: cannot write there: {a_file} is a file, not a folder "
                                   f"(got '{target}')")
    with pytest.raises(InputError, match=r"^-o: must name a \.toml file"):
        H.check_output_file(tmp_path / "x.json")
    (tmp_path / "d.toml").mkdir()
    with pytest.raises(InputError, match=r"^-o: is a folder; give a file name"):
        H.check_output_file(tmp_path / "d.toml")
    assert H.check_output_file(tmp_path / "new" / "deeper" / "x.toml").name == "x.toml"
    assert not (tmp_path / "new").exists()  # a check creates nothing


def test_check_output_folder(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    with pytest.raises(InputError, match=r"^-o: must be a folder, not a file"):
        H.check_output_folder(a_file, [])
    with pytest.raises(InputError) as info:
        H.check_output_folder(a_file / "v", [])
    assert str(info.value) == (f"-o: cannot write there: {a_file} is a file, not a folder "
                               f"(got '{a_file / 'v'}')")
    (tmp_path / "v" / "validation.md").mkdir(parents=True)
    with pytest.raises(InputError) as info:
        H.check_output_folder(tmp_path / "v", ["validation.md"])
    assert str(info.value) == (f"-o: cannot write validation.md: "
                               f"{tmp_path / 'v' / 'validation.md'} is a folder "
                               f"(got '{tmp_path / 'v'}')")
    assert H.check_output_folder(tmp_path / "w", ["validation.md"]) == tmp_path / "w"


def test_check_output_folder_not_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(H.os, "access", lambda path, mode: False)  # as a read-only folder says
    with pytest.raises(InputError) as info:
        H.check_output_file(tmp_path / "x.toml")
    assert str(info.value) == (f"-o: cannot write there: the folder {tmp_path} is not writable "
                               f"(got '{tmp_path / 'x.toml'}')")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_check_output_unwritable_folder(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(InputError, match="is not writable"):
            H.check_output_file(locked / "x.toml")
    finally:
        locked.chmod(0o700)
