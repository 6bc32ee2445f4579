"""Writing the hardware file ``roofline measure`` produces.

- numbers with units as a hardware file spells them: rates with a decimal prefix
  (:func:`format_rate`), byte counts with a binary one (:func:`format_bytes`);
- a small TOML writer (:func:`toml_document`): top-level scalars, then one ``[section]`` per table
  of scalars or inline tables — the shape of a hardware file (``hardware/README.md``);
- :func:`write_hardware`: the document written atomically (:func:`roofline.output.write_atomic`)
  after :func:`hardware_check` read the temporary file back with the project's reader
  (:mod:`roofline.specs.hardware`), so no file the reader would refuse is ever written;
- :func:`check_name`, made before any measuring: a device name the hardware reader would accept.

What is measured, and how, is the rest of :mod:`roofline.measure`; this module holds no hardware
number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, SpecError
from ..output import write_atomic

__all__ = ["format_rate", "format_bytes", "toml_document", "check_name", "hardware_check",
           "write_hardware"]


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


def _probe_document(name: str) -> dict[str, Any]:
    """The smallest hardware file the reader accepts, with ``name`` as its name."""
    def entry(value: str) -> dict[str, str]:
        return {"value": value, "source": "probe"}

    return {"name": name, "vendor": "probe", "kind": "cpu",
            "peak_flops": {"fp32": entry("1 GFLOP/s")},
            "memory": {"bandwidth": entry("1 GB/s"), "capacity": entry("1 GiB")}}


def check_name(name: str, argument: str = "name") -> None:
    """Refuse a device name the hardware reader would refuse, by reading a file that has it; the
    :class:`InputError` names ``argument``."""
    import tempfile

    from ..specs.hardware import read_hardware

    try:
        encoded = toml_document(_probe_document(name)).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(argument, "must be UTF-8 text", name) from None
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder, "probe.toml")
        probe.write_bytes(encoded)
        try:
            read_hardware(probe)
        except SpecError as err:
            raise InputError(argument, err.rule, name) from None


def hardware_check(final: str | Path) -> Callable[[Path], None]:
    """A ``check`` for :func:`roofline.output.write_atomic`: the temporary file must load as a
    hardware file; an error names ``final`` (the file that was not written), not the temporary
    one."""
    from ..specs.hardware import read_hardware

    def check(tmp: Path) -> None:
        try:
            read_hardware(tmp)
        except SpecError as err:
            where = err.where.replace(str(tmp), str(final))
            raise SpecError(where, f"{err.rule}; nothing was written", err.value) from None

    return check


def write_hardware(path: str | Path, doc: Mapping[str, Any], header: str = "",
                   argument: str | None = "output") -> Path:
    """Write ``doc`` as a hardware file at ``path``, atomically, once the temporary file loads
    with the hardware reader (else a :class:`SpecError` and nothing written); an operating-system
    error is an :class:`InputError` naming ``argument``."""
    return write_atomic(path, toml_document(doc, header), check=hardware_check(path),
                        argument=argument)
