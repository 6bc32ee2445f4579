"""roofline.measure.hwfile: number formatting, the TOML writer, the read-back check against the
hardware reader, the checked write of a hardware file and the device name's check. The atomic
write and the checks of an output target are tested in test_output.py.

Expected values are worked by hand.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.errors import InputError, SpecError
from roofline.measure import hwfile as H
from roofline.output import write_atomic
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
    good = write_atomic(target, H.toml_document(doc), check=H.hardware_check(target))
    assert load_hardware(good).name == "ok"
    target.unlink()
    doc["name"] = ""
    with pytest.raises(SpecError) as info:
        write_atomic(target, H.toml_document(doc), check=H.hardware_check(target))
    # the message names the file that was not written, not the temporary one
    assert str(info.value) == f"{target}: name: must be a non-empty string; nothing was written (got '')"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, rule", [("", "must be a non-empty string"),
                                        ("   ", "must be a non-empty string"),
                                        ("\udcff", "must be UTF-8 text")])
def test_check_name_refuses(name: str, rule: str) -> None:
    with pytest.raises(InputError) as info:
        H.check_name(name)
    assert str(info.value) == f"name: {rule} (got {name!r})"  # the library's word


def test_check_name_accepts_any_printable_text() -> None:
    for name in ("this-machine", 'quote " and \\ backslash', "Zürich box #1"):
        H.check_name(name)  # no error


def test_write_hardware(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "hw.toml"
    assert H.write_hardware(target, _hardware_document("w"), "one line") == target
    assert target.read_text().startswith("# one line\n") and load_hardware(target).name == "w"
    doc = _hardware_document("w")
    doc["kind"] = "x"
    with pytest.raises(SpecError, match="kind: must be one of .*; nothing was written"):
        H.write_hardware(tmp_path / "bad.toml", doc)
    assert not (tmp_path / "bad.toml").exists()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError) as info:
        H.write_hardware(blocker / "hw.toml", _hardware_document("w"))
    assert str(info.value).startswith("output: cannot write the file: ")
    assert str(info.value).endswith(f"(got '{blocker / 'hw.toml'}')")
