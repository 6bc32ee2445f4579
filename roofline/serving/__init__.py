"""Serving prefill: time to first token in numbers: the prefill queue (:mod:`.queue`, M/D/1 and M/G/1 of
DistServe §3.1) and batched or chunked prefill on one device (:mod:`.schedule`), both evaluated
through :mod:`roofline.evaluate`; the inputs checked in :mod:`.checks`. The public entry point is
:func:`roofline.ttft` (:mod:`roofline.api`)."""

from . import checks, parts, pipeline
from .checks import MAX_BATCH, MAX_TOKENS, PARALLEL
from .queue import (QueueModel, QueuePoint, inter_beats_intra_rate, max_rate, moments,
                    queue_model, ttft, ttft_curve)
from .schedule import Batching, Chunking, batch_wait_curve, batching, chunking

__all__ = ["checks", "parts", "pipeline", "QueueModel", "QueuePoint", "queue_model", "ttft", "ttft_curve", "max_rate",
           "inter_beats_intra_rate", "moments", "Batching", "batching", "batch_wait_curve",
           "Chunking", "chunking", "PARALLEL", "MAX_TOKENS", "MAX_BATCH"]
