"""The user's cache of generated code: modules that :mod:`.printer` wrote, kept between calls.

A module is kept as ``<cache>/roofline/<key>/<name>.py``, where ``<cache>`` is
``$XDG_CACHE_HOME`` (else ``~/.cache``) and ``<key>`` is :func:`key`: a digest of the derivation
sources and the SymPy version, so that a change to either starts a new folder and a stale module
is never read. Its first line is ``# roofline <digest>``, the BLAKE2b digest of the rest of the
text. A file is executed only where that digest matches, the file belongs to this user and no one
else may write to it (nor to its folder); any other file is ignored and written again (the file
is read twice, once to check it and once to import it: what guards the time between is that no
one else may write the folder). A module is written atomically (a temporary file beside it,
then renamed): two processes that write the same module at once leave one whole copy. Its
bytecode is written beside it (``__pycache__``, checked against the source's hash), and kept
only while it too is the user's alone. Where the cache cannot be written (a read-only or full
disk), the module is kept in memory for this process, with one warning. Folders of other keys
(other versions of the derivations or of SymPy) are left alone: another installation may use
them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import types
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["key", "key_of", "directory", "load", "module_name", "read_kept", "keep",
           "clear_memory"]

# What generated code is made from: a change to any of these gives a new key.
_SOURCES = ("symbols.py", "catalog.py", "derive", "codegen", "evaluate/forms.py",
            "evaluate/solved.py")
_HEADER = "# roofline "
_warned: list[str] = []
_memory: dict[tuple[str, str], str] = {}  # (key, name) → text, where the cache is not writable


def _sympy_version() -> str:
    """SymPy's version, read from its ``release.py`` (importing SymPy, or the package metadata,
    would cost a call that needs neither a large part of its time)."""
    spec = importlib.util.find_spec("sympy")
    if spec is None or spec.origin is None:  # pragma: no cover - SymPy is a dependency
        return "absent"
    text = Path(spec.origin).with_name("release.py").read_text(encoding="utf-8")
    return text.split("=", 1)[1].strip().strip("\"'")


@cache
def key() -> str:
    """The digest of this package's derivation sources and the SymPy version (32 hex digits)."""
    return key_of(Path(__file__).parents[1])


def key_of(root: Path) -> str:
    """The digest of the derivation sources of the package at ``root`` and the SymPy
    version."""
    digest = hashlib.blake2b(_sympy_version().encode(), digest_size=16)
    for name in _SOURCES:
        path = root / name
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            digest.update(file.relative_to(root).as_posix().encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def directory() -> Path:
    """The folder of this version's generated modules (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "roofline" / key()


def module_name(part: str, shape: Any, *more: Any) -> str:
    """The name of the generated ``part`` of ``shape`` (a dataclass such as an architecture) and
    ``more`` (its cache levels): ``part`` and a digest of their fields."""
    text = json.dumps([dataclasses.asdict(shape), *more], sort_keys=True)
    return f"{part}-{_digest(text)[:20]}"


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _trusted(path: Path) -> bool:
    """Whether ``path`` and its folder belong to this user and no one else may write them."""
    for p in (path.parent, path):
        st = p.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
    return True


def _read(path: Path) -> str | None:
    """The module text at ``path`` where it is whole and trusted, else None."""
    try:
        if not _trusted(path):
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    first, _, rest = text.partition("\n")
    if first != _HEADER + _digest(rest):
        return None
    return rest


def _write(path: Path, text: str, code: bool = True) -> bool:
    """Write ``text`` under its header atomically (with its bytecode where it is ``code``);
    False where the cache cannot be written."""
    import tempfile  # here: only a call that writes the cache needs it

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(_HEADER + _digest(text) + "\n" + text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        if code:
            _compile(path)
    except OSError as e:
        if not _warned:
            _warned.append(str(e))
            warnings.warn(f"the cache {path.parent} cannot be written ({e}); what is "
                          "generated (code, pages) is kept for this process only", stacklevel=4)
        return False
    return True


def _compile(path: Path) -> None:
    """Write the module's bytecode beside it (``__pycache__``, checked against the source's
    hash when imported), also where the interpreter writes none itself
    (``PYTHONDONTWRITEBYTECODE``): a later import then compiles nothing."""
    import py_compile

    pyc = Path(importlib.util.cache_from_source(str(path)))
    pyc.parent.mkdir(mode=0o755, exist_ok=True)
    py_compile.compile(str(path), cfile=str(pyc), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    os.chmod(pyc, 0o644)


def _bytecode_trusted(path: Path) -> None:
    """Remove the module's bytecode where it, or its folder, is not this user's alone (the
    source is compiled afresh then)."""
    pyc = Path(importlib.util.cache_from_source(str(path)))
    try:
        if not _trusted(pyc):
            pyc.unlink()
    except OSError:
        pass


def _module(name: str, text: str | None, path: Path) -> types.ModuleType:
    """The module of ``text`` (in memory), or of the file at ``path`` where ``text`` is None
    (imported as Python imports a file: its bytecode kept beside it, in ``__pycache__``)."""
    module_name = f"roofline_generated_{name.replace('-', '_')}"
    if text is not None:
        module = types.ModuleType(module_name)
        module.__file__ = str(path)
        exec(compile(text, str(path), "exec"), module.__dict__)
        return module
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(name: str, make: Callable[[], str], extend: str = "") -> types.ModuleType:
    """The generated module ``name``: read from the cache where a whole, trusted copy is there,
    else its text made by ``make()`` and written there. ``extend``: text to add at the end of
    the module (written back, so that later calls read it too)."""
    path = directory() / f"{name}.py"
    kept = _memory.get((key(), name))
    text = kept or _read(path)
    if text is not None and not extend:
        if kept is None:
            _bytecode_trusted(path)
        return _module(name, kept, path)  # as read (the file's own bytes, checked)
    text = (text or make()) + ("\n\n" + extend if extend else "")
    if _write(path, text):
        return _module(name, None, path)
    _memory[(key(), name)] = text
    return _module(name, text, path)


def read_kept(path: Path) -> str | None:
    """The text kept at ``path`` by :func:`keep`, where a whole copy of this user's is there."""
    return _read(path)


def keep(path: Path, text: str) -> bool:
    """Keep a text that is not code (a generated page) at ``path``, as modules are kept: under
    its digest, atomically, this user's alone; False where the cache cannot be written."""
    return _write(path, text, code=False)


def clear_memory() -> None:
    """Forget the modules kept in memory (for tests)."""
    _memory.clear()
    _warned.clear()
