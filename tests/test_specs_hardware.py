"""Hardware files: every shipped file loads; figures against public datasheets; every bad input
rejected with a message that names the file, the key, the rule and the value."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from roofline.errors import InputError, SpecError, UnknownNameError
from roofline.specs.hardware import Hardware, list_hardware, load_hardware, read_hardware

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "hardware"
SHIPPED = sorted((REPO / "hardware").glob("*.toml"))
EXPECTED_NAMES = {
    "A100-40GB-SXM", "A100-80GB-SXM", "A100-80GB-PCIe", "H20", "H100-SXM", "H100-PCIe",
    "H200-SXM", "B200", "L4", "L40S", "RTX-4090", "MI300X", "MI325X", "TPU-v4", "TPU-v5e", "TPU-v5p",
    "TPU-v6e", "Gaudi2", "Gaudi3",
}


# --- the shipped files ---------------------------------------------------------------------
def test_every_expected_device_is_shipped() -> None:
    assert {hw.name for hw in list_hardware()} == EXPECTED_NAMES


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_file_loads(path: Path) -> None:
    hw = read_hardware(path)
    assert hw.name == path.stem  # file name = <name>.toml
    assert "bf16" in hw.peak_flops
    quantities = {f"peak_flops.{d}" for d in hw.peak_flops} | {"memory.bandwidth",
                                                              "memory.capacity"}
    assert quantities <= set(hw.sources)
    assert all(source.strip() for source in hw.sources.values())
    # Sanity bounds of any accelerator of 2020-2025, in SI base units.
    assert 1e13 < hw.peak_flops["bf16"] < 1e16  # FLOP/s
    assert 1e11 < hw.memory_bandwidth < 1e14  # bytes/s
    assert 1e10 < hw.memory_capacity < 1e12  # bytes
    if hw.sram_per_sm is not None:
        assert 2**15 <= hw.sram_per_sm <= 2**28


def test_unsure_figures_are_explained_in_notes() -> None:
    for name in ("B200", "L4", "L40S", "MI300X", "MI325X", "Gaudi2"):
        assert "UNSURE" in load_hardware(name).notes, name


# --- figures against the datasheets and the scaling-book --------------------------------
def test_h100_sxm_figures_and_ridge() -> None:
    hw = load_hardware("H100-SXM")
    assert hw.peak_flops["bf16"] == pytest.approx(989.4e12)
    assert hw.peak_flops["int8"] == pytest.approx(1978.9e12)  # "1978.9 TOP/s"
    assert hw.memory_bandwidth == pytest.approx(3.35e12)
    assert hw.memory_capacity == pytest.approx(80e9)
    assert hw.sram_per_sm == 228 * 1024 == 233472  # "228 KiB": binary
    assert hw.l2_bytes == 50_000_000  # "50 MB": decimal
    assert hw.sm_count == 132
    # H100 SXM bf16 ridge: 989.4e12 / 3.35e12 ≈ 295 (datasheet figures).
    assert hw.ridge("bf16") == pytest.approx(295.3, abs=0.05)


@pytest.mark.parametrize("name, ridge, tolerance", [
    ("A100-80GB-SXM", 153.0, 0.1),  # 312e12 / 2.039e12 ≈ 153 (datasheet)
    ("TPU-v5e", 240.0, 1.0),  # scaling-book: 1.97e14 / 8.2e11 ≈ 240
    ("A100-40GB-SXM", 312 / 1.555, 1e-9),
    ("A100-80GB-PCIe", 312 / 1.935, 1e-9),  # A100 datasheet: 80GB PCIe 312 TFLOPS, 1,935 GB/s
])
def test_ridge(name: str, ridge: float, tolerance: float) -> None:
    assert load_hardware(name).ridge("bf16") == pytest.approx(ridge, abs=tolerance)


def test_tpu_v5e_vmem_is_binary() -> None:
    assert load_hardware("TPU-v5e").sram_per_sm == 128 * 2**20


def test_rtx_4090_uses_fp32_accumulate_rate() -> None:
    # 128 SMs x 512 FLOP/clock/SM (FP32 accumulate: the whitepaper's 165.2 at 2.52 GHz) x the
    # 3,105 MHz maximum graphics clock (tests/test_consumer_peaks.py)
    assert load_hardware("RTX-4090").peak_flops["bf16"] == pytest.approx(128 * 512 * 3.105e9)


# --- the dataclass ---------------------------------------------------------------------------
def test_good_fixture_every_field() -> None:
    hw = read_hardware(FIXTURES / "good.toml")
    assert isinstance(hw, Hardware)
    assert (hw.name, hw.vendor, hw.kind) == ("Test-Device", "Nobody", "accelerator")
    assert hw.memory_capacity == 16 * 2**30
    assert hw.l2_bytes == 40e6
    assert hw.interconnect_bandwidth == 600e9
    assert hw.sm_count == 100 and isinstance(hw.sm_count, int)
    assert hw.ranges["memory.bandwidth"] == pytest.approx((0.9e12, 1.1e12))
    assert hw.quantity_notes["peak_flops.int8"] == "integer operations"
    assert dict(hw.provenance) == {"cpu": "fixture CPU", "threads": "4"}
    # Efficiencies scale the peaks: 100e12 × 0.7 and 1e12 × 0.8.
    assert hw.peak("bf16") == pytest.approx(70e12)
    assert hw.bandwidth() == pytest.approx(0.8e12)
    assert hw.ridge("bf16") == pytest.approx(70e12 / 0.8e12)


def test_efficiency_defaults_to_pure_roofline() -> None:
    hw = load_hardware("H100-SXM")
    assert (hw.flops_efficiency, hw.bandwidth_efficiency) == (1.0, 1.0)
    assert hw.peak("bf16") == hw.peak_flops["bf16"]


def test_hardware_is_frozen() -> None:
    hw = load_hardware("H100-SXM")
    with pytest.raises(AttributeError):
        hw.memory_bandwidth = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        hw.peak_flops["bf16"] = 1.0  # type: ignore[index]


def test_peak_of_a_missing_dtype() -> None:
    with pytest.raises(InputError, match=re.escape(
            "dtype: A100-80GB-SXM has no fp8; it has: bf16, fp16, fp32, int8 (got 'fp8')")):
        load_hardware("A100-80GB-SXM").peak("fp8")


def test_as_dict_is_json_ready() -> None:
    data = json.loads(json.dumps(load_hardware("H100-SXM").as_dict()))
    assert data["path"].endswith("H100-SXM.toml")
    assert data["memory_bandwidth"] == pytest.approx(3.35e12)
    assert data["peak_flops"]["bf16"] == pytest.approx(989.4e12)
    assert data["sram_per_sm"] == 233472
    assert "datasheet" in data["sources"]["memory.bandwidth"]


# --- names and paths -----------------------------------------------------------------------
def test_load_by_path(tmp_path: Path) -> None:
    copy = tmp_path / "mine.toml"
    shutil.copy(FIXTURES / "good.toml", copy)
    assert load_hardware(str(copy)).name == "Test-Device"
    assert load_hardware(copy).path == copy


def test_unknown_name_lists_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown hardware 'Z80'; valid names: "
                       r"A100-40GB-SXM, A100-80GB-PCIe, A100-80GB-SXM, B200, .*TPU-v6e$"):
        load_hardware("Z80")


def test_names_match_exactly_never_approximately() -> None:
    with pytest.raises(UnknownNameError,
                       match=r"unknown hardware 'H100'; close matches: .*H100-SXM"):
        load_hardware("H100")
    with pytest.raises(UnknownNameError):
        load_hardware("h100-sxm")


def test_two_files_with_one_name(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "good.toml", tmp_path / "a.toml")
    shutil.copy(FIXTURES / "good.toml", tmp_path / "b.toml")
    with pytest.raises(SpecError, match=re.escape(
            f"{tmp_path / 'b.toml'}: name: is also the name in {tmp_path / 'a.toml'}; "
            "names must be unique (got 'Test-Device')")):
        list_hardware(directory=tmp_path)


def test_list_of_a_directory(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "good.toml", tmp_path / "a.toml")
    assert [hw.name for hw in list_hardware(directory=tmp_path)] == ["Test-Device"]
    assert load_hardware("Test-Device", directory=tmp_path).vendor == "Nobody"


# --- bad input: one fixture each -----------------------------------------------------------
BAD = [
    ("invalid_toml", "", "is not valid TOML", None),
    ("not_utf8", "", "is not UTF-8 text (byte 0)", None),
    ("missing_key", "vendor", "missing required key", None),
    ("missing_capacity", "memory.capacity", "missing required key", None),
    ("missing_source", "on_chip.l2: source", "missing required key", None),
    ("unknown_key", "colour", "unknown top-level key; allowed: efficiency, estimate, interconnect",
     "colour"),
    ("unknown_quantity_key", "memory.capacity.unit",
     "unknown key of a quantity; allowed: max, min, note, source, value", "unit"),
    ("unknown_dtype", "peak_flops.bf17",
     "unknown data type; allowed: bf16, fp16, fp32, fp4, fp64, fp8, int8, tf32", "bf17"),
    ("not_a_number", "memory.bandwidth", "must be a number and a unit", "fast TB/s"),
    ("zero", "memory.bandwidth", "must be positive (> 0)", "0 TB/s"),
    ("negative", "peak_flops.bf16", "must be positive (> 0)", "-100 TFLOP/s"),
    ("nan", "memory.capacity", "must be a number, not NaN", "nan GiB"),
    ("infinite", "peak_flops.bf16", "must be finite", "inf TFLOP/s"),
    ("wrong_dimension", "memory.bandwidth",
     'must be a bandwidth in bytes/s (e.g. "3.35 TB/s"), but its unit is bytes', "3.35 TB"),
    ("unknown_unit", "interconnect.bandwidth", "unknown unit 'XB/s'", "600 XB/s"),
    ("bad_kind", "kind", "must be one of gpu, tpu, accelerator, cpu", "fpga"),
    ("efficiency_above_one", "efficiency.flops", "must be a fraction in (0, 1]", 1.5),
    ("sm_count_not_integer", "on_chip.sm_count", "must be an integer", 100.5),
    ("outside_range", "memory.bandwidth", "min ≤ value ≤ max must hold", None),
    ("provenance_not_string", "provenance.threads", "must be a string", 4),
]


@pytest.mark.parametrize("fixture, key, rule, value", BAD, ids=[b[0] for b in BAD])
def test_bad_input(fixture: str, key: str, rule: str, value: object) -> None:
    path = FIXTURES / f"{fixture}.toml"
    with pytest.raises(SpecError) as info:
        read_hardware(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}" if key else f"{path}: ")
    assert rule in message
    if value is not None:
        assert message.endswith(f"(got {value!r})")


def test_bad_input_fixture_differs_from_good_one_only_in_its_fault() -> None:
    # Each bad fixture, with its fault undone, must load: the fault alone is what is tested.
    read_hardware(FIXTURES / "good.toml")
    for fixture in ("zero", "nan", "wrong_dimension"):
        assert (FIXTURES / f"{fixture}.toml").read_text().count("\n") == \
            (FIXTURES / "good.toml").read_text().count("\n") + 1


def test_missing_file() -> None:
    with pytest.raises(SpecError, match="no-such.toml: cannot read the file"):
        load_hardware("no-such.toml")


# --- shipped data found from anywhere ------------------------------------------------------
_PROBE = ("from roofline.specs.hardware import load_hardware; "
          "from roofline.specs.model import load_model; "
          "hw = load_hardware('H100-SXM'); m = load_model('Llama-3-8B'); "
          "print(hw.path); print(m.path); print(hw.memory_bandwidth, m.parameters)")


def _probe(cwd: Path, pythonpath: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120, check=True)
    return done.stdout.split("\n")


def test_source_checkout_lookup_from_another_directory(tmp_path: Path) -> None:
    lines = _probe(tmp_path, REPO)
    assert lines[0] == str(REPO / "hardware" / "H100-SXM.toml")
    assert lines[1] == str(REPO / "models" / "Llama-3-8B.json")
    assert lines[2] == "3350000000000.0 8030261248"


def test_installed_package_lookup_from_another_directory(tmp_path: Path) -> None:
    # Lay the package out as pyproject.toml installs it: hardware/ → roofline/hardware_files,
    # models/ → roofline/model_files (package data, no __init__.py).
    site = tmp_path / "site"
    shutil.copytree(REPO / "roofline", site / "roofline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "hardware", site / "roofline" / "hardware_files")
    shutil.copytree(REPO / "models", site / "roofline" / "model_files")
    work = tmp_path / "elsewhere"
    work.mkdir()
    lines = _probe(work, site)
    assert lines[0] == str(site / "roofline" / "hardware_files" / "H100-SXM.toml")
    assert lines[1] == str(site / "roofline" / "model_files" / "Llama-3-8B.json")
    assert lines[2] == "3350000000000.0 8030261248"


# --- plausible ranges: a small bad file each, written here ---------------------------------
def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = (FIXTURES / "good.toml").read_text()
    assert text.count(old) == 1, old
    path = tmp_path / "variant.toml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize("old, new, key, rule, value", [
    ('"1 TB/s", source', '"5e-324 B/s", source', "memory.bandwidth",
     "is 4.941e-324 bytes/s, outside the plausible range [1e+06, 1e+16] bytes/s", "5e-324 B/s"),
    ('"100 TFLOP/s"', '"1e-200 FLOP/s"', "peak_flops.bf16",
     "is 1e-200 FLOP/s, outside the plausible range [1e+06, 1e+20] FLOP/s", "1e-200 FLOP/s"),
    ('"100 TFLOP/s"', '"1e400 FLOP/s"', "peak_flops.bf16", "must be finite", "1e400 FLOP/s"),
    ('"200 TOP/s"', '"1000 EOP/s"', "peak_flops.int8",
     "is 1e+21 FLOP/s, outside the plausible range [1e+06, 1e+20] FLOP/s", "1000 EOP/s"),
    ('"16 GiB"', '"2 PB"', "memory.capacity",
     "is 2e+15 bytes, outside the plausible range [1e+06, 1e+15] bytes", "2 PB"),
    ('"16 GiB"', '"512 KiB"', "memory.capacity",
     "is 5.243e+05 bytes, outside the plausible range [1e+06, 1e+15] bytes", "512 KiB"),
    ('"192 KiB"', '"2 GiB"', "on_chip.sram_per_sm",
     "is 2.147e+09 bytes, outside the plausible range [1024, 1.074e+09] bytes", "2 GiB"),
    ('"192 KiB"', '"512 B"', "on_chip.sram_per_sm",
     "is 512 bytes, outside the plausible range [1024, 1.074e+09] bytes", "512 B"),
    ('"40 MB"', '"1 TB"', "on_chip.l2",
     "is 1e+12 bytes, outside the plausible range [1024, 1.718e+10] bytes", "1 TB"),
    ('"600 GB/s"', '"100 PB/s"', "interconnect.bandwidth",
     "is 1e+17 bytes/s, outside the plausible range [1e+06, 1e+16] bytes/s", "100 PB/s"),
    ('value = 100,', "value = 2000000,", "on_chip.sm_count",
     "must be an integer in the plausible range [1, 1,000,000]", 2_000_000),
    ('value = 100,', "value = 1" + "0" * 400 + ",", "on_chip.sm_count",
     "must be an integer in the plausible range [1, 1,000,000]", "an integer of 401 digits"),
    ('value = 100,', "value = true,", "on_chip.sm_count", "must be an integer", True),
    ('min = "0.9 TB/s"', 'min = "1 B/s"', "memory.bandwidth.min",
     "is 1 bytes/s, outside the plausible range [1e+06, 1e+16] bytes/s", "1 B/s"),
    ('"1 TB/s", source', '"1 KiFLOP/s", source', "memory.bandwidth",
     "binary prefix 'Ki' on FLOP: binary prefixes are for bytes only", "1 KiFLOP/s"),
    ('"1 TB/s", source', '"3.35 TB per s", source', "memory.bandwidth",
     "unknown unit 'TB per s'; accepted: ", "3.35 TB per s"),
])
def test_out_of_plausible_range(tmp_path: Path, old: str, new: str, key: str, rule: str,
                                value: object) -> None:
    path = _variant(tmp_path, old, new)
    with pytest.raises(SpecError) as info:
        read_hardware(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}: {rule}")
    assert message.endswith(f"(got {value!r})") and "\n" not in message


def test_the_range_bounds_themselves_are_accepted(tmp_path: Path) -> None:
    path = _variant(tmp_path, '"192 KiB"', '"1 GiB"')
    path.write_text(re.sub(r'(?m)^l2 = .*$', '', path.read_text()))  # no L2 for it to exceed
    assert read_hardware(path).sram_per_sm == 2**30
    path = _variant(tmp_path, '"192 KiB"', '"1 KiB"')
    assert read_hardware(path).sram_per_sm == 1024


def test_out_of_range_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    path = _variant(tmp_path, '"1 TB/s", source', '"5e-324 B/s", source')
    assert main(["hardware", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"roofline: error: {path}: memory.bandwidth: is 4.941e-324 bytes/s, outside the "
        "plausible range [1e+06, 1e+16] bytes/s (got '5e-324 B/s')\n")


def test_a_fifo_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    assert main(["hardware", "show", str(fifo)]) == 2
    assert capsys.readouterr().err == (
        f"roofline: error: {fifo}: is not a regular file (a FIFO); a hardware file must be a "
        "regular file\n")


# --- capacities in the vendor's own prefix ---------------------------------------------------
# name: (memory capacity in bytes, on-chip SRAM per SM / CU / core in bytes or None), written
# out by hand from each public source (decimal GB = 10**9 where the vendor prints GB; GiB = 2**30
# and KiB = 2**10 where the vendor's document states binary units):
CAPACITIES: dict[str, tuple[int, int | None]] = {
    # NVIDIA A100 datasheet: "40GB HBM2"; A100 whitepaper: shared memory up to 164 KB (KiB) / SM
    "A100-40GB-SXM": (40_000_000_000, 167_936),
    # NVIDIA A100 datasheet: "80GB HBM2e"; A100 whitepaper: 164 KB (KiB) per SM
    "A100-80GB-SXM": (80_000_000_000, 167_936),
    "A100-80GB-PCIe": (80_000_000_000, 167_936),
    # willitrunai.com/gpus/h20-96gb: "96 GB HBM3"; CUDA guide: 228 KB (KiB) per SM for CC 9.0
    "H20": (96_000_000_000, 233_472),
    # NVIDIA HGX B200 specification: "180GB HBM3e"; 228 KiB per SM assumed from CC 9.0
    "B200": (180_000_000_000, 233_472),
    # Intel Gaudi 2: "96 GB HBM2E"; its 48 MB SRAM is chip-wide (no per-core figure)
    "Gaudi2": (96_000_000_000, None),
    # Intel Gaudi 3 white paper: "128 GB HBM2e"; 96 MB SRAM chip-wide
    "Gaudi3": (128_000_000_000, None),
    # NVIDIA H100 datasheet: "80GB"; CUDA C++ Programming Guide, compute capability 9.0:
    # 228 KB (KiB) of shared memory per SM
    "H100-PCIe": (80_000_000_000, 233_472),
    "H100-SXM": (80_000_000_000, 233_472),
    # NVIDIA H200 datasheet: "141GB HBM3e"; CUDA guide, CC 9.0: 228 KiB per SM
    "H200-SXM": (141_000_000_000, 233_472),
    # NVIDIA L4 datasheet: "24GB GDDR6"; CUDA guide, CC 8.9: 100 KB (KiB) per SM
    "L4": (24_000_000_000, 102_400),
    # NVIDIA L40S datasheet: "48GB GDDR6 with ECC"; CUDA guide, CC 8.9: 100 KiB per SM
    "L40S": (48_000_000_000, 102_400),
    # AMD ROCm docs, "AMD GPU specifications" (gpu-specs): MI300X VRAM (GiB) 192, LDS (KiB) 64
    "MI300X": (206_158_430_208, 65_536),
    # AMD ROCm docs, gpu-specs: MI325X VRAM (GiB) 256, LDS (KiB) 64
    "MI325X": (274_877_906_944, 65_536),
    # NVIDIA Ada GPU architecture whitepaper: RTX 4090 "24 GB" GDDR6X; CUDA guide, CC 8.9: 100 KiB
    "RTX-4090": (24_000_000_000, 102_400),
    # Cloud TPU docs, "TPU v4": 32 GiB HBM2 per chip; no per-core SRAM figure
    "TPU-v4": (34_359_738_368, None),
    # Cloud TPU docs, "TPU v5e": 16 GiB of HBM2 per chip; scaling-book (jax-ml.github.io/
    # scaling-book), TPU chapter: VMEM 128 MiB per TensorCore
    "TPU-v5e": (17_179_869_184, 134_217_728),
    # Cloud TPU docs, "TPU v5p": "HBM capacity per chip (GiB) 95"
    "TPU-v5p": (102_005_473_280, None),
    # Cloud TPU docs, "TPU v6e": 32 GiB of HBM per chip
    "TPU-v6e": (34_359_738_368, None),
}


def test_the_capacity_table_covers_every_shipped_device() -> None:
    assert set(CAPACITIES) == EXPECTED_NAMES


@pytest.mark.parametrize("name", sorted(CAPACITIES))
def test_capacities_in_the_vendors_prefix(name: str) -> None:
    hw = load_hardware(name)
    capacity, sram = CAPACITIES[name]
    assert hw.memory_capacity == capacity
    assert hw.sram_per_sm == sram


def test_tpu_v5e_has_16_gib_not_16_gb() -> None:
    # The example: 16 GiB is 7.4 % more than 16 GB; Llama-3-8B's bf16 weights
    # (2 × 8,030,261,248 = 16,060,522,496 bytes) fit in 16 GiB, not in 16 GB.
    capacity = load_hardware("TPU-v5e").memory_capacity
    assert capacity == 16 * 1024**3 != 16e9
    assert 2 * 8_030_261_248 < capacity


def test_no_shipped_file_cites_a_file_outside_the_repository() -> None:
    for path in [*SHIPPED, REPO / "hardware" / "README.md"]:
        text = path.read_text(encoding="utf-8")
        for needle in ("shared/", "reference/", ".csv", "DOMAIN", "seed-"):
            assert needle not in text, (path.name, needle)


def test_a_shipped_device_is_read_from_its_own_file_only(monkeypatch) -> None:
    """Each shipped file is named after the device it describes, so loading one device by name
    parses that file alone (the command line's start-up cost)."""
    from roofline.specs import hardware as module

    for hw in list_hardware():
        assert hw.path.stem == hw.name
    read = []
    original = module.read_hardware
    monkeypatch.setattr(module, "read_hardware", lambda p: read.append(p) or original(p))
    assert module.load_hardware("H100-SXM").name == "H100-SXM"
    assert [p.name for p in map(Path, read)] == ["H100-SXM.toml"]


# --- memory levels: [on_chip] sram_bandwidth, l2, l2_bandwidth, l3, l3_bandwidth ----------------
_L2 = 'l2 = { value = "40 MB", source = "fixture" }'
_SRAM = 'sram_per_sm = { value = "192 KiB", source = "fixture" }'


def _levels(tmp_path: Path, *lines: str, replace: str = _L2, capacity: str = "") -> Path:
    """good.toml with the l2 line (or ``replace``) swapped for ``lines``, and its memory capacity
    (16 GiB) for ``capacity`` if given."""
    path = _variant(tmp_path, replace, "\n".join(lines))
    if capacity:
        path.write_text(path.read_text().replace('"16 GiB"', f'"{capacity}"'))
    return path


def _q(key: str, value: str) -> str:
    return f'{key} = {{ value = "{value}", source = "fixture" }}'


ALL_LEVELS = (_L2, _q("l2_bandwidth", "5 TB/s"), _q("sram_bandwidth", "20 TB/s"),
              _q("l3", "256 MiB"), _q("l3_bandwidth", "3 TB/s"))


def test_every_memory_level_loads_in_si_units_with_its_source(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an ordered hierarchy warns of nothing
        hw = read_hardware(_levels(tmp_path, *ALL_LEVELS))
    assert (hw.sram_per_sm, hw.sram_bandwidth) == (192 * 1024, 20e12)
    assert (hw.l2_bytes, hw.l2_bandwidth) == (40e6, 5e12)
    assert (hw.l3_bytes, hw.l3_bandwidth) == (256 * 2**20, 3e12)
    assert {"on_chip.sram_bandwidth", "on_chip.l2_bandwidth", "on_chip.l3",
            "on_chip.l3_bandwidth"} <= set(hw.sources)
    data = json.loads(json.dumps(hw.as_dict()))
    assert (data["sram_bandwidth"], data["l2_bandwidth"]) == (20e12, 5e12)
    assert (data["l3_bytes"], data["l3_bandwidth"]) == (268_435_456, 3e12)
    assert data["sources"]["on_chip.l3_bandwidth"] == "fixture"


def test_an_absent_level_is_none_never_zero() -> None:
    hw = read_hardware(FIXTURES / "good.toml")  # gives l2 and sram_per_sm, no bandwidths, no l3
    assert (hw.sram_bandwidth, hw.l2_bandwidth, hw.l3_bytes, hw.l3_bandwidth) == (None,) * 4
    data = hw.as_dict()
    assert data["l3_bytes"] is None and data["l2_bandwidth"] is None
    assert not {"on_chip.l3", "on_chip.l2_bandwidth"} & set(hw.sources)


LEVEL_ERRORS = [
    # an L3 without an L2: levels are numbered from the compute units outwards
    ((_q("l3", "256 MiB"),), "on_chip.l3",
     "needs on_chip.l2: levels are numbered from the compute units outwards, so a device with "
     "one cache level gives it as l2", "256 MiB"),
    # a level's bandwidth without the level
    ((_q("l2_bandwidth", "5 TB/s"),), "on_chip.l2_bandwidth",
     "needs on_chip.l2, the level it is the bandwidth of", "5 TB/s"),
    ((_L2, _q("l3_bandwidth", "3 TB/s")), "on_chip.l3_bandwidth",
     "needs on_chip.l3, the level it is the bandwidth of", "3 TB/s"),
    # a cache larger than the memory behind it (the capacity made 8 GiB = 8.59 GB below)
    ((_q("l2", "9 GB"),), "on_chip.l2",
     "is larger than memory.capacity (8.59 GB); a cache holds a part of the memory behind it, "
     "never more", "9 GB"),
    ((_L2, _q("l3", "8193 MiB")), "on_chip.l3",
     "is larger than memory.capacity (8.59 GB); a cache holds a part of the memory behind it, "
     "never more", "8193 MiB"),
]


@pytest.mark.parametrize("lines, key, rule, value", LEVEL_ERRORS,
                         ids=["l3-without-l2", "l2-bandwidth-without-l2",
                              "l3-bandwidth-without-l3", "l2-above-memory", "l3-above-memory"])
def test_memory_level_rules(tmp_path: Path, lines: tuple, key: str, rule: str,
                            value: str) -> None:
    path = _levels(tmp_path, *lines, capacity="8 GiB")
    with pytest.raises(SpecError) as info:
        read_hardware(path)
    assert str(info.value) == f"{path}: {key}: {rule} (got {value!r})"


def test_sram_bandwidth_needs_sram_per_sm(tmp_path: Path) -> None:
    path = _levels(tmp_path, _q("sram_bandwidth", "20 TB/s"), replace=_SRAM)
    with pytest.raises(SpecError, match=re.escape(
            f"{path}: on_chip.sram_bandwidth: needs on_chip.sram_per_sm, the level it is the "
            "bandwidth of (got '20 TB/s')")):
        read_hardware(path)


def test_a_cache_as_large_as_the_memory_is_accepted(tmp_path: Path) -> None:
    # "larger than" is the rule: equal is a degenerate but possible device.
    hw = read_hardware(_levels(tmp_path, _q("l2", "8 GiB"), capacity="8 GiB"))
    assert hw.l2_bytes == hw.memory_capacity == 8 * 2**30
    hw = read_hardware(_levels(tmp_path, _L2, _q("l3", "8 GiB"), capacity="8 GiB"))
    assert hw.l3_bytes == hw.memory_capacity


BANDWIDTH_KEYS = ("sram_bandwidth", "l2_bandwidth", "l3_bandwidth")
BAD_BANDWIDTHS = [
    ("5", 'has no unit; must be a bandwidth in bytes/s (e.g. "3.35 TB/s")'),
    ("-5 TB/s", "must be positive (> 0)"),
    ("0 TB/s", "must be positive (> 0)"),
    ("fast TB/s", 'must be a number and a unit, a bandwidth in bytes/s (e.g. "3.35 TB/s")'),
    ("nan TB/s", "must be a number, not NaN"),
    ("5 TB", 'must be a bandwidth in bytes/s (e.g. "3.35 TB/s"), but its unit is bytes'),
    ("5 Tb/s", "unknown unit 'Tb/s'; accepted: "),
    ("2 EB/s", "is 2e+18 bytes/s, outside the plausible range [1e+06, 1e+18] bytes/s"),
    ("100 kB/s", "is 1e+05 bytes/s, outside the plausible range [1e+06, 1e+18] bytes/s"),
]


@pytest.mark.parametrize("key", BANDWIDTH_KEYS)
@pytest.mark.parametrize("raw, rule", BAD_BANDWIDTHS, ids=[b[0] for b in BAD_BANDWIDTHS])
def test_bad_bandwidth_of_a_level(tmp_path: Path, key: str, raw: str, rule: str) -> None:
    levels = [line for line in ALL_LEVELS if not line.startswith(f"{key} =")]
    path = _levels(tmp_path, *levels, _q(key, raw))
    with pytest.raises(SpecError) as info:
        read_hardware(path)
    message = str(info.value)
    assert message.startswith(f"{path}: on_chip.{key}: {rule}")
    assert message.endswith(f"(got {raw!r})") and "\n" not in message


def test_a_bandwidth_must_be_a_string_with_a_unit(tmp_path: Path) -> None:
    path = _levels(tmp_path, _L2, "l2_bandwidth = { value = 5, source = \"fixture\" }")
    with pytest.raises(SpecError, match=re.escape(
            f"{path}: on_chip.l2_bandwidth: must be a string: a number and a unit, a bandwidth in "
            "bytes/s (e.g. \"3.35 TB/s\") (got 5)")):
        read_hardware(path)


@pytest.mark.parametrize("raw, rule", [
    ("5 TB/s", 'must be an amount of memory in bytes (e.g. "80 GB"), but its unit is bytes/s'),
    ("128 TiB", "is 1.407e+14 bytes, outside the plausible range [1024, 6.872e+10] bytes"),
    ("0 MiB", "must be positive (> 0)"),
])
def test_bad_l3_capacity(tmp_path: Path, raw: str, rule: str) -> None:
    path = _levels(tmp_path, _L2, _q("l3", raw))
    with pytest.raises(SpecError) as info:
        read_hardware(path)
    assert str(info.value) == f"{path}: on_chip.l3: {rule} (got {raw!r})"


def test_a_level_needs_a_source(tmp_path: Path) -> None:
    path = _levels(tmp_path, _L2, 'l2_bandwidth = { value = "5 TB/s" }')
    with pytest.raises(SpecError, match=re.escape(
            f"{path}: on_chip.l2_bandwidth: source: missing required key")):
        read_hardware(path)


LEVEL_WARNINGS = [
    # a cache level slower than HBM (memory.bandwidth is 1 TB/s in good.toml)
    ((_L2, _q("l2_bandwidth", "500 GB/s")),
     "on_chip.l2_bandwidth (500 GB/s) is below memory.bandwidth (1 TB/s)"),
    ((_L2, _q("l2_bandwidth", "5 TB/s"), _q("l3", "256 MiB"), _q("l3_bandwidth", "800 GB/s")),
     "on_chip.l3_bandwidth (800 GB/s) is below memory.bandwidth (1 TB/s)"),
    # shared memory slower than L2
    ((_L2, _q("l2_bandwidth", "5 TB/s"), _q("sram_bandwidth", "4 TB/s")),
     "on_chip.sram_bandwidth (4 TB/s) is below on_chip.l2_bandwidth (5 TB/s)"),
]


@pytest.mark.parametrize("lines, message", LEVEL_WARNINGS,
                         ids=["l2-below-hbm", "l3-below-hbm", "sram-below-l2"])
def test_a_level_slower_than_the_one_behind_it_warns(tmp_path: Path, lines: tuple,
                                                     message: str) -> None:
    path = _levels(tmp_path, *lines)
    with pytest.warns(UserWarning) as caught:
        hw = read_hardware(path)
    assert [str(w.message) for w in caught] == [
        f"{path}: {message}: a level nearer the compute units is expected to be at least as fast "
        "as the levels behind it; check the figure and its unit"]
    assert hw.l2_bandwidth is not None  # a warning, not an error: the file loads as written


def test_shipped_files_load_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list_hardware()) == len(EXPECTED_NAMES)


# Cache capacities in bytes, written out by hand from each public source (decimal MB = 10**6
# where the vendor prints MB; MiB = 2**20, and KB = 2**10 where the document means KiB):
# name: (l2 bytes or None, l3 bytes or None). None: the device has no such level.
CACHES: dict[str, tuple[int | None, int | None]] = {
    # NVIDIA A100 whitepaper: "L2 Cache Size 40960 KB" (KiB: 40 x 2**20)
    "A100-40GB-SXM": (41_943_040, None),
    "A100-80GB-SXM": (41_943_040, None),
    "A100-80GB-PCIe": (41_943_040, None),
    # ke60.top/article/1471031.html: "60 MB L2" (a third-party page: NVIDIA prints none)
    "H20": (60_000_000, None),
    # scaling-book gpus.md: 126 MB of L2; Chips and Cheese's B200 article: "126 MB of total capacity"
    "B200": (126_000_000, None),
    # Intel Gaudi 2 on-die SRAM "48 MB" (press reports of Intel figures); chip-wide, given as l2
    "Gaudi2": (48_000_000, None),
    # The Register, 2024-04-09, Intel Gaudi 3: "96 MB SRAM"
    "Gaudi3": (96_000_000, None),
    # NVIDIA H100 datasheet / whitepaper: "50 MB L2" (decimal as printed)
    "H100-PCIe": (50_000_000, None),
    "H100-SXM": (50_000_000, None),
    # NVIDIA H200: the GH100 die of the H100 SXM, 50 MB of L2
    "H200-SXM": (50_000_000, None),
    # NVIDIA L4 (AD104): 48 MB of L2 (TechPowerUp-derived listing)
    "L4": (48_000_000, None),
    # NVIDIA L40S (AD102): 96 MB of L2 (UNSURE in its file)
    "L40S": (96_000_000, None),
    # ROCm docs, GPU hardware specifications: MI300X "L2 Cache (MiB) 32", "L3 Cache (MiB) 256"
    "MI300X": (33_554_432, 268_435_456),
    # ROCm docs, GPU hardware specifications: MI325X "L2 Cache (MiB) 32", "L3 Cache (MiB) 256"
    "MI325X": (33_554_432, 268_435_456),
    # NVIDIA Ada GPU architecture whitepaper, Appendix A: RTX 4090 "L2 Cache Size 73728 KB" (KiB)
    "RTX-4090": (75_497_472, None),
    # TPU v4 paper (Jouppi et al., ISCA 2023): 128 MiB CMEM shared by the two TensorCores
    "TPU-v4": (134_217_728, None),
    # JAX Pallas TPU hardware reference (tpu_info.py): cmem_capacity_bytes=0 on v5e, v5p, v6e
    "TPU-v5e": (None, None),
    "TPU-v5p": (None, None),
    "TPU-v6e": (None, None),
}


def test_the_cache_table_covers_every_shipped_device() -> None:
    assert set(CACHES) == EXPECTED_NAMES


@pytest.mark.parametrize("name", sorted(CACHES))
def test_cache_capacities_against_their_sources(name: str) -> None:
    hw = load_hardware(name)
    assert (hw.l2_bytes, hw.l3_bytes) == CACHES[name]


# The devices that must give every bandwidth of their levels, and a vendor or measured figure
# each, written out from the source: name: (sram_bandwidth, l2_bandwidth, l3_bandwidth) in B/s.
BANDWIDTHS: dict[str, tuple[float, float, float | None]] = {
    # 128 B/clock/SM (CUDA guide: 32 banks x 32 bits) x 108 SMs x 1.41 GHz (A100 whitepaper);
    # L2: the whitepaper's 5120 Bytes/clk x 1.41 GHz
    "A100-40GB-SXM": (128 * 108 * 1.41e9, 5120 * 1.41e9, None),
    "A100-80GB-SXM": (128 * 108 * 1.41e9, 5120 * 1.41e9, None),
    "A100-80GB-PCIe": (128 * 108 * 1.41e9, 5120 * 1.41e9, None),
    # 128 B x 132 SMs x 1.98 GHz; L2: Chips and Cheese's 5.5 TB/s (H100 PCIe) x 1.98 / 1.755
    "H100-SXM": (128 * 132 * 1.98e9, 5.5e12 * 1.98 / 1.755, None),
    "H200-SXM": (128 * 132 * 1.98e9, 5.5e12 * 1.98 / 1.755, None),
    # 128 B x 114 SMs x 1.755 GHz; L2: Chips and Cheese, "over 5.5 TB/s" (near partition)
    "H100-PCIe": (128 * 114 * 1.755e9, 5.5e12, None),
    # 128 B x 148 SMs x 1.98 GHz; L2: Chips and Cheese's B200 article, 21 TB/s (local partition)
    "B200": (128 * 148 * 1.98e9, 21e12, None),
    # LDS 128 B/clock/CU (ROCm Compute Profiler docs) x 304 CUs x 2.1 GHz; AMD CDNA 3 white paper:
    # L2 "up to 34.4 TB/s aggregate read bandwidth", Infinity Cache "17.2 TB/s"
    "MI300X": (128 * 304 * 2.1e9, 34.4e12, 17.2e12),
    "MI325X": (128 * 304 * 2.1e9, 34.4e12, 17.2e12),
}


@pytest.mark.parametrize("name", sorted(BANDWIDTHS))
def test_level_bandwidths_against_their_arithmetic(name: str) -> None:
    hw = load_hardware(name)
    sram, l2, l3 = BANDWIDTHS[name]
    # the files round to 3-4 digits; 0.2 % tells a rounding from a wrong input
    assert hw.sram_bandwidth == pytest.approx(sram, rel=2e-3)
    assert hw.l2_bandwidth == pytest.approx(l2, rel=2e-3)
    assert hw.l3_bandwidth == (None if l3 is None else pytest.approx(l3, rel=2e-3))


def test_every_estimate_is_explained_in_notes() -> None:
    """A figure computed here (its source starts "ESTIMATE") has its arithmetic in the notes."""
    estimates = 0
    for hw in list_hardware():
        for key, source in hw.sources.items():
            if "ESTIMATE" in source:
                estimates += 1
                assert f"ESTIMATE: {key.split('.', 1)[1]} " in hw.notes, (hw.name, key)
                assert "ESTIMATE" in hw.quantity_notes.get(key, ""), (hw.name, key)
    assert estimates >= 10


def test_the_vendors_prefix_is_kept_for_the_new_capacities() -> None:
    # AMD's ROCm table prints MiB, Intel and NVIDIA's documents MB: the values are not rounded
    # into one another (256 MiB is 268,435,456 bytes, 256 MB would be 256,000,000).
    assert load_hardware("MI300X").l3_bytes == 256 * 2**20 != 256e6
    assert load_hardware("Gaudi3").l2_bytes == 96e6 != 96 * 2**20


@pytest.mark.parametrize("old, new, where, char", [
    ('name = "H100-SXM"', 'name = "H100\\u001b[31m"', "name", "'\\x1b'"),
    ('name = "H100-SXM"', 'name = "H100\\nSXM"', "name", "'\\n'"),
    ('vendor = "NVIDIA"', 'vendor = "NV\\u202eAIDIV"', "vendor", "'\\u202e'"),
])
def test_text_that_does_not_print_is_refused(tmp_path: Path, old: str, new: str, where: str,
                                             char: str) -> None:
    # a name with an escape sequence was printed as is: it recoloured the terminal, a line
    # break split `hardware show`'s title, U+202E reversed what followed it
    text = (REPO / "hardware" / "H100-SXM.toml").read_text()
    assert old in text
    path = tmp_path / "x.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(SpecError, match=f"^{re.escape(str(path))}: {where}: holds "
                                        f"{re.escape(char)}, which does not print"):
        read_hardware(path)


def test_notes_may_run_over_lines(tmp_path: Path) -> None:
    text = (REPO / "hardware" / "H100-SXM.toml").read_text()
    path = tmp_path / "x.toml"
    # and spaces of every width print: a no-break space, a thin space (datasheets paste them)
    path.write_text(text.replace('notes = "H100 SXM5', 'notes = "one\\n\\ttwo: H100\u00a0SXM5',
                                 1).replace('name = "H100-SXM"', 'name = "H100\u2009SXM"', 1))
    hw = read_hardware(path)
    assert hw.notes.startswith("one\n\ttwo: H100\u00a0SXM5") and hw.name == "H100\u2009SXM"
