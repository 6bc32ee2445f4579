"""Reading spec files safely: regular files only (checked before opening), a size limit, UTF-8,
and parser failures — deep nesting, over-long integers — as one line naming the file."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from roofline.errors import SpecError
from roofline.specs import read_text as exported
from roofline.specs.files import MAX_BYTES, parse_json, parse_toml, read_text
from roofline.specs.hardware import read_hardware
from roofline.specs.model import read_model


def test_exported_from_specs() -> None:
    assert exported is read_text


def test_reads_a_regular_file_and_a_link_to_one(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text("name = \"é\"\n", encoding="utf-8")
    link = tmp_path / "link.toml"
    link.symlink_to(path)
    assert read_text(path, "hardware file") == read_text(link) == "name = \"é\"\n"


def test_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "d.toml"
    folder.mkdir()
    with pytest.raises(SpecError, match=re.escape(
            f"{folder}: is not a regular file (a directory); a hardware file must be a regular "
            "file")):
        read_hardware(folder)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    start = time.perf_counter()
    with pytest.raises(SpecError, match=re.escape(
            f"{fifo}: is not a regular file (a FIFO); a model config must be a regular file")):
        read_model(fifo)
    assert time.perf_counter() - start < 1


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_at_once() -> None:
    start = time.perf_counter()
    with pytest.raises(SpecError, match=re.escape(
            "/dev/zero: is not a regular file (a character device); a hardware file must be a "
            "regular file")):
        read_hardware("/dev/zero")
    assert time.perf_counter() - start < 1


def test_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (MAX_BYTES + 1))
    with pytest.raises(SpecError, match=re.escape(
            f"{path}: is too large (1,048,577 bytes); a model config must be at most 1,048,576 "
            "bytes")):
        read_model(path)


def test_a_smaller_limit(tmp_path: Path) -> None:
    path = tmp_path / "p.txt"
    path.write_text("12345")
    assert read_text(path, "prompt file", max_bytes=5) == "12345"
    with pytest.raises(SpecError, match=re.escape(
            f"{path}: is too large (5 bytes); a prompt file must be at most 4 bytes")):
        read_text(path, "prompt file", max_bytes=4)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(SpecError, match=re.escape(f"{path}: is not UTF-8 text (byte 7)")):
        read_model(path)


def test_missing(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=re.escape(
            f"{tmp_path / 'no.json'}: cannot read the file: No such file or directory")):
        read_text(tmp_path / "no.json")


# --- parser failures as one line -------------------------------------------------------------
@pytest.mark.parametrize("body", [
    "a = " + "[" * 5000 + "]" * 5000,
    "a = " + "{ b = " * 5000 + "1" + " }" * 5000,
])
def test_deep_toml(tmp_path: Path, body: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(body)
    with pytest.raises(SpecError, match=re.escape(f"{path}: is not valid TOML: nested too "
                                                  "deeply")):
        read_hardware(path)


@pytest.mark.parametrize("body", ["[" * 100_000 + "]" * 100_000,
                                  '{"a": ' * 50_000 + "1" + "}" * 50_000])
def test_deep_json(tmp_path: Path, body: str) -> None:
    path = tmp_path / "deep.json"
    path.write_text(body)
    with pytest.raises(SpecError, match=re.escape(f"{path}: is not valid JSON: nested too "
                                                  "deeply")):
        read_model(path)


def test_integer_of_too_many_digits(tmp_path: Path) -> None:
    digits = sys.get_int_max_str_digits() or 4300
    json_path, toml_path = tmp_path / "big.json", tmp_path / "big.toml"
    json_path.write_text('{"model_type": "llama", "vocab_size": 1' + "0" * digits + "}")
    toml_path.write_text("name = 1" + "0" * digits + "\n")
    # said in the file's terms: Python's own words advised sys.set_int_max_str_digits()
    with pytest.raises(SpecError, match=re.escape(f"{json_path}: is not valid JSON: an integer "
                                                  f"of more than {digits:,} digits")) as info:
        read_model(json_path)
    assert len(str(info.value)) < 300
    with pytest.raises(SpecError, match=re.escape(f"{toml_path}: is not valid TOML: an integer "
                                                  f"of more than {digits:,} digits")):
        read_hardware(toml_path)


def test_parse_helpers_pass_good_text() -> None:
    assert parse_toml("a = 1", "x") == {"a": 1}
    assert parse_json('{"a": [1]}', "x") == {"a": [1]}


def test_a_json_key_given_twice_is_refused():
    # the last one won: hidden_size 4096 then 8192 read as 8192, an 18.7 B model shown as is
    with pytest.raises(SpecError, match=r"^c\.json: is not valid JSON: the key 'hidden_size' is "
                                        r"given twice in one object$"):
        parse_json('{"hidden_size": 4096, "x": {"a": 1}, "hidden_size": 8192}', "c.json")
    with pytest.raises(SpecError, match="the key 'a' is given twice"):
        parse_json('{"x": {"a": 1, "a": 2}}', "c.json")
    assert parse_json('{"x": {"a": 1}, "y": {"a": 2}}', "c.json") == {"x": {"a": 1},
                                                                       "y": {"a": 2}}
