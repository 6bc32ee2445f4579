"""The [interconnect] section's latency and directions (issue 13): shipped figures, per-direction
bandwidth, and one clear line per bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.errors import SpecError
from roofline.specs.hardware import list_hardware, load_hardware, read_hardware

FIXTURES = Path(__file__).parent / "fixtures" / "hardware"
GOOD_LINK = 'bandwidth = { value = "600 GB/s", source = "fixture" }'


def _variant(tmp_path: Path, *lines: str, link: bool = True) -> Path:
    text = (FIXTURES / "good.toml").read_text()
    assert text.count(GOOD_LINK) == 1
    new = "\n".join(((GOOD_LINK,) if link else ()) + lines)
    path = tmp_path / "variant.toml"
    path.write_text(text.replace(GOOD_LINK, new))
    return path


def test_h100_per_direction_and_latency() -> None:
    hw = load_hardware("H100-SXM")
    assert hw.interconnect_bandwidth == 900e9 and hw.interconnect_directions == 2
    assert hw.link_bandwidth() == 450e9  # NVLink4: 18 links x 25 GB/s each way
    assert hw.link_latency() == pytest.approx(0.47e-6)  # NCCL tuning.cc, NVLink ring step


def test_pcie_device_latency() -> None:
    hw = load_hardware("L4")
    assert hw.link_bandwidth() == 32e9 and hw.link_latency() == pytest.approx(1.0e-6)


def test_every_shipped_link_has_sources() -> None:
    for hw in list_hardware():
        if hw.interconnect_bandwidth is None:
            assert hw.link_bandwidth() is None
            continue
        assert hw.sources["interconnect.directions"]
        if hw.interconnect_latency is not None:
            assert "tuning.cc" in hw.sources["interconnect.latency"]


def test_no_latency_means_zero() -> None:
    hw = read_hardware(FIXTURES / "good.toml")
    assert hw.interconnect_latency is None and hw.link_latency() == 0.0
    assert hw.link_bandwidth() == 600e9  # one direction unless the file says otherwise


def test_good_variant(tmp_path: Path) -> None:
    path = _variant(tmp_path, 'latency = { value = "2 us", source = "x" }',
                    'directions = { value = 2, source = "x" }')
    hw = read_hardware(path)
    assert hw.link_bandwidth() == 300e9 and hw.link_latency() == pytest.approx(2e-6)


@pytest.mark.parametrize("line, key, rule", [
    ('directions = { value = 3, source = "x" }', "interconnect.directions",
     "must be an integer in the plausible range [1, 2]"),
    ('directions = { value = 0, source = "x" }', "interconnect.directions",
     "must be positive (> 0)"),
    ('latency = { value = "5 GB", source = "x" }', "interconnect.latency", "must be a duration"),
    ('latency = { value = "1 s", source = "x" }', "interconnect.latency",
     "outside the plausible range"),
    ('latency = { value = "-1 us", source = "x" }', "interconnect.latency", "must be positive"),
    ('speed = { value = "1 us", source = "x" }', "interconnect.speed", "unknown key"),
])
def test_bad_interconnect_value(tmp_path: Path, line: str, key: str, rule: str) -> None:
    path = _variant(tmp_path, line)
    with pytest.raises(SpecError) as info:
        read_hardware(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}: ") and rule in message and "\n" not in message


def test_latency_without_bandwidth(tmp_path: Path) -> None:
    path = _variant(tmp_path, 'latency = { value = "1 us", source = "x" }', link=False)
    with pytest.raises(SpecError, match="interconnect.latency: needs interconnect.bandwidth"):
        read_hardware(path)
