"""Issue "Third sweep", resources: the prefill at many prompt lengths as numpy columns, the same
numbers as the table's records (a second road through the same generated code: numpy arrays
at once against one point at a time), and a command line that prints a bounded table."""

import warnings

import numpy as np
import pytest

import roofline
from roofline.cli import main
from roofline.errors import InputError

SETTINGS = [
    ("H100-SXM", "Llama-3-8B", {}),
    ("H100-SXM", "Llama-3-8B", {"attention": "naive"}),
    ("H100-SXM", "Llama-3-8B", {"tp": 2}),
    ("H100-SXM", "Llama-3-8B", {"tp": 2, "overlap": True}),
    ("H100-SXM", "Llama-3-8B", {"cp": 2}),
    ("H100-SXM", "Mixtral-8x7B", {"ep": 8}),
    ("MI300X", "Mistral-7B", {"dtype": "fp8"}),
    ("H200-SXM", "DeepSeek-V2-Lite", {"pp": 3}),
    ("TPU-v5e", "Gemma-2-9B", {}),
]


@pytest.mark.parametrize("hardware, model, options", SETTINGS)
def test_columns_are_the_tables_numbers(hardware, model, options):
    lengths = [4, 127, 128, 129, 2048, 8191, 50_000]
    with warnings.catch_warnings():  # beyond some models' context: evaluated all the same
        warnings.simplefilter("ignore")
        table = roofline.prefill(hardware, model, lengths, **options)
        cols = roofline.prefill_columns(hardware, model, np.array(lengths), **options)
    assert cols["prompt_tokens"].tolist() == lengths
    for key in ("time_s", "flops", "bytes", "intensity"):
        assert cols[key] == pytest.approx(getattr(table.points, key), rel=1e-12), key
    assert ["compute" if c else "memory" for c in cols["compute_bound"]] == table.points.bound
    if table.estimate is None:  # the estimate beside the bound, where the device has one
        assert "estimate_s" not in cols
    else:
        assert cols["estimate_s"] == pytest.approx(table.estimate["time_s"], rel=1e-12)
        assert np.all(cols["estimate_s"] >= cols["time_s"])


@pytest.mark.parametrize("prompts", [[0, 1], [[1, 2]], [1.5], [], np.array([2**40])])
def test_columns_refuse_what_the_table_refuses(prompts):
    with pytest.raises(InputError) as err:
        roofline.prefill_columns("H100-SXM", "Llama-3-8B", prompts)
    assert err.value.option == "prompts" and "\n" not in str(err.value)


def test_the_command_prints_a_bounded_table(capsys):
    lengths = ",".join(["9"] * 10_001)
    assert main(["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                 "--prompt", lengths]) == 2
    assert capsys.readouterr().err == (
        "roofline: error: --prompt: at most 10,000 prompt lengths in a table; for more, "
        "roofline.prefill_columns (Python) gives numpy columns (got '10,001 lengths')\n")
