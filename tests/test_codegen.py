"""The code that SymPy writes: its numbers against exact substitution into the SymPy forms (a
property test over devices, models, data types, degrees and prompt lengths, every operation of
the real prefill and decode forms), and the user's cache that keeps it: written atomically by
two processes at once, a read-only cache, a truncated, foreign or world-writable file (ignored,
never executed, written again), and a new key when a derivation source changes."""

import math
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sympy import Float, Integer

from roofline import api, codegen
from roofline.codegen import cache
from roofline.derive.architecture import ATTENTION_MODES
from roofline.errors import InputError
from roofline.evaluate.forms import forms, sympy_forms
from roofline.specs.hardware import list_hardware
from roofline.specs.model import list_models
from roofline.symbols import CATALOGUE

HARDWARE = {hw.name: hw for hw in list_hardware()}
MODELS = {m.name: m for m in list_models()}


def _exact(expr, numbers: dict) -> float:
    """``expr`` with every symbol's value put in exactly (integers as Integer, the rest as
    Float), as a float."""
    if not hasattr(expr, "xreplace"):  # a count written as a number
        return float(expr)
    at = {CATALOGUE[n].symbol: Integer(v) if isinstance(v, int) else Float(v, 30)
          for n, v in numbers.items() if n in CATALOGUE}
    return float(expr.xreplace(at))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300) or (a == b)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hw=st.sampled_from(sorted(HARDWARE)), model=st.sampled_from(sorted(MODELS)),
       mode=st.sampled_from(ATTENTION_MODES), tokens=st.integers(1, 2_000_000),
       context=st.integers(1, 2_000_000), batch=st.integers(1, 64),
       split=st.sampled_from([{}, {"tp": 2}, {"tp": 8}, {"ep": 8}, {"cp": 2}, {"pp": 2}]),
       data=st.data())
