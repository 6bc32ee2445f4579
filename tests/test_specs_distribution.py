"""Prompt-length distribution files (roofline.specs.distribution): the format, and one message
per bad input."""

from __future__ import annotations

import pytest

from roofline.errors import InputError
from roofline.specs.distribution import MAX_TOKENS, Distribution, read_distribution


def test_read_distribution_formats(tmp_path):
    path = tmp_path / "lengths.txt"
    path.write_text("# a trace\n512\n\n2048,0.5   # half as likely\n512\n")
    dist = read_distribution(path)
    assert dist.lengths.tolist() == [512, 2048]
    assert dist.weights.tolist() == pytest.approx([2 / 2.5, 0.5 / 2.5])


def test_empty_distribution_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# only a comment\n\n")
    with pytest.raises(InputError, match=r"empty\.txt: holds no prompt lengths"):
        read_distribution(path)


RULE = (r"bad\.txt:2: a line is a positive integer length of at most 1,000,000,000 tokens in "
        r"ASCII digits, optionally ',weight' with a weight > 0")


@pytest.mark.parametrize("line", ["abc", "512,", "512,x", "-3", "0", "1.5", "512,0", "1,2,3",
                                  "512,-1", "512,inf",
                                  # integers that used to wrap or pass: 2⁶⁴ − 1 became −1 token
                                  "18446744073709551615", "1000000001", "+5",
                                  # digits Python's int() takes but a trace never holds
                                  "٥١٢", "²", "1_0", "５１２",
                                  # and weights so too (float() reads them)
                                  "512,1_0", "512,٥", "512, ５"])
def test_malformed_distribution_line(tmp_path, line):
    path = tmp_path / "bad.txt"
    path.write_text(f"128\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError, match=RULE) as info:
        read_distribution(path)
    assert info.value.value == line


def test_the_longest_prompt_is_allowed(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text(f"{10**9}\n0001\n")
    assert read_distribution(path).lengths.tolist() == [1, 10**9] and MAX_TOKENS == 10**9


def test_missing_distribution_file(tmp_path):
    path = tmp_path / "absent.txt"
    with pytest.raises(InputError) as info:
        read_distribution(path)
    assert str(info.value) == (f"prompt_dist: cannot read the file: No such file or directory "
                               f"(got '{path}')")  # no Python errno text
    with pytest.raises(InputError) as info:
        read_distribution(tmp_path)
    assert str(info.value) == (f"prompt_dist: is not a regular file (a directory); a "
                               f"prompt-length file must be a regular file (got '{tmp_path}')")


def test_a_fifo_is_refused_at_once(tmp_path):
    """A FIFO given as --prompt-dist hung, waiting for a writer: now refused before opening."""
    import os

    fifo = tmp_path / "lengths"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="^prompt_dist: is not a regular file"):
        read_distribution(fifo)


def test_distribution_file_not_utf8(tmp_path):
    path = tmp_path / "bin.txt"
    path.write_bytes(b"128\n\xff\xfe\n")
    with pytest.raises(InputError) as info:
        read_distribution(path)
    assert str(info.value) == f"prompt_dist: is not UTF-8 text (byte 4) (got '{path}')"


def test_distribution_of_validates():
    with pytest.raises(InputError, match="prompt lengths must be integers from 1 to 1,000,000,000"):
        Distribution.of([0, 5])
    with pytest.raises(InputError, match="prompt lengths must be integers from 1 to 1,000,000,000"):
        Distribution.of([2**64 - 1])  # numpy would make it −1 as an int64
    with pytest.raises(InputError, match="holds no prompt lengths"):
        Distribution.of([])


def test_weights_that_add_up_past_the_largest_float(tmp_path):
    # 1e308 + 1e308 = inf: the normalised weights were nan, and the error blamed the prefill
    # time ("must be > 0 seconds (got nan)")
    path = tmp_path / "o.txt"
    path.write_text("512,1e308\n2048,1e308\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{path}: the weights add up past the largest float: "
                                         r"give them on a smaller scale \(they are relative\) "
                                         r"\(got 1e\+308\)"):
        read_distribution(path)
    path.write_text("512,1e307\n2048,3e307\n", encoding="utf-8")
    assert read_distribution(path).weights.tolist() == [0.25, 0.75]
