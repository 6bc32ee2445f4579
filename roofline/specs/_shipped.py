"""Where the shipped hardware and model files are: installed as package data
(``roofline.hardware_files``, ``roofline.model_files``), or, in a source checkout, the top-level
``hardware/`` and ``models/`` folders. Nothing is read at import time."""

from __future__ import annotations

import importlib.resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["shipped_dir", "shipped_files", "read_text"]

_PACKAGES = {"hardware": "roofline.hardware_files", "models": "roofline.model_files"}


def shipped_dir(kind: str) -> Traversable | Path:
    """The folder of shipped files of ``kind`` (``"hardware"`` or ``"models"``)."""
    try:
        return importlib.resources.files(_PACKAGES[kind])
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / kind


def shipped_files(kind: str, suffix: str) -> list[Path]:
    """The shipped files of ``kind`` whose names end in ``suffix``, sorted by name."""
    folder = shipped_dir(kind)
    return sorted((Path(str(f)) for f in folder.iterdir() if f.name.endswith(suffix)),
                  key=lambda p: p.name)


def read_text(path: Path) -> str:
    """A spec file's text: UTF-8, or a :class:`SpecError` naming the file."""
    from ..errors import SpecError

    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise SpecError(str(path), f"cannot read the file: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise SpecError(str(path), f"is not UTF-8 text (byte {err.start})") from None
