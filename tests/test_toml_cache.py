"""The shipped device files parsed ahead (``roofline/specs/toml_cache.json``): each entry is
what ``tomllib`` gives for a shipped file's text now, a text the cache does not hold is parsed
by ``tomllib``, and what the cache gives is the caller's to change."""

import json
import tomllib
from pathlib import Path

import pytest

from roofline.specs import toml_cache
from roofline.specs.files import parse_toml
from roofline.specs.hardware import load_hardware

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted([*ROOT.glob("hardware/*.toml"), *ROOT.glob("hardware/network/*.toml")])


def _entries() -> dict:
    return json.loads(toml_cache.CACHE.read_text(encoding="utf-8"))


def test_every_shipped_device_file_is_held_as_tomllib_parses_it_and_nothing_else():
    entries = _entries()
    texts = [p.read_text(encoding="utf-8") for p in SHIPPED]
    assert len(SHIPPED) >= 20
    assert sorted(entries) == sorted(toml_cache.digest(t) for t in texts), \
        "toml_cache.json is stale: python -m roofline.specs.toml_cache rewrites it"
    for path, text in zip(SHIPPED, texts):  # the keys in the file's order too (what shows a
        # device lists its tables so): equal as JSON text, not only as dicts
        parsed = tomllib.loads(text)
        assert entries[toml_cache.digest(text)] == parsed, path.name
        assert json.dumps(toml_cache.known(text)) == json.dumps(parsed), path.name


def test_the_digest_is_blake2b_256_of_the_utf8_text():
    # RFC 7693's BLAKE2b with a 32-byte digest, through hashlib (a second implementation)
    import hashlib

    text = 'name = "Ω"\n'
    assert toml_cache.digest(text) == hashlib.blake2b(text.encode(), digest_size=32).hexdigest()


def test_an_edited_device_file_is_parsed_afresh(tmp_path):
    text = (ROOT / "hardware" / "H100-SXM.toml").read_text(encoding="utf-8")
    shipped = load_hardware("H100-SXM")
    edited = text.replace('name = "H100-SXM"', 'name = "H100-edited"')
    assert edited != text
    (tmp_path / "H100-edited.toml").write_text(edited, encoding="utf-8")
    hw = load_hardware(tmp_path / "H100-edited.toml")
    assert toml_cache.known(edited) is None
    assert (hw.name, hw.memory_bandwidth) == ("H100-edited", shipped.memory_bandwidth)


def test_what_the_cache_gives_is_a_fresh_copy():
    text = (ROOT / "hardware" / "A100-80GB-SXM.toml").read_text(encoding="utf-8")
    first = parse_toml(text, "A100-80GB-SXM.toml")
    first["memory"]["bandwidth"]["value"] = "1 B/s"
    first.clear()
    assert parse_toml(text, "A100-80GB-SXM.toml") == tomllib.loads(text)


@pytest.mark.parametrize("content", [None, "{not json", "[1, 2]"])
def test_without_a_readable_cache_every_file_is_parsed_by_tomllib(tmp_path, monkeypatch,
                                                                  content):
    cache = tmp_path / "toml_cache.json"
    if content is not None:
        cache.write_text(content, encoding="utf-8")
    monkeypatch.setattr(toml_cache, "CACHE", cache)
    toml_cache._entries.cache_clear()
    try:
        text = (ROOT / "hardware" / "MI300X.toml").read_text(encoding="utf-8")
        assert toml_cache.known(text) is None
        assert parse_toml(text, "MI300X.toml") == tomllib.loads(text)
    finally:
        toml_cache._entries.cache_clear()
