"""Writing a file the library produces: check the target before any work, then write atomically.

- :func:`check_target` refuses, before anything is computed, a target that could not be written:
  a wrong suffix, a folder where a file must go (or a file where a folder must), a file above it,
  an unwritable folder, a folder in place of one of the files a folder target will hold. It
  creates nothing.
- :func:`write_atomic` writes text or bytes through a temporary file in the same folder and
  renames it over the target (``os.replace``): a reader sees the old file or the new one, never
  half of one. The temporary file is removed on any exception, ``KeyboardInterrupt`` included. An
  operating-system error is one line naming the path and the reason.
- :func:`write_all` does so for several files, all or none: every one is written beside its
  target before any is renamed, and a failure puts back what was there.

Errors name the library's argument (``output`` by default), not a command-line flag; the command
line maps an argument it has to its flag.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import InputError, RooflineError

__all__ = ["check_target", "make_folders", "remove_folders", "write_atomic", "write_all"]


def _writable_folder(folder: Path, argument: str, target: Path) -> None:
    """``folder`` exists and is writable, or the nearest existing folder above it is."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(argument, f"cannot write there: {existing} is a file, not a folder",
                         str(target))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(argument, f"cannot write there: the folder {existing} is not writable",
                         str(target))


def check_target(path: str | Path, what: str = "file", *, suffix: str | None = None,
                 contents: Iterable[str] = (), argument: str = "output") -> Path:
    """Refuse, before any work, a target that could not be written; returns it as a Path.

    ``what`` is ``"file"`` (``suffix``, if given, is the one it must have) or ``"folder"``
    (``contents``: the names of the files it will hold, none of which may be a folder).
    An :class:`InputError` names ``argument``.

    >>> check_target("out/report.md", suffix=".md").name
    'report.md'
    >>> check_target("out/report.txt", suffix=".md")
    Traceback (most recent call last):
    ...
    roofline.errors.InputError: output: must name a .md file (got 'out/report.txt')
    """
    path = Path(path)
    if what == "file":
        if suffix is not None and path.suffix != suffix:
            raise InputError(argument, f"must name a {suffix} file", str(path))
        if path.is_dir():
            raise InputError(argument, "is a folder; give a file name", str(path))
        _writable_folder(path.parent, argument, path)
    elif what == "folder":
        if path.exists() and not path.is_dir():
            raise InputError(argument, "must be a folder, not a file", str(path))
        _writable_folder(path, argument, path)
        for name in contents:
            target = path / name
            if target.exists() and not target.is_file():
                what = "a folder" if target.is_dir() else "not a regular file"
                raise InputError(argument, f"{target} is {what}; a file is written there",
                                 str(path))
    else:
        raise ValueError(f"what must be 'file' or 'folder', got {what!r}")
    return path


def make_folders(folder: str | Path, argument: str = "output") -> list[Path]:
    """Create ``folder`` and its missing parents; the ones created, deepest first (for
    :func:`remove_folders` to undo). An ``OSError`` is an :class:`InputError` of ``argument``."""
    folder = Path(folder)
    made = []
    for p in (folder, *folder.parents):
        if p.exists():
            break
        made.append(p)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(argument, f"cannot create the folder: {_reason(err)}",
                         str(folder)) from None
    return made


def remove_folders(made: Iterable[Path]) -> None:
    """Remove the folders :func:`make_folders` created, deepest first, while they are empty."""
    for p in made:
        try:
            p.rmdir()
        except OSError:
            break


def _temporary(path: Path) -> Path:
    """The temporary file a write goes to before its rename over ``path``: hidden, beside it
    (the same file system), this process's."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _reason(err: OSError) -> str:
    return " ".join(str(err.strerror or err).split())  # one line


def write_atomic(path: str | Path, data: str | bytes, *,
                 check: Callable[[Path], Any] | None = None,
                 argument: str | None = None) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through a temporary file in the same
    folder (created, with its parents, if missing), then ``os.replace``; returns ``path``.

    ``check(tmp)``, if given, reads the temporary file before the rename; whatever it raises
    propagates and nothing is renamed. The temporary file never outlives the call. An
    ``OSError`` becomes one line: an :class:`InputError` naming ``argument`` when one is given,
    else a :class:`RooflineError` ``PATH: cannot write the file: REASON``.
    """
    path = Path(path)
    tmp = _temporary(path)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(raw)
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    except OSError as err:
        if argument is not None:
            raise InputError(argument, f"cannot write the file: {_reason(err)}",
                             str(path)) from None
        raise RooflineError(f"{path}: cannot write the file: {_reason(err)}") from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    return path


def write_all(files: dict[Path, bytes | None], argument: str = "output") -> None:
    """Each file's new bytes (None: the file removed), all or none: every new file is first
    written beside its target (a full disk or a read-only folder stops here, nothing changed),
    then each is renamed over its target and each removal made; where one of those fails (a
    target that refuses to be replaced) or Ctrl-C comes, the files changed so far get their old
    bytes back. Folders are the caller's (:func:`make_folders`). An ``OSError`` is one
    :class:`InputError` of ``argument`` naming the file."""
    old: dict[Path, bytes | None] = {}
    temps: dict[Path, Path] = {}
    done: list[Path] = []
    path = next(iter(files), Path("."))  # the file at hand, for the error
    try:
        for path, data in files.items():
            old[path] = path.read_bytes() if path.is_file() else None
            if data is not None:
                temps[path] = tmp = _temporary(path)
                tmp.write_bytes(data)
        for path, data in files.items():
            if data is None:
                path.unlink()
            else:
                os.replace(temps[path], path)
                del temps[path]  # renamed: nothing left to remove
            done.append(path)
    except BaseException as err:
        for changed in done:  # as it was, where the file system lets it be
            try:
                before = old[changed]
                if before is None:
                    changed.unlink(missing_ok=True)
                else:
                    changed.write_bytes(before)
            except OSError:
                pass
        if isinstance(err, OSError):
            raise InputError(argument, f"cannot write the file: {_reason(err)}",
                             str(path)) from None
        raise
    finally:
        for tmp in temps.values():
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
