"""roofline.measure.system: the system's readers on fake sysfs and meminfo files, provenance."""

from __future__ import annotations

from pathlib import Path

from roofline.measure import system


def _fake_sysfs(root: Path, caches: list[tuple[int, str, str, str]]) -> Path:
    for i, (level, kind, size, shared) in enumerate(caches):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
        (d / "shared_cpu_list").write_text(f"{shared}\n")
    return root


def test_cache_levels_from_sysfs(tmp_path: Path) -> None:
    root = _fake_sysfs(tmp_path, [(1, "Data", "48K", "0"), (1, "Instruction", "64K", "0"),
                                  (2, "Unified", "2048K", "0"), (3, "Unified", "32M", "0-3,8")])
    levels = system.cache_levels(root)
    assert [(c.level, c.type, c.size, c.shared_cpus) for c in levels] == [
        (1, "Data", 48 * 1024, 1), (1, "Instruction", 64 * 1024, 1),
        (2, "Unified", 2 * 2**20, 1), (3, "Unified", 32 * 2**20, 5)]
    assert system.last_level_cache(levels).size == 32 * 2**20
    assert system.per_core_cache(levels).size == 2 * 2**20
    assert system.last_level_cache([]) is None and system.per_core_cache([]) is None


def test_cache_levels_fallback(tmp_path: Path) -> None:
    levels = system.cache_levels(tmp_path / "missing")  # no sysfs: os.sysconf, or nothing
    assert all(c.source.startswith("os.sysconf") and c.size > 0 for c in levels)


def test_memory_bytes(tmp_path: Path) -> None:
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n")
    assert system.memory_bytes(f) == (24000000 * 1024, 20000000 * 1024)
    assert system.memory_bytes(tmp_path / "none") == (None, None)


def test_provenance_strings() -> None:
    prov = system.provenance()
    assert {"cpu", "cores", "numpy", "blas", "threads", "date"} <= set(prov)
    assert all(isinstance(v, str) and v for v in prov.values())
    assert int(prov["cores"]) >= 1
