"""Network files (``hardware/network/*.toml``) and the device files' ``devices_per_node``: the
shipped figures against their sources, and one clear line per bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.cli import main
from roofline.errors import SpecError, UnknownNameError
from roofline.specs.hardware import list_hardware, load_hardware, read_hardware
from roofline.specs.network import list_networks, load_network, read_network

FIXTURES = Path(__file__).parent / "fixtures" / "hardware"
GOOD = '''name = "Fixture-Net"
vendor = "test"
notes = "a fixture"

[link]
bandwidth = { value = "25 GB/s", source = "fixture" }
latency = { value = "3 us", source = "fixture" }
'''


def _write(tmp_path: Path, text: str, name: str = "net.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_networks() -> None:
    nets = {n.name: n for n in list_networks()}
    assert set(nets) == {"InfiniBand-NDR", "InfiniBand-HDR", "RoCE-400G"}
    ndr = nets["InfiniBand-NDR"]
    assert ndr.link_bandwidth() == 400e9 / 8  # 400 Gb/s per GPU, each way
    assert nets["InfiniBand-HDR"].link_bandwidth() == 200e9 / 8
    assert nets["RoCE-400G"].link_bandwidth() == 400e9 / 8
    for net in nets.values():
        assert net.latency == pytest.approx(2.7e-6)  # NCCL hwLat[NET][Ring][LL]
        assert "tuning.cc" in net.sources["link.latency"]
        assert all(net.sources[f"link.{k}"] for k in ("bandwidth", "latency", "directions"))
        assert net.path.name == f"{net.name}.toml"  # named after its file
    assert load_network("InfiniBand-NDR") == ndr


def test_devices_per_node() -> None:
    for name in ("H100-SXM", "H200-SXM", "A100-80GB-SXM", "A100-40GB-SXM", "B200", "MI300X",
                 "MI325X"):
        hw = load_hardware(name)
        assert hw.devices_per_node == 8 and hw.sources["interconnect.devices_per_node"]
    assert load_hardware("L4").devices_per_node is None  # no figure: one interconnect for all
    for hw in list_hardware():  # a vendor's data sheet, unless the vendor publishes none (H20)
        if hw.devices_per_node is not None and "publishes no datasheet" not in hw.notes:
            assert "data sheet" in hw.sources["interconnect.devices_per_node"].lower().replace(
                "datasheet", "data sheet")


def test_a_user_file(tmp_path: Path) -> None:
    net = read_network(_write(tmp_path, GOOD))
    assert net.bandwidth == 25e9 and net.latency == pytest.approx(3e-6) and net.directions == 1
    both = read_network(_write(tmp_path, GOOD.replace(
        'latency = { value = "3 us", source = "fixture" }',
        'latency = { value = "3 us", source = "fixture" }\n'
        'directions = { value = 2, source = "fixture" }'), "both.toml"))
    assert both.link_bandwidth() == 12.5e9
    assert load_network(str(tmp_path / "net.toml")).name == "Fixture-Net"


@pytest.mark.parametrize("old, new, rule", [
    ('vendor = "test"', 'vendor = "test"\nspeed = 1', "speed: unknown top-level key"),
    ('latency = { value = "3 us", source = "fixture" }', "", "link.latency: missing required key"),
    ('bandwidth = { value = "25 GB/s", source = "fixture" }', "",
     "link.bandwidth: missing required key"),
    ('"25 GB/s"', '"25 Gb/s"', "link.bandwidth: unknown unit"),
    ('"3 us"', '"3 GB"', "link.latency: must be a duration"),
    ('"25 GB/s"', '"-25 GB/s"', "link.bandwidth: must be positive"),
    ('source = "fixture" }\nlatency', 'note = "x" }\nlatency', "link.bandwidth: source: missing"),
    ('latency = { value = "3 us", source = "fixture" }',
     'latency = { value = "3 us", source = "fixture" }\nhops = { value = 2, source = "x" }',
     "link.hops: unknown key of [link]"),
    ("[link]", "[links]", "links: unknown top-level key"),
])
def test_bad_files(tmp_path: Path, old: str, new: str, rule: str) -> None:
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(SpecError) as info:
        read_network(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and rule in message and "\n" not in message


def test_missing_link_table(tmp_path: Path) -> None:
    path = _write(tmp_path, 'name = "x"\nvendor = "y"\n')
    with pytest.raises(SpecError, match="link: missing required table"):
        read_network(path)


def test_two_files_of_one_name(tmp_path: Path) -> None:
    _write(tmp_path, GOOD, "a.toml")
    _write(tmp_path, GOOD, "b.toml")
    with pytest.raises(SpecError, match="names must be unique"):
        list_networks(tmp_path)


def test_unknown_name() -> None:
    with pytest.raises(UnknownNameError, match="close matches: InfiniBand-NDR"):
        load_network("InfiniBand-NDR4")


def test_devices_per_node_needs_the_link(tmp_path: Path) -> None:
    text = (FIXTURES / "good.toml").read_text()
    link = 'bandwidth = { value = "600 GB/s", source = "fixture" }'
    path = tmp_path / "v.toml"
    path.write_text(text.replace(link, 'devices_per_node = { value = 8, source = "x" }'))
    with pytest.raises(SpecError, match="interconnect.devices_per_node: needs interconnect."
                                        "bandwidth"):
        read_hardware(path)
    path.write_text(text.replace(link, link + '\ndevices_per_node = { value = 0, source = "x" }'))
    with pytest.raises(SpecError, match="interconnect.devices_per_node: must be positive"):
        read_hardware(path)


def test_cli_network_flag(tmp_path: Path, capsys) -> None:
    code = main(["prefill", "--hardware", "H100-SXM", "--model", "Llama-2-70B", "--tp", "16",
                 "--network", "Infiniband-NDR"])
    err = capsys.readouterr().err
    assert code == 2 and "unknown network 'Infiniband-NDR'" in err
    code = main(["prefill", "--hardware", "H100-SXM", "--model", "Llama-2-70B", "--tp", "16",
                 "--network", str(_write(tmp_path, GOOD)), "--json"])
    assert code == 0 and '"network": "Fixture-Net"' in capsys.readouterr().out
