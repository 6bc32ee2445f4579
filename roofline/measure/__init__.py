"""Measurement: this machine's numbers for a hardware file, and the model held against them.

One module per job, data flowing one way (no module imports one to its right):

    timing, system → kernels, hwfile → calibrate → cpu        (``roofline measure``)
    predict → validation → gpu, report                        (``roofline validate``)

- :mod:`.timing`: repeated timings and their statistics, the progress bar;
- :mod:`.system`: caches, memory, cores, load, CPU and BLAS provenance;
- :mod:`.kernels`: the numpy kernels (matmul, stream, attention) and the timed sweeps;
- :mod:`.calibrate`: the GEMM weight stream behind ``[efficiency] bandwidth``;
- :mod:`.cpu`: the measurement's plan, run and hardware document;
- :mod:`.hwfile`: number formats, TOML, the checked write of a hardware file;
- :mod:`.predict`: the model's prediction through the evaluation core;
- :mod:`.validation`: the records of a run, the comparison, the knee fit, ``validate``;
- :mod:`.gpu`: the optional GPU part (PyTorch), its device and timer injectable;
- :mod:`.report`: ``validation.md`` and its figures.

numpy, SymPy, matplotlib and torch are imported inside the functions that use them.
"""

from .cpu import Measurement, Plan, measure, plan
from .hwfile import format_bytes, format_rate, toml_document, write_hardware
from .timing import Stats, summarize, time_call
from .validation import (AttentionSweep, Knee, Machine, Point, ProjectionSweep, Validation,
                         validate)

__all__ = ["measure", "plan", "Plan", "Measurement", "Stats", "summarize", "time_call",
           "format_rate", "format_bytes", "toml_document", "write_hardware", "validate",
           "Validation", "Machine", "ProjectionSweep", "AttentionSweep", "Knee", "Point"]
