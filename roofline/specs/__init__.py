"""Hardware and model descriptions: parse → validate → frozen dataclass.

``hardware/*.toml`` become :class:`Hardware`, Hugging Face ``config.json`` files become
:class:`ModelShape`. The names below are imported on first use, so that reading a hardware file
does not import SymPy.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Hardware", "load_hardware", "list_hardware",
    "ModelShape", "load_model", "list_models",
    "bytes_per_element", "COMPUTE_DTYPES", "STORAGE_DTYPES",
    "parse_quantity", "read_text", "parse_positive_int",
]

_WHERE = {
    "Hardware": "hardware", "load_hardware": "hardware", "list_hardware": "hardware",
    "ModelShape": "model", "load_model": "model", "list_models": "model",
    "bytes_per_element": "dtypes", "COMPUTE_DTYPES": "dtypes", "STORAGE_DTYPES": "dtypes",
    "parse_quantity": "units", "read_text": "files", "parse_positive_int": "numbers",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
