"""The shipped device files parsed ahead of time: a start that reads one of them needs no
``tomllib``.

Importing ``tomllib`` (with the ``typing``, ``datetime`` and regular expressions it loads) costs
a fresh process more than reading and checking a device file does: with ``typing``, which the
package does not import otherwise, 9–17 ms on a 2-core machine. ``toml_cache.json`` holds what
``tomllib.loads`` gives for the text of every shipped hardware and network file, keyed by the
BLAKE2b-256 (RFC 7693) digest of that text. :func:`known` looks a text up by its digest: a
shipped file as shipped is found, and anything else (a user's file, a shipped file edited since
the cache was written) is not and is parsed by ``tomllib``, so the cache cannot serve an
outdated parse. The validation after the parse is the same either way.

``python -m roofline.specs.toml_cache`` rewrites the file; a test holds every entry equal to
``tomllib``'s parse of the shipped text, its tables' keys in the same order
(``tests/test_toml_cache.py``).
"""

from __future__ import annotations

import json
from copy import deepcopy
from functools import cache
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CACHE", "digest", "known", "generate", "write"]

CACHE = Path(__file__).with_name("toml_cache.json")
_KINDS = (("hardware", "*.toml"), ("hardware", "network/*.toml"))  # what a setting reads


def digest(text: str) -> str:
    """BLAKE2b-256 of ``text`` in UTF-8, in hex (CPython's ``_blake2``: ``hashlib`` would load
    the OpenSSL bindings first)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - another Python
        from hashlib import blake2b
    return blake2b(text.encode("utf-8"), digest_size=32).hexdigest()


@cache
def _entries() -> dict[str, Any]:
    try:
        with open(CACHE, "rb") as f:
            entries = json.load(f)
    except (OSError, ValueError):  # absent or damaged: every file is parsed by tomllib
        return {}
    return entries if isinstance(entries, dict) else {}


def known(text: str) -> dict[str, Any] | None:
    """``tomllib.loads(text)`` where ``text`` is a shipped file's as shipped (a fresh copy:
    the caller may change it), else None."""
    parsed = _entries().get(digest(text))
    return None if parsed is None else deepcopy(parsed)


def generate() -> str:
    """The text of ``toml_cache.json``: every shipped hardware and network file's parse, by
    the digest of its text. A value JSON does not carry as it is (a date, a time) is refused."""
    import tomllib

    from ._shipped import shipped_dir
    from .files import read_text

    entries: dict[str, Any] = {}
    for kind, pattern in _KINDS:
        for path in sorted(shipped_dir(kind).glob(pattern)):
            text = read_text(path, "hardware file")
            parsed = tomllib.loads(text)
            if json.loads(json.dumps(parsed)) != parsed:
                raise ValueError(f"{path}: holds a value that JSON does not carry as it is")
            entries[digest(text)] = parsed
    # the tables' keys in the file's order, as tomllib gives them (what shows them keeps it)
    return json.dumps(entries, ensure_ascii=False, separators=(",", ":")) + "\n"


def write() -> Path:
    """Rewrite ``toml_cache.json``; the path written."""
    CACHE.write_text(generate(), encoding="utf-8")
    _entries.cache_clear()
    return CACHE


if __name__ == "__main__":
    print(f"wrote {write()}")
