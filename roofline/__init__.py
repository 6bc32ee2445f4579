"""roofline: a symbolic roofline of LLM prefill and its contrast with decode.

>>> import roofline
>>> print(roofline.prefill("H100-SXM", "Llama-3-8B", [2048]))  # doctest: +SKIP
"""

from .api import (CrossoverTable, PrefillTable, TTFTResult, crossovers, prefill, setting,
                  ttft)
from .catalog import catalogue, get
from .errors import RooflineError
from .specs.hardware import list_hardware, load_hardware
from .specs.model import list_models, load_model

__all__ = ["prefill", "crossovers", "setting", "ttft", "PrefillTable", "CrossoverTable",
           "TTFTResult", "catalogue", "get", "load_hardware", "list_hardware", "load_model", "list_models", "RooflineError"]
