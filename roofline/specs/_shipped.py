"""Where the shipped hardware and model files are: installed as package data
(``roofline.hardware_files``, ``roofline.model_files``), or, in a source checkout, the top-level
``hardware/`` and ``models/`` folders. Nothing is read at import time.

The folders are found with ``importlib.util.find_spec`` rather than ``importlib.resources``, which
costs a command's start about 5 ms (it imports tempfile, shutil and the compression modules).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .files import read_text  # kept importable from here; the one reader lives in files.py

__all__ = ["shipped_dir", "shipped_files", "read_text"]

_PACKAGES = {"hardware": "roofline.hardware_files", "models": "roofline.model_files",
             "published": "roofline.published_files"}


def shipped_dir(kind: str) -> Path:
    """The folder of shipped files of ``kind`` (``"hardware"``, ``"models"`` or
    ``"published"``)."""
    spec = importlib.util.find_spec(_PACKAGES[kind])
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parents[2] / kind


def shipped_files(kind: str, suffix: str) -> list[Path]:
    """The shipped files of ``kind`` whose names end in ``suffix``, sorted by name."""
    return sorted((f for f in shipped_dir(kind).iterdir() if f.name.endswith(suffix)),
                  key=lambda p: p.name)
