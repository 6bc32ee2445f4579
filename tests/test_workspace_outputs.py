"""The prefill's live activations in every output that speaks of memory (issue 29): the longest
prompt that fits is a crossover like the others, the memory line and its JSON count the
activations, the warning fires where the peak outgrows the device, and ``ttft --chunk`` names
the largest chunk that fits. Values held against arithmetic written out here."""

import math
import warnings

import pytest

from roofline import api
from roofline.evaluate import check_memory, crossover_value, peak_bytes

L4 = 24_000_000_000  # bytes: the L4 file's memory.capacity
WEIGHTS = 16_060_522_496  # Llama-3-8B in bf16 (its 8,030,261,248 parameters × 2)


def _setting(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return api.setting("L4", "Llama-3-8B", attention=mode)


def test_the_longest_prompt_on_l4_by_hand():
    """Kernel attention: at long prompts the MLP phase binds, per token the KV cache
    2·L·n_kv·H·2 = 131,072 bytes and the live residual, input, gate-up (2F), product (F) and
    down output (D), (3D + 3F)·2 = 110,592 bytes: (24e9 − weights) / 241,664 tokens."""
    c = crossover_value(_setting("kernel"), "prefill_exceeds_memory_tokens.kernel")
    assert c.value == pytest.approx((L4 - WEIGHTS) / 241_664, rel=1e-12)
    assert math.floor(c.value) == 32_853


@pytest.mark.parametrize("mode", ["naive", "kernel"])
def test_the_warning_and_the_footprint_change_at_the_crossover(mode):
    s = _setting(mode)
    c = crossover_value(s, f"prefill_exceeds_memory_tokens.{mode}")
    lo = math.floor(c.value)
    assert peak_bytes(s, lo) <= L4 < peak_bytes(s, lo + 1)
    assert check_memory(s, lo, "the prefill") is None
    message = check_memory(s, lo + 1, "the prefill")
    assert message is not None and "live activations" in message


def test_naive_attention_holds_two_score_matrices():
    """Naive attention's softmax writes P beside S (not in place): at 4,096 tokens the peak is
    the weights, the KV cache (131,072 bytes a token) and the softmax phase: two matrices of
    n_q·T² at 2 bytes, the residual and input (2·T·D·2) and QKV (T·(n_q + 2·n_kv)·H·2)."""
    t = 4096
    expected = (WEIGHTS + 131_072 * t + 2 * 32 * t * t * 2 + 2 * t * 4096 * 2
                + t * (32 + 16) * 128 * 2)
    assert peak_bytes(_setting("naive"), t) == pytest.approx(expected, rel=1e-12)


def test_the_memory_line_and_json_count_the_activations():
    table = api.prefill("L4", "Llama-3-8B", [2048])
    m = table.as_dict()["memory"]
    # kernel attention at 2,048 tokens: the MLP phase, (3D + 3F)·T·2 bytes
    assert m["activations"] == pytest.approx((3 * 4096 + 3 * 14336) * 2048 * 2, rel=1e-12)
    assert m["free"] == pytest.approx(L4 - m["weights"] - m["kv_cache"] - m["activations"])
    assert "live activations at their peak" in str(table)
    parallel = api.prefill("H100-SXM", "Llama-3-8B", [2048], tp=2)
    assert "activations" not in parallel.as_dict()["memory"]
    assert "not derived here" in str(parallel)


def test_ttft_names_the_largest_chunk_that_fits():
    with pytest.warns(UserWarning, match="its live activations"):  # the one-shot prefill's
        r = api.ttft("L4", "Llama-3-8B", prompt=8192, chunk=1024, attention="naive").as_dict()
    fits = r["chunking"]["largest_chunk_that_fits"]
    # a chunk of C rows over 8,192 keys: two C × 8,192 score matrices per head beside the rest
    assert fits is not None and 1 < fits < 8192
