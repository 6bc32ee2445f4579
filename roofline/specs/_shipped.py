"""Where the shipped hardware and model files are: installed as package data
(``roofline.hardware_files``, ``roofline.model_files``), or, in a source checkout, the top-level
``hardware/`` and ``models/`` folders. Nothing is read at import time."""

from __future__ import annotations

import importlib.resources
from importlib.resources.abc import Traversable
from pathlib import Path

from .files import read_text  # kept importable from here; the one reader lives in files.py

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
