"""Reading a spec file safely: a regular file, of bounded size, in UTF-8, parsed without a
traceback however deep its nesting.

Every loader of the package reads its files through :func:`read_text` (hardware TOML files,
model ``config.json`` files, and any other small text file a user names). What it refuses, it
refuses with one :class:`SpecError` line that names the file:

* anything that is not a regular file — a directory, a FIFO, a device such as ``/dev/zero`` —
  found with :func:`os.stat` *before* the file is opened, so that nothing blocks or streams for
  ever (POSIX ``stat``: ``S_ISREG``);
* a file larger than ``max_bytes`` (1 MiB unless told; the largest shipped file is a few KiB);
* bytes that are not UTF-8 (the first bad byte's offset is given).

:func:`parse_toml` and :func:`parse_json` turn a parser's failures — a syntax error, an integer
of more digits than Python converts (``sys.get_int_max_str_digits``, 4300 by default), nesting
thousands deep (a ``RecursionError``) — into the same kind of line.

>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as d:
...     read_text(pathlib.Path(d), "model config")
Traceback (most recent call last):
...
roofline.errors.SpecError: ...: is not a regular file (a directory); a model config must be \
a regular file
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import SpecError

__all__ = ["MAX_BYTES", "read_text", "parse_toml", "parse_json", "check_printable", "unique_names"]

MAX_BYTES = 2**20  # 1 MiB: a spec file is a few KiB; anything far larger is not one


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def read_text(path: str | Path, what: str = "spec file", max_bytes: int = MAX_BYTES) -> str:
    """The text of the regular file ``path``: at most ``max_bytes`` bytes of UTF-8.

    ``what`` names the file in the model's words (``"hardware file"``, ``"model config"``).
    Raises :class:`SpecError` (``path: rule``) for a missing or unreadable file, anything but a
    regular file (checked before opening), a file over ``max_bytes``, or bytes not UTF-8.
    """
    path = Path(path)
    where = str(path)
    try:
        info = os.stat(path)  # follows links: a link to a regular file is fine
    except OSError as err:
        raise SpecError(where, f"cannot read the file: {err.strerror}") from None
    except ValueError as err:  # e.g. an embedded NUL byte in the name
        raise SpecError(where, f"cannot read the file: {err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(where, f"is not a regular file ({_kind(info.st_mode)}); a {what} must "
                        "be a regular file")
    limit = f"a {what} must be at most {max_bytes:,} bytes"
    if info.st_size > max_bytes:
        raise SpecError(where, f"is too large ({info.st_size:,} bytes); {limit}")
    try:
        # O_NONBLOCK: should the path have been swapped for a FIFO since stat, open returns
        # at once and fstat below refuses it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise SpecError(where, f"cannot read the file: {err.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise SpecError(where, f"is not a regular file; a {what} must be a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew after stat
        raise SpecError(where, f"is too large (over {max_bytes:,} bytes); {limit}")
    try:  # a byte-order mark, which some Windows editors write, is not part of the text
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise SpecError(where, f"is not UTF-8 text (byte {err.start})") from None


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, or one :class:`SpecError` line naming ``where``.

    >>> parse_toml("a = " + "[" * 5000 + "]" * 5000, "x.toml")
    Traceback (most recent call last):
    ...
    roofline.errors.SpecError: x.toml: is not valid TOML: nested too deeply
    """
    import tomllib

    return _parse(tomllib.loads, "TOML", text, where)


def parse_json(text: str, where: str) -> Any:
    """``json.loads(text)``, or one :class:`SpecError` line naming ``where``.

    >>> parse_json("[" * 100000, "x.json")
    Traceback (most recent call last):
    ...
    roofline.errors.SpecError: x.json: is not valid JSON: nested too deeply
    """
    return _parse(_json_loads, "JSON", text, where)


def _json_loads(text: str) -> Any:
    """``json.loads``, where a key given twice in one object is an error (as TOML has it), not
    the last one winning."""
    return json.loads(text, object_pairs_hook=_object)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice in one object")
        out[key] = value
    return out


def _parse(loads: Callable[[str], Any], language: str, text: str, where: str) -> Any:
    try:
        return loads(text)
    except RecursionError:
        raise SpecError(where, f"is not valid {language}: nested too deeply") from None
    except ValueError as err:  # a decode error, a duplicate key, or too long an integer
        if "Exceeds the limit" in str(err):  # Python's own words, with advice for its caller
            raise SpecError(where, f"is not valid {language}: an integer of more than "
                            f"{sys.get_int_max_str_digits():,} digits") from None
        raise SpecError(where, f"is not valid {language}: {_one_line(err)}") from None


def _one_line(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 200 else text[:199] + "…"


def check_printable(text: str, where: str, lines: bool = False) -> str:
    """``text`` as a file gives it, if it holds no control or format character (Unicode's Cc,
    Cf, Zl, Zp: an escape sequence, U+202E that reverses what follows, a line break in a name)
    but, where ``lines``, line breaks and tabs: such a character would be written as it is to a
    terminal, a table or a figure. Spaces of every width print. Else a :class:`SpecError` naming
    ``where`` and the character.

    >>> check_printable("H100\\x1b[31m", "x.toml: name")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    roofline.errors.SpecError: x.toml: name: holds '\\x1b', which does not print; ...
    """
    if text.isprintable():  # the common case, at once
        return text
    import unicodedata

    for c in text:
        if unicodedata.category(c) in _UNPRINTED and not (lines and c in "\n\t"):
            raise SpecError(where, f"holds {c!r}, which does not print; text must be printable "
                            "characters", text)
    return text


_UNPRINTED = ("Cc", "Cf", "Zl", "Zp")  # control, format, line and paragraph separators


def unique_names(records: Iterable[Any]) -> list[Any]:
    """Records read from files (each with ``name`` and ``path``), sorted by name; two with one
    name are a :class:`SpecError` naming the second file and the first."""
    seen: dict[str, Any] = {}
    for record in records:
        if record.name in seen:
            raise SpecError(f"{record.path}: name", f"is also the name in "
                            f"{seen[record.name].path}; names must be unique", record.name)
        seen[record.name] = record
    return [seen[name] for name in sorted(seen)]
