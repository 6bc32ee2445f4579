"""Issue "Third sweep" (odd corners): files that parse but contradict physics, options that would
do nothing, a crossover past the model's context, a config's own head_dim. Each bad input is one
line naming where, which rule and the value, with exit status 2 from the command line."""

import json
import re
from pathlib import Path

import pytest

from roofline import api
from roofline.cli import main
from roofline.errors import InputError, SpecError
from roofline.evaluate import crossover_value
from roofline.specs.hardware import read_hardware
from roofline.specs.model import load_model, read_model

H100 = Path(api.setting("H100-SXM", "Llama-3-8B").hardware.path)


def _device(tmp_path: Path, old: str, new: str) -> Path:
    """H100-SXM's file with one line changed (``old`` must occur in it)."""
    text = H100.read_text(encoding="utf-8")
    assert re.search(old, text, re.M), old
    path = tmp_path / "device.toml"
    path.write_text(re.sub(old, new, text, count=1, flags=re.M), encoding="utf-8")
    return path


def _one_line(err: Exception, *words: str) -> None:
    message = str(err)
    assert "\n" not in message and all(w in message for w in words), message


@pytest.mark.parametrize("old, new, where, rule", [
    (r'^l2 = \{ value = "50 MB"', 'l2 = { value = "50 MB"', None, None),  # the control: loads
    (r'^sram_per_sm = \{ value = "228 KiB"', 'sram_per_sm = { value = "64 MB"',
     "on_chip.sram_per_sm", "is larger than on_chip.l2"),
    (r'^l2_bandwidth', 'l3 = { value = "16 MiB", source = "a test" }\nl2_bandwidth',
     "on_chip.l3", "is smaller than on_chip.l2"),
    (r'^\[interconnect\]', '[efficiency]\nbandwidth = { value = 1e-300, source = "a test" }\n\n'
     '[interconnect]', "efficiency.bandwidth", "must be at least 0.01"),
])
def test_a_device_file_against_physics_is_refused(tmp_path, old, new, where, rule):
    path = _device(tmp_path, old, new)
    if where is None:
        assert read_hardware(path).l2_bytes == 50e6
        return
    with pytest.raises(SpecError) as err:
        read_hardware(path)
    _one_line(err.value, where, rule)


def test_an_efficiency_of_1e_300_is_one_line_from_the_command(tmp_path, capsys):
    path = _device(tmp_path, r'^\[interconnect\]',
                   '[efficiency]\nbandwidth = { value = 1e-300, source = "a test" }\n\n'
                   '[interconnect]')
    assert main(["prefill", "--hardware", str(path), "--model", "Llama-3-8B"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "efficiency.bandwidth" in err and "1e-300" in err


def test_a_network_faster_than_the_link_inside_a_node_is_refused(tmp_path):
    """A network of 5 TB/s per device beside H100's NVLink (450 GB/s each way): a 16-way
    all-reduce across two nodes would beat the 8-way one inside a node."""
    text = (Path(api.__file__).parent.parent / "hardware" / "network" /
            "InfiniBand-NDR.toml").read_text(encoding="utf-8")
    path = tmp_path / "fast.toml"
    path.write_text(text.replace('value = "50 GB/s"', 'value = "5 TB/s"'), encoding="utf-8")
    with pytest.raises(InputError) as err:
        api.setting("H100-SXM", "Llama-3-8B", tp=16, network=str(path))
    assert err.value.option == "network"
    _one_line(err.value, "faster than H100-SXM's interconnect")
    api.setting("H100-SXM", "Llama-3-8B", tp=8, network=str(path))  # unused inside a node


@pytest.mark.parametrize("argv, option, rule", [
    (["--mla-decode", "naive"], "--mla-decode", "applies to a latent-attention model"),
    (["--kv-cache", "full"], "--kv-cache", "applies to a model with a sliding window"),
    (["--cp", "4", "--prompt", "3"], "--prompt", "must be at least 2·cp = 8 tokens"),
    (["--context", "1", "--prompt", "8192"], "--context", "must be at least the longest prompt"),
])
def test_an_option_that_would_do_nothing_is_refused(argv, option, rule, capsys):
    assert main(["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and option in err and rule in err


def test_the_same_options_where_they_apply():
    api.setting("H100-SXM", "DeepSeek-V2-Lite", mla_decode="naive")
    api.setting("H100-SXM", "Mistral-7B", kv_cache="full")
    api.prefill("H100-SXM", "Llama-3-8B", [8, 4096], cp=4)
    api.prefill("H100-SXM", "Llama-3-8B", [4096], context=4096)


def test_a_crossover_past_the_context_says_so():
    """Qwen2.5-7B (context 131,072) on H100: its KV cache fills the device at about 1.13 M
    tokens, said to lie past the context; the compute-bound crossover, inside it, says nothing
    of it."""
    s = api.setting("H100-SXM", "Qwen2.5-7B")
    far = crossover_value(s, "kv_cache_exceeds_memory_tokens")
    assert far.value > 131_072 and "beyond Qwen2.5-7B's context of 131,072 tokens" in far.reason
    near = crossover_value(s, "prefill_compute_bound_tokens.kernel")
    assert near.value < 131_072 and "beyond" not in near.reason


def test_a_config_with_its_own_head_dim_that_does_not_divide_the_width(tmp_path):
    """A config may give a head_dim that does not divide the width (Gemma-7B: 3,072 wide,
    16 heads of 256): it is taken as given, not refused as if it were derived."""
    config = json.loads(load_model("Llama-3-8B").path.read_text())
    path = tmp_path / "wide-heads.json"
    path.write_text(json.dumps({**config, "hidden_size": 3072, "num_attention_heads": 16,
                                "num_key_value_heads": 16, "head_dim": 256}))
    assert read_model(path).head_dim == 256
    path.write_text(json.dumps({**config, "hidden_size": 3000, "num_attention_heads": 16,
                                "num_key_value_heads": 16}))
    with pytest.raises(SpecError) as err:
        read_model(path)
    _one_line(err.value, "num_attention_heads", "when head_dim is not given")


@pytest.mark.parametrize("argv, option", [
    (["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "128",
      "--prompt", "4096"], "--prompt: given twice;"),
    (["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prom", "128",
      "--prompt=4096"], "--prompt: given twice (as --prom and --prompt)"),
    (["plot", "time", "--model", "Llama-3-8B", "-o", "a.png", "--output", "b.png"],
     "--output: given twice (as -o and --output)"),
    (["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "128", "--rate",
      "1", "--rate", "2"], "--rate: given twice;"),
    (["plot", "time", "--model", "Llama-3-8B", "-o", "a.png", "-oc.png"], "--output: given "
     "twice;"),
    (["plot", "time", "--model", "Llama-3-8B", "-oa.png", "--out", "b.png"], "--output: given "
     "twice (as -o and --out)"),
])
def test_an_option_given_twice_is_refused_not_the_last_kept(argv, option, capsys, tmp_path,
                                                            monkeypatch):
    """argparse keeps the last of a repeated option without a word: one of two prompt lengths
    meant would run. Refused in one line, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err
    assert list(tmp_path.iterdir()) == []