def test_generated_code_equals_exact_substitution(hw, model, mode, tokens, context, batch,
                                                   split, data):
    device = HARDWARE[hw]
    if mode.startswith("tiled") and device.sram_per_sm is None:
        return  # the tiled schedules need the SRAM size the device's file does not give
    dtype = data.draw(st.sampled_from(sorted(device.peak_flops)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = api.setting(device, MODELS[model], dtype=dtype, attention=mode, batch=batch,
                            **split)
    except InputError:  # a degree that the model or the device cannot take
        return
    exact, generated = sympy_forms(s.architecture, s.caches), forms(s.architecture, s.caches)
    # a device without an interconnect gives no link: its numbers for the forms that need one
    numbers = {"alpha_link": 1e-6, "beta_link": 1e11, **s.numbers(), "T": tokens,
               "T_ctx": context}
    # a limit or a network that constrains nothing (∞) as a finite number (exact substitution
    # takes none); the other infinite bandwidths are of levels the forms do not have
    numbers.update({k: v for k, v in (("M_node", 4), ("beta_net", 5e10))
                    if math.isinf(numbers[k])})
    numbers = {k: v for k, v in numbers.items() if not (isinstance(v, float) and math.isinf(v))}
    part = "prefill_parallel" if s.parallel else "prefill"
    pairs = [(exact[part][mode], generated[part][mode]),
             (exact["decode"], generated["decode"]), (exact["decode_tp"], generated["decode_tp"])]
    for ops, made in pairs:
        for op, code in zip(ops, made, strict=True):
            for key in ("count", "flops", "bytes"):
                assert _close(float(codegen.call(code[key], numbers)),
                              _exact(op[key], numbers)), (op["name"], key)
            for level, q in op["levels"].items():
                assert _close(float(codegen.call(code["levels"][level], numbers)),
                              _exact(q, numbers)), (op["name"], level)
    for key in ("weights", "kv_cache", "scores", "weights_parallel", "kv_cache_parallel"):
        assert _close(float(codegen.call(generated[key], numbers)),
                      _exact(exact[key], numbers)), key


def test_a_wrong_number_is_caught():
    """A negative control: the comparison fails where the generated code is off."""
    s = api.setting("H100-SXM", "Llama-3-8B")
    exact = sympy_forms(s.architecture, s.caches)["prefill"]["kernel"][0]["flops"]
    numbers = {**s.numbers(), "T": 2048}
    assert not _close(_exact(exact, numbers) * (1 + 1e-9), _exact(exact, numbers))


# --- the cache -------------------------------------------------------------------------------

PROBE = textwrap.dedent("""
    import json, sys
    from roofline import api
    point = api.prefill("H100-SXM", sys.argv[1], [2048]).points[0]
    print(json.dumps([point.time_s, point.bytes]))
""")


def _run(base: Path, model: str = "Llama-3-8B") -> subprocess.Popen:
    env = {**os.environ, "XDG_CACHE_HOME": str(base)}
    return subprocess.Popen([sys.executable, "-c", PROBE, model], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _module_files(base: Path) -> list[Path]:
    return sorted((base / "roofline").glob("*/prefill-kernel-*.py"))


def _whole(path: Path) -> bool:
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    return first == cache._HEADER + cache._digest(rest)


def test_two_processes_derive_the_same_model_at_once(tmp_path):
    runs = [_run(tmp_path) for _ in range(2)]
    outs = [r.communicate(timeout=300) for r in runs]
    assert all(r.returncode == 0 for r in runs), outs
    assert outs[0][0] == outs[1][0]
    (module,) = _module_files(tmp_path)
    assert _whole(module)
    assert not list(module.parent.glob(".*.tmp"))  # no temporary file left behind
    again = _run(tmp_path).communicate(timeout=300)
    assert again[0] == outs[0][0]


def test_a_cache_that_cannot_be_written_keeps_the_code_in_memory(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked / "cache"))
    cache.clear_memory()
    with pytest.warns(UserWarning, match="cannot be written") as caught:
        one = cache.load("probe-a", lambda: codegen.module_source("a", {"x": 1}))
        two = cache.load("probe-b", lambda: codegen.module_source("b", {"x": 2}))
        again = cache.load("probe-a", lambda: pytest.fail("made twice"))
    assert (one.DATA, two.DATA, again.DATA) == ({"x": 1}, {"x": 2}, {"x": 1})
    assert len([w for w in caught if "cannot be written" in str(w.message)]) == 1
    cache.clear_memory()


def _fresh_module(tmp_path, monkeypatch, name: str = "probe") -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache.load(name, lambda: codegen.module_source("probe", {"x": 1}))
    return cache.directory() / f"{name}.py"


def test_a_truncated_file_is_written_again(tmp_path, monkeypatch):
    path = _fresh_module(tmp_path, monkeypatch)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    assert cache.load("probe", lambda: codegen.module_source("probe", {"x": 1})).DATA == {"x": 1}
    assert _whole(path)


def test_a_tampered_file_is_never_executed(tmp_path, monkeypatch):
    path = _fresh_module(tmp_path, monkeypatch)
    marker = tmp_path / "ran"
    header = path.read_text(encoding="utf-8").partition("\n")[0]  # the old digest
    path.write_text(f"{header}\nopen({str(marker)!r}, 'w').close()\nDATA = 'evil'\n",
                    encoding="utf-8")
    assert cache.load("probe", lambda: codegen.module_source("probe", {"x": 1})).DATA == {"x": 1}
    assert not marker.exists()


@pytest.mark.parametrize("change", ["world-writable", "another owner"])
def test_a_file_others_may_write_is_written_again(tmp_path, monkeypatch, change):
    path = _fresh_module(tmp_path, monkeypatch)
    marker = tmp_path / "ran"
    body = f"open({str(marker)!r}, 'w').close()\nDATA = 'theirs'\n"
    path.write_text(cache._HEADER + cache._digest(body) + "\n" + body, encoding="utf-8")
    if change == "world-writable":
        path.chmod(0o666)
    else:
        if os.getuid() != 0:
            pytest.skip("changing a file's owner needs root")
        os.chown(path, 65534, 65534)
    assert cache.load("probe", lambda: codegen.module_source("probe", {"x": 1})).DATA == {"x": 1}
    assert not marker.exists()
    assert path.stat().st_uid == os.getuid() and not path.stat().st_mode & 0o022


def test_a_changed_derivation_source_gives_a_new_key(tmp_path, monkeypatch):
    """The key is a digest of the derivation sources and the SymPy version: a copy of the
    package with one derivation's docstring edited has another key."""
    root = Path(cache.__file__).parents[1]
    copy = tmp_path / "roofline"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    first = cache.key_of(copy)
    source = copy / "derive" / "projection.py"
    source.write_text(source.read_text(encoding="utf-8").replace('"""', '""" Edited.', 1),
                      encoding="utf-8")
    assert cache.key_of(copy) != first
    assert cache.key_of(root) == cache.key()
