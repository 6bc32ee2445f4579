"""roofline: a symbolic roofline of LLM prefill and its contrast with decode.

Importing the package loads nothing heavy: each public name is imported on first use (PEP 562),
so ``import roofline`` costs no SymPy, numpy or matplotlib.

>>> import roofline
>>> print(roofline.prefill("H100-SXM", "Llama-3-8B", [2048]))  # doctest: +SKIP
"""

from __future__ import annotations

from ._lazy import lazy

# public name → the module that defines it
_WHERE = {
    "prefill": "api", "prefill_columns": "api", "crossovers": "api", "setting": "api",
    "PrefillTable": "api",
    "CrossoverTable": "api", "ttft": "api", "hybrid": "api", "request": "api",
    "goodput": "api", "TTFTResult": "api", "catalogue": "catalog",
    "get": "catalog",
    "RooflineError": "errors", "load_hardware": "specs.hardware",
    "list_hardware": "specs.hardware", "load_model": "specs.model", "list_models": "specs.model",
}

__all__ = list(_WHERE)
__getattr__, __dir__ = lazy(__name__, _WHERE)
