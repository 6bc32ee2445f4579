"""Writing the files ``roofline measure`` and ``roofline validate`` produce.

- numbers with units as a hardware file spells them: rates with a decimal prefix
  (:func:`format_rate`), byte counts with a binary one (:func:`format_bytes`);
- a small TOML writer (:func:`toml_document`): top-level scalars, then one ``[section]`` per table
  of scalars or inline tables — the shape of a hardware file (``hardware/README.md``);
- an atomic write (:func:`write_atomic`: a temporary file in the same folder, then a rename), with
  an optional check of the temporary file before the rename; :func:`hardware_check` is that check
  for a hardware file: it must load with the project's reader (:mod:`roofline.specs.hardware`);
- checks made before any measuring, so that no work is lost to a target that cannot be written:
  :func:`check_output_file`, :func:`check_output_folder`, and :func:`check_name` (a device name the
  hardware reader would accept).

What is measured, and how, is :mod:`roofline.measure`; this module holds no hardware number.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import InputError, SpecError

__all__ = ["format_rate", "format_bytes", "toml_document", "write_atomic", "check_output_file",
           "check_output_folder", "check_name", "hardware_check"]


# --- formatting ------------------------------------------------------------------------------
_DECIMAL = (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15))
_BINARY = (("", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40))


def format_rate(value: float, unit: str) -> str:
    """A rate with a decimal prefix and 4 significant digits: ``format_rate(3.2e11, "FLOP/s")``.

    >>> format_rate(3.2e11, "FLOP/s")
    '320 GFLOP/s'
    >>> format_rate(19512345678.0, "B/s")
    '19.51 GB/s'
    """
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"a rate must be positive and finite, got {value!r}")
    prefix, scale = _DECIMAL[0]
    for p, s in _DECIMAL:
        if value >= s:
            prefix, scale = p, s
    return f"{value / scale:.4g} {prefix}{unit}"


def format_bytes(value: float) -> str:
    """Bytes with a binary prefix: exact when a whole multiple, else 4 significant digits.

    >>> format_bytes(480 * 2**20), format_bytes(48 * 2**10), format_bytes(24_000_000_000)
    ('480 MiB', '48 KiB', '22.35 GiB')
    """
    unit, scale = "B", 1
    for u, s in _BINARY[1:]:
        if value >= s:
            unit, scale = u, s
    q = value / scale
    return f"{int(q)} {unit}" if q == int(q) else f"{q:.4g} {unit}"


def _toml_string(text: str) -> str:
    r"""A TOML basic string: backslash, quote and control characters escaped.

    >>> print(_toml_string('a "b"\\c\n'))
    "a \"b\"\\c\n"
    """
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def toml_document(doc: Mapping[str, Any], header: str = "") -> str:
    """TOML text of ``doc``: top-level scalars first, then one ``[section]`` per mapping whose
    values are scalars or inline tables. Keys must be bare (letters, digits, ``_``, ``-``)."""
    lines = [f"# {line}" for line in header.splitlines()]
    scalars = {k: v for k, v in doc.items() if not isinstance(v, Mapping)}
    for key, value in scalars.items():
        lines.append(f"{_bare(key)} = {_toml_value(value)}")
    for key, table in doc.items():
        if isinstance(table, Mapping):
            lines += ["", f"[{_bare(key)}]"]
            lines += [f"{_bare(k)} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _bare(key: str) -> str:
    if not key or not all(ch.isalnum() or ch in "_-" for ch in key) or not key.isascii():
        raise ValueError(f"not a bare TOML key: {key!r}")
    return key


def write_atomic(path: str | Path, text: str,
                 check: Callable[[Path], Any] | None = None) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename.

    ``check(tmp)``, if given, reads the temporary file before the rename; whatever it raises
    propagates and nothing is renamed (the temporary file is removed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


# --- checks made before any measuring ----------------------------------------------------------
def _writable_folder(folder: Path, option: str, target: Path) -> None:
    """``folder`` exists and is writable, or the nearest existing folder above it is."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(option, f"cannot write there: {existing} is a file, not a folder",
                         str(target))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(option, f"cannot write there: the folder {existing} is not writable",
                         str(target))


def check_output_file(path: str | Path, option: str = "-o",
                      suffix: str | None = ".toml") -> Path:
    """Refuse, before any work, a file target that could not be written: a wrong suffix, a
    folder, a file under a file, an unwritable folder. Returns ``path`` as a Path."""
    path = Path(path)
    if suffix is not None and path.suffix != suffix:
        raise InputError(option, f"must name a {suffix} file", str(path))
    if path.is_dir():
        raise InputError(option, "is a folder; give a file name", str(path))
    _writable_folder(path.parent, option, path)
    return path


def check_output_folder(path: str | Path, files: Iterable[str], option: str = "-o") -> Path:
    """Refuse, before any work, a folder target that could not hold ``files``: a file in its
    place, a file above it, an unwritable folder, one of ``files`` already a folder."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(option, "must be a folder, not a file", str(path))
    _writable_folder(path, option, path)
    for name in files:
        if (path / name).is_dir():
            raise InputError(option, f"cannot write {name}: {path / name} is a folder",
                             str(path))
    return path


def _probe_document(name: str) -> dict[str, Any]:
    """The smallest hardware file the reader accepts, with ``name`` as its name."""
    def entry(value: str) -> dict[str, str]:
        return {"value": value, "source": "probe"}

    return {"name": name, "vendor": "probe", "kind": "cpu",
            "peak_flops": {"fp32": entry("1 GFLOP/s")},
            "memory": {"bandwidth": entry("1 GB/s"), "capacity": entry("1 GiB")}}


def check_name(name: str, option: str = "--name") -> None:
    """Refuse a device name the hardware reader would refuse, by reading a file that has it."""
    import tempfile

    from .specs.hardware import read_hardware

    try:
        encoded = toml_document(_probe_document(name)).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(option, "must be UTF-8 text", name) from None
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder, "probe.toml")
        probe.write_bytes(encoded)
        try:
            read_hardware(probe)
        except SpecError as err:
            raise InputError(option, err.rule, name) from None


def hardware_check(final: str | Path) -> Callable[[Path], None]:
    """A ``check`` for :func:`write_atomic`: the temporary file must load as a hardware file;
    an error names ``final`` (the file that was not written) rather than the temporary one."""
    from .specs.hardware import read_hardware

    def check(tmp: Path) -> None:
        try:
            read_hardware(tmp)
        except SpecError as err:
            where = err.where.replace(str(tmp), str(final))
            raise SpecError(where, f"{err.rule}; nothing was written", err.value) from None

    return check
