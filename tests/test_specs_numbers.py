"""Strict integers from the command line: ASCII digits only, positive, bounded; through the
library and through ``roofline prefill``."""

from __future__ import annotations

import re

import pytest

from roofline.cli import main
from roofline.cli.analyze import parse_ints
from roofline.errors import InputError
from roofline.specs import parse_positive_int as exported
from roofline.specs.numbers import MAX_COUNT, parse_positive_int


def test_exported_from_specs() -> None:
    assert exported is parse_positive_int


@pytest.mark.parametrize("text, expected", [
    ("1", 1), ("2048", 2048), ("007", 7), (str(MAX_COUNT), 10**9),
])
def test_accepts(text: str, expected: int) -> None:
    assert parse_positive_int(text, "prompt length") == expected


@pytest.mark.parametrize("text, rule", [
    ("\u0665\u0661\u0662", "must be a positive integer written with the digits 0-9"),  # ٥١٢
    ("\u00b2", "must be a positive integer written with the digits 0-9"),  # superscript two
    ("\uff15", "must be a positive integer written with the digits 0-9"),  # full-width 5
    ("1_0", "must be a positive integer"),
    ("+5", "must be a positive integer"),
    ("-3", "must be a positive integer"),
    (" 5", "must be a positive integer"),
    ("5 ", "must be a positive integer"),
    ("5x", "must be a positive integer"),
    ("1.0", "must be a positive integer"),
    ("1e3", "must be a positive integer"),
    ("", "must be a positive integer"),
    ("0", "must be a positive integer"),
    ("000", "must be a positive integer"),
    ("18446744073709551615", "must be at most 1,000,000,000"),  # 2**64 - 1: no wrap-around
    ("1000000001", "must be at most 1,000,000,000"),
])
def test_rejects(text: str, rule: str) -> None:
    with pytest.raises(InputError, match=re.escape(f"prompt length: {rule} (got {text!r})")):
        parse_positive_int(text, "prompt length")


def test_a_smaller_maximum() -> None:
    assert parse_positive_int("64", "x", maximum=64) == 64
    with pytest.raises(InputError, match=re.escape("x: must be at most 64 (got '65')")):
        parse_positive_int("65", "x", maximum=64)


def test_a_huge_text_is_refused_without_conversion() -> None:
    with pytest.raises(InputError, match=re.escape(
            "x: must be at most 1,000,000,000 (got 100,000 characters)")):
        parse_positive_int("9" * 100_000, "x")


def test_not_a_string() -> None:
    with pytest.raises(InputError, match=re.escape("x: must be a positive integer (got 5)")):
        parse_positive_int(5, "x")  # type: ignore[arg-type]


# --- parse_ints, the command line's reader of lists ------------------------------------------
def test_parse_ints() -> None:
    assert parse_ints("128, 2048 ,8192", "--prompt") == [128, 2048, 8192]
    assert parse_ints("4", "--batch", single=True) == [4]


@pytest.mark.parametrize("text, single, message", [
    ("1,2", True, "--batch: takes one value, not a comma-separated list (got '1,2')"),
    ("", True, "--batch: needs a value, e.g. 8 (got '')"),
    ("128,\u0665", False,
     "--batch: each value must be a positive integer written with the digits 0-9 (got '\u0665')"),
    ("128,18446744073709551615", False,
     "--batch: each value must be at most 1,000,000,000 (got '18446744073709551615')"),
])
def test_parse_ints_rejects(text: str, single: bool, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        parse_ints(text, "--batch", single=single)


# --- through the command line ----------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["--batch", "1,2"], "--batch: takes one value, not a comma-separated list (got '1,2')"),
    (["--prompt", "\u0665\u0661\u0662"],
     "--prompt: each value must be a positive integer written with the digits 0-9 (got "
     "'\u0665\u0661\u0662')"),
    (["--prompt", "18446744073709551615"],
     "--prompt: each value must be at most 1,000,000,000 (got '18446744073709551615')"),
    (["--prompt", "1_0"], "--prompt: each value must be a positive integer (got '1_0')"),
    (["--prompt", "+5"], "--prompt: each value must be a positive integer (got '+5')"),
    (["--batch", "\u00b2"],
     "--batch: must be a positive integer written with the digits 0-9 (got '\u00b2')"),
])
def test_prefill_options_one_line(capsys: pytest.CaptureFixture[str], argv: list[str],
                                  message: str) -> None:
    status = main(["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B", *argv])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err == f"roofline: error: {message}\n"
