"""Issue "Third sweep", errors and messages: every command and API call that used to end in a
traceback, echo a 300-digit number, accept what the other options refuse or exit 0 when its
output was lost now gives one line naming where, which rule and the value (exit status 2), or
the right answer."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import roofline
from roofline import api
from roofline.cli import main
from roofline.errors import InputError, SpecError, UnknownNameError
from roofline.specs.distribution import read_distribution
from roofline.specs.hardware import read_hardware

H100 = Path(api.setting("H100-SXM", "Llama-3-8B").hardware.path)
TTFT = ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "2048"]


def _console(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """The installed entry point (``console``), as a shell runs it."""
    code = "import sys; from roofline.cli import console; sys.argv[0] = 'roofline'; console()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, **kwargs)


def test_a_closed_standard_output_is_one_line_not_a_traceback():
    code = ("import os, sys; os.close(1); sys.stdout = None; from roofline.cli import console; "
            "sys.argv = ['roofline', 'hardware', 'list']; console()")
    run = subprocess.run([sys.executable, "-c", code], capture_output=False,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr == "roofline: error: standard output: cannot write: it is closed\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["prefill", "--help"], ["--version"]])
def test_help_that_cannot_be_written_is_an_error(args):
    code = "import sys; from roofline.cli import console; sys.argv[0] = 'roofline'; console()"
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-c", code, *args], stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr == "roofline: error: standard output: cannot write: No space left on device\n"


def test_version_goes_to_standard_output():
    run = _console("--version")
    assert run.returncode == 0 and run.stdout.startswith("roofline ") and run.stderr == ""


@pytest.mark.parametrize("text", ["1_0", "１0", "inf", "nan", "0x10", "1e", ""])
def test_rate_is_an_ascii_decimal_as_prompt_lengths_are(text, capsys):
    with pytest.raises(SystemExit) as done:  # a usage error, as argparse reports one
        main([*TTFT, f"--rate={text}"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err == (f"roofline: error: ttft: argument --rate: must be a decimal number in ASCII "
                   f"digits: {text!r}\n")


def test_a_huge_rate_is_echoed_as_written_not_as_300_digits(capsys):
    assert main([*TTFT, "--rate", "1e300"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("(got 1e+300)\n") and "00000000" not in err
    assert main([*TTFT, "--rate=-1"]) == 2
    assert capsys.readouterr().err == ("roofline: error: --rate: the arrival rate must be a "
                                       "finite number > 0 per second (got -1)\n")


@pytest.mark.parametrize("kwargs, option", [
    ({"prompt": 2048, "rate": 10**400}, "rate"),
    ({"prompt": 2048, "rate": 1, "slo": 10**400}, "slo"),
    ({"prompt_dist": 5}, "prompt_dist"),
    ({"prompt_dist": [0, 128]}, "prompt_dist"),
])
def test_the_api_refuses_out_of_range_numbers_in_one_line(kwargs, option):
    with pytest.raises(InputError) as err:
        roofline.ttft("H100-SXM", "Llama-3-8B", **kwargs)
    assert err.value.option == option and "\n" not in str(err.value)


def test_prompt_dist_takes_the_lengths_themselves():
    """A list of lengths is the distribution of equally likely lengths: its mean execution is
    the mean of the single-prompt executions, computed here one prompt at a time."""
    lengths = [128, 4096]
    one = [roofline.ttft("H100-SXM", "Llama-3-8B", prompt=n).mean_s for n in lengths]
    for given in (lengths, np.array(lengths), tuple(lengths)):
        got = roofline.ttft("H100-SXM", "Llama-3-8B", prompt_dist=given).mean_s
        assert got == pytest.approx(sum(one) / 2, rel=1e-12)


def test_get_refuses_a_name_that_is_not_a_string():
    with pytest.raises(InputError) as err:
        roofline.get(5)
    assert str(err.value) == ("name: a derivation is named by a string such as "
                              "'projection.flops' (got 5)")


def test_derive_finds_entries_by_words_of_their_meaning(capsys):
    from roofline.catalog import index

    meanings = {n: e["meaning"].lower() for n, e in index().items()}
    expected = sorted(n for n, m in meanings.items() if "fused" in f"{n} {m}".lower())
    assert expected  # the catalogue speaks of fused attention
    assert main(["derive", "fused", "--format", "json"]) == 0
    import json

    got = sorted(e["name"] for e in json.loads(capsys.readouterr().out))
    assert got == expected
    assert main(["derive", "score matrix", "--format", "json"]) == 0
    got = [e["name"] for e in json.loads(capsys.readouterr().out)]
    assert got and all("score" in meanings[n] and "matrix" in meanings[n] for n in got)
    with pytest.raises(UnknownNameError):
        roofline.catalog.select_names(["no such words at all"])


def test_numpy_integers_are_counts_and_an_empty_attention_is_refused():
    plain = roofline.prefill("H100-SXM", "Llama-3-8B", 2048, batch=2, tp=2)
    numpy = roofline.prefill("H100-SXM", "Llama-3-8B", 2048, batch=np.int64(2), tp=np.int32(2))
    assert numpy.points[0].time_s == plain.points[0].time_s
    with pytest.raises(InputError) as err:
        roofline.prefill("H100-SXM", "Llama-3-8B", 2048, attention="")
    assert err.value.option == "attention" and err.value.value == ""


def test_a_tiled_mode_on_a_device_without_sram_suggests_the_default_too(capsys):
    assert main(["prefill", "--hardware", "Gaudi3", "--model", "Llama-3-8B",
                 "--attention", "tiled"]) == 2
    err = capsys.readouterr().err
    assert "use kernel (the default), naive or ideal (got 'tiled')" in err


def test_a_hexadecimal_number_is_named_by_its_unit_not_called_zero(tmp_path):
    text = H100.read_text(encoding="utf-8").replace('value = "3.35 TB/s"',
                                                     'value = "0x1p1 TB/s"', 1)
    assert "0x1p1" in text
    path = tmp_path / "hex.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as err:
        read_hardware(path)
    assert "unknown unit 'x1p1 TB/s'" in str(err.value) and "positive" not in str(err.value)


def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + H100.read_bytes())
    assert read_hardware(path).bandwidth() == read_hardware(H100).bandwidth()


def test_a_form_feed_does_not_shift_line_numbers(tmp_path):
    path = tmp_path / "lengths.txt"
    path.write_text("128\n\f256\n0\n", encoding="utf-8")  # the bad line is the third
    with pytest.raises(InputError) as err:
        read_distribution(path)
    assert err.value.option == f"{path}:3"
    path.write_text("128\r\n\f256\r\n", encoding="utf-8")
    assert read_distribution(path).lengths.tolist() == [128, 256]


def test_docs_refuses_a_folder_where_a_page_goes_before_any_work(tmp_path, capsys,
                                                                  monkeypatch):
    import roofline.docs

    def never():
        raise AssertionError("the pages were built before the target was checked")

    monkeypatch.setattr(roofline.docs, "generate", never)
    (tmp_path / "crossovers.md").mkdir()
    assert main(["docs", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"roofline: error: --output: {tmp_path / 'crossovers.md'} is a folder; a file "
                   f"is written there (got '{tmp_path}')\n")
    assert [p.name for p in tmp_path.iterdir()] == ["crossovers.md"]


def test_errors_are_also_pythons_own_kinds(tmp_path):
    """A library caller may catch a bad value or file as ValueError, an unknown name as
    LookupError (the issue's sweep: InputError was not a ValueError)."""
    from roofline import api

    with pytest.raises(ValueError, match="batch"):
        api.setting("H100-SXM", "Llama-3-8B", batch=0)
    with pytest.raises(LookupError, match="H100-XYZ"):
        api.setting("H100-XYZ", "Llama-3-8B")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ValueError, match="bad.toml"):
        api.setting(str(bad), "Llama-3-8B")
