"""Fuzzing the command line through its real entry point, ``roofline.cli.main(argv)``.

Hostile input of four kinds: hardware TOML files and model config JSON files (mutations of the
shipped ``hardware/H100-SXM.toml`` and ``models/Llama-3-8B.json``: values replaced by random
strings, numbers with and without units, huge integers, non-finite floats, Unicode digits,
nested tables and lists; keys dropped and added; a few characters of the text changed; and
files that parse but whose numbers contradict each other, each quantity scaled by 10^±8),
command-line options, and ``--prompt-dist`` files of ``roofline ttft``. Whatever the input,
the command finishes with status 0, or 2 with exactly one ``roofline: error:`` line on stderr
(argparse's usage errors raise ``SystemExit(2)`` from ``main``, with the same one line); no
traceback, no other exception out of ``main``.

Each property runs 100 to 200 examples (the parser built once for them all); the whole file
takes about 4 s.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import time
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.cli import main

ROOT = Path(__file__).resolve().parent.parent
HARDWARE = tomllib.loads((ROOT / "hardware" / "H100-SXM.toml").read_text(encoding="utf-8"))
MODEL = json.loads((ROOT / "models" / "Llama-3-8B.json").read_text(encoding="utf-8"))
# By path: a name would have every shipped file read to find it, on every call.
H100 = str(ROOT / "hardware" / "H100-SXM.toml")
LLAMA = str(ROOT / "models" / "Llama-3-8B.json")

# Every finding of this fuzzer has been fixed at its root (model types and sizes in
# roofline/specs/model.py, strict bounded integers in roofline/specs/numbers.py and the CLI,
# prompt-distribution lines in roofline/specs/distribution.py): nothing is narrowed out.


HUGE = "2" * 400  # a count of 10**400


def _not_known(data: dict) -> bool:
    """False for a model file of an architecture not shipped (tied embeddings, a GELU or ReLU
    MLP): that is no error, but its forms are derived with SymPy on first use, seconds of this
    test's budget."""
    if data.get("tie_word_embeddings") is True or str(data.get("hidden_act")).startswith(
            ("gelu", "relu")):
        return False
    return True


def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def run(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` with its output captured: (status, stdout, stderr); asserts the promise."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse: --help, or a usage error as one line
            code = stop.code
    stdout, stderr = out.getvalue(), err.getvalue()
    assert code in (0, 2), (argv, code, stderr)
    assert "Traceback" not in stderr, (argv, stderr)
    lines = stderr.splitlines()
    assert all(line.startswith("roofline: ") for line in lines), (argv, stderr)
    errors = [line for line in lines if line.startswith("roofline: error: ")]
    assert len(errors) == (1 if code == 2 else 0), (argv, stderr)
    if code == 2:
        assert stdout == "", (argv, stdout)
    return code, stdout, stderr


# --- values ---------------------------------------------------------------------------------
NUMBERS = ["1", "0", "-1", "3.35", "1e308", "1e309", "1e-400", "nan", "inf", "-inf", "1_000",
           "0x10", "١٢", "１２", "²", "1.5e3", "9" * 400, "", " ", "1,5", "+7", "1e", ".", "-0"]
UNITS = ["TFLOP/s", "TOP/s", "TB/s", "GB/s", "GB", "GiB", "KiB", "MB", "B", "FLOP/s", "s",
         "furlongs", "", "TB/s/s", "TFLOP", "µs", "kb", "Gbit/s"]
with_unit = st.builds(lambda n, u: f"{n} {u}".strip(), st.sampled_from(NUMBERS),
                      st.sampled_from(UNITS))
scalar = st.one_of(
    with_unit,
    st.sampled_from(NUMBERS),
    st.text(max_size=20),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 10**400, -(10**400), 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
value = st.recursive(scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=6)
new_key = st.one_of(st.sampled_from(["value", "source", "note", "name", "bf16", "fp8", "int4",
                                     "bandwidth", "capacity", "sram_per_sm", "extra", ""]),
                    st.text(max_size=10))


def _paths(data: dict, prefix: tuple = ()) -> list[tuple]:
    out = []
    for key, v in data.items():
        out.append((*prefix, key))
        if isinstance(v, dict):
            out += _paths(v, (*prefix, key))
    return out


def _mutated(base: dict, paths: list[tuple]) -> st.SearchStrategy[dict]:
    """``base`` with one to four mutations: a value replaced, a key dropped, a key added."""
    edit = st.tuples(st.sampled_from(["set", "set", "drop", "add"]), st.sampled_from(paths),
                     value, new_key)

    def apply(edits: list) -> dict:
        data = json.loads(json.dumps(base))  # a deep copy
        for how, path, v, key in edits:
            parent = data
            for k in path[:-1]:
                parent = parent.get(k) if isinstance(parent, dict) else None
            if not isinstance(parent, dict):
                continue
            if how == "set":
                parent[path[-1]] = v
            elif how == "drop":
                parent.pop(path[-1], None)
            else:
                target = parent.get(path[-1])
                (target if isinstance(target, dict) else parent)[key] = v
        return data

    return st.lists(edit, min_size=1, max_size=4).map(apply)


def _char_edit(text: str, edit: tuple[int, int, str]) -> str:
    """Replace ``cut`` characters at ``at`` by ``new``: a damaged file."""
    at, cut, new = edit
    at %= len(text) + 1
    return text[:at] + new + text[at + cut:]


char_edits = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3), st.text(max_size=3)),
                      max_size=2)


# --- TOML out of a dict (no writer in the standard library) ---------------------------------
def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) \
            else repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: the same escapes
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def toml(data: dict) -> str:
    lines = [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in data.items()
             if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines += ["", f"[{json.dumps(k)}]"]
            lines += [f"{json.dumps(kk)} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def test_the_toml_writer_round_trips_the_shipped_file() -> None:
    assert tomllib.loads(toml(HARDWARE)) == HARDWARE


# --- the properties ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module", autouse=True)
def _one_parser():
    """The argument parser built once for this module's thousands of calls (half of a call's
    time is building it); the parser itself is the real one."""
    import functools

    import roofline.cli as cli

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "_parser", functools.cache(cli._parser))
        yield


hardware_files = st.tuples(_mutated(HARDWARE, _paths(HARDWARE)), char_edits)
COMMANDS = [["hardware", "show", "{hw}"],
            ["prefill", "--hardware", "{hw}", "--model", LLAMA, "--prompt", "128,8192"],
            ["prefill", "--hardware", "{hw}", "--model", LLAMA, "--json", "--attention", "ideal"],
            ["crossover", "--hardware", "{hw}", "--model", LLAMA, "--json"]]


@fuzz(200)
@given(hardware_files, st.sampled_from(COMMANDS))
def test_hardware_files(folder: Path, file: tuple, command: list[str]) -> None:
    data, edits = file
    text = toml(data)
    for edit in edits:
        text = _char_edit(text, edit)
    path = folder / "device.toml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    code, out, _ = run([arg.format(hw=path) for arg in command])
    if code == 0 and "--json" in command:
        json.loads(out)  # strict JSON: no Infinity, no NaN
        assert "Infinity" not in out and "NaN" not in out


def _quantities(data: dict, prefix: tuple = ()) -> list[tuple]:
    """The paths of every ``{ value = "<number> <unit>" }`` entry of a hardware file."""
    out = []
    for key, v in data.items():
        if isinstance(v, dict) and isinstance(v.get("value"), str):
            out.append((*prefix, key))
        elif isinstance(v, dict):
            out += _quantities(v, (*prefix, key))
    return out


def _scaled(base: dict, scales: list[tuple[tuple, int]]) -> dict:
    """``base`` with each chosen quantity's number times 10^k: a file that parses, whose
    numbers may contradict each other (an SRAM larger than the L2, an L2 faster than the SRAM,
    an interconnect faster than the HBM)."""
    data = json.loads(json.dumps(base))
    for path, k in scales:
        entry = data
        for key in path:
            entry = entry[key]
        number, unit = entry["value"].split(" ", 1)
        entry["value"] = f"{float(number) * 10.0**k:.6g} {unit}"
    return data


physics = st.lists(st.tuples(st.sampled_from(_quantities(HARDWARE)), st.integers(-8, 8)),
                   min_size=1, max_size=4).map(lambda scales: _scaled(HARDWARE, scales))


@fuzz(150)
@given(physics, st.sampled_from(COMMANDS[1:]))
def test_hardware_files_against_physics(folder: Path, data: dict, command: list[str]) -> None:
    """Files that parse but whose numbers may contradict physics: refused in one line, or
    loaded with the rules the loader promises holding (hardware/README.md) and every time
    finite and positive (a slow device within the plausible ranges, a 99 MFLOP/s one, may take
    days: that is its answer)."""
    from roofline.specs.hardware import read_hardware

    path = folder / "physics.toml"
    path.write_text(toml(data), encoding="utf-8")
    code, out, _ = run([arg.format(hw=path) for arg in command])
    if code != 0:
        return
    hw = read_hardware(path)
    assert hw.sram_per_sm is None or hw.l2_bytes is None or hw.sram_per_sm <= hw.l2_bytes
    if command[0] == "prefill" and "--json" in command:
        for r in json.loads(out)["results"]:
            assert 0 < r["time_s"] < math.inf and all(0 <= o["time_s"] < math.inf
                                                      for o in r["operations"])


model_files = st.tuples(_mutated(MODEL, _paths(MODEL)).filter(_not_known), char_edits)
MODEL_COMMANDS = [["model", "show", "{mo}"],
                  ["prefill", "--hardware", H100, "--model", "{mo}", "--prompt", "1,4096"],
                  ["prefill", "--hardware", H100, "--model", "{mo}", "--json"],
                  ["crossover", "--hardware", H100, "--model", "{mo}"]]


@fuzz(200)
@given(model_files, st.sampled_from(MODEL_COMMANDS))
def test_model_files(folder: Path, file: tuple, command: list[str]) -> None:
    data, edits = file
    text = json.dumps(data)  # NaN, Infinity and huge integers included, as Python writes them
    for edit in edits:
        text = _char_edit(text, edit)
    path = folder / "config.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    code, out, _ = run([arg.format(mo=path) for arg in command])
    if code == 0 and "--json" in command:
        assert "Infinity" not in out and "NaN" not in out
        json.loads(out)


# --- command-line options ---------------------------------------------------------------------
OPTION_VALUES = st.one_of(
    st.sampled_from(["0", "-1", "1", "128", "128,2048", "128,,2048", ",", "1e400", "nan", "inf",
                     "١٢٨", "１２８", "9" * 40, HUGE, "", " ", "bf16", "fp8", "int4", "fp64",
                     "naive", "tiled", "tiled_fa2", "ideal", "flash", "H100-SXM", "Llama-3-8B",
                     "inter", "intra", "0.5", "1e-300", "-0", "+3", "0x10", "1_000"]),
    st.text(max_size=12))
# Not --hardware and --model: an unknown name reads every shipped file to list the close ones
# (tens of ms a call); the files are fuzzed above, names in test_any_words.
SETTING_FLAGS = ["--dtype", "--weight-dtype", "--kv-dtype", "--attention", "--batch"]
FLAGS = {
    "prefill": [*SETTING_FLAGS, "--prompt", "--context"],
    "crossover": SETTING_FLAGS,
    "ttft": ["--prompt", "--slo", "--parallel", "--speedup", "--replicas", "--dtype",
             "--attention", "--rate", "--batch-prompts", "--chunk"],
}
BASE = {"prefill": [f"--hardware={H100}", f"--model={LLAMA}", "--prompt=128"],
        "crossover": [f"--hardware={H100}", f"--model={LLAMA}"],
        "ttft": [f"--hardware={H100}", f"--model={LLAMA}", "--prompt=128", "--rate=1"]}


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(FLAGS)))
    options = draw(st.lists(st.tuples(st.sampled_from(FLAGS[command]), OPTION_VALUES),
                            min_size=1, max_size=3))
    argv = [command, *BASE[command]]
    argv += [f"{flag}={v}" for flag, v in options]  # '=': a value may be '-1'
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@fuzz(100)
@given(command_lines())
def test_command_line_options(argv: list[str]) -> None:
    code, out, _ = run(argv)
    if code == 0 and "--json" in argv:
        assert "Infinity" not in out and "NaN" not in out
        json.loads(out)


@fuzz(100)
@given(st.lists(st.one_of(st.text(max_size=6), OPTION_VALUES), max_size=4),
       st.sampled_from(["", "prefill", "crossover", "ttft", "derive", "hardware", "model",
                        "hardware show", "model show", "derive --format"]))
def test_any_words(words: list[str], command: str) -> None:
    run([*command.split(), *words])


# --- --prompt-dist files of roofline ttft -------------------------------------------------------
LENGTHS = st.one_of(st.integers(min_value=-5, max_value=10**6).map(str),
                    st.sampled_from(["0", "١٢٨", "１２８", "9" * 30, "1e3", "128.0", "", "+128",
                                     "0x80", "1_024", "²"]))
WEIGHTS = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.sampled_from(["0", "-1", "1e400", "nan", "inf", "", "0.25", "1/4",
                                     "١", "1e-320"]))
dist_lines = st.one_of(
    LENGTHS,
    st.builds(lambda n, w: f"{n},{w}", LENGTHS, WEIGHTS),
    st.builds(lambda n, w, x: f"{n},{w},{x}", LENGTHS, WEIGHTS, WEIGHTS),
    st.sampled_from(["# comment", "", "   ", "128 # chat", ",", "128,", ",1"]),
    st.text(max_size=10),
)


@fuzz(200)
@given(st.lists(dist_lines, max_size=8), st.booleans())
def test_prompt_distribution_files(folder: Path, lines: list[str], as_json: bool) -> None:
    path = folder / "prompts.txt"
    text = "\n".join(lines)
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    argv = ["ttft", "--hardware", H100, "--model", LLAMA, "--prompt-dist",
            str(path), "--rate", "1", *(["--json"] if as_json else [])]
    code, out, _ = run(argv)
    if code == 0 and as_json:
        assert "Infinity" not in out and "NaN" not in out
        json.loads(out)


# --- every command finishes quickly on any file up to the size limit ---------------------------
def test_large_hostile_files_fail_quickly(folder: Path) -> None:
    """About 1 MiB of hardware file and of model file, long strings and many keys: status 2
    within a generous bound of the promised 2 s."""
    hostile_hw = dict(HARDWARE)
    hostile_hw["notes"] = "x" * 400_000
    hostile_hw["memory"] = {**HARDWARE["memory"],
                            **{f"k{i}": {"value": f"{i} GB"} for i in range(20_000)}}
    hw = folder / "large.toml"
    hw.write_text(toml(hostile_hw), encoding="utf-8")
    hostile_model = {**MODEL, **{f"key_{i}": "y" * 20 for i in range(20_000)},
                     "model_type": "z" * 300_000}
    mo = folder / "large.json"
    mo.write_text(json.dumps(hostile_model), encoding="utf-8")
    for path in (hw, mo):
        assert 0.8 * 2**20 < path.stat().st_size < 1.2 * 2**20
    for argv in (["prefill", "--hardware", str(hw), "--model", LLAMA],
                 ["prefill", "--hardware", H100, "--model", str(mo)]):
        start = time.perf_counter()
        code, _, err = run(argv)
        took = time.perf_counter() - start
        # a hang or a quadratic walk over a megabyte takes far longer; 10 s leaves room for
        # a loaded machine's start of a process
        assert code == 2 and took < 10, (argv, took, err[:200])
        assert len(err) < 10_000, (argv, len(err))  # the one line names the value, shortened
