"""Serving through pipeline stages, as the setting's ``pipeline`` runs a prompt: whole through
each stage, the queue of DistServe §3.1's inter-op instance served at the slowest stage
(:func:`roofline.derive.pipeline.interop_ttft`, the stage times of
:func:`roofline.evaluate.parallel.stage_times`); or in chunks that fill the pipeline, one prompt
at a time in the bound's time."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..evaluate import Setting
    from ..specs.distribution import Distribution

__all__ = ["doubled", "stages"]


def doubled(s: Setting) -> Setting:
    """DistServe's two-way inter-op instance of the setting: its layers over twice its pipeline
    stages, served as ``pp`` stages are (:func:`stages`). Where the layers cannot be split so,
    an InputError naming ``parallel``."""
    try:
        return replace(s, pp=2 * s.pp)
    except InputError as err:
        raise InputError("parallel", f"inter-op needs the layers split over {2 * s.pp} "
                         f"pipeline stages ({err.option}: {err.rule})", err.value) from None


def stages(s: Setting, dist: Distribution,
           one: bool) -> tuple[float, float, float, tuple[float, ...] | None]:
    """The setting's N_pp pipeline stages: E[e] of a prompt's time through them, (E[s], E[s²])
    of the time at which a new prompt can enter (``one`` prompt length: E[s]², exactly
    deterministic), and the mean time of each stage (None where the stages are not apart).

    As the setting's ``pipeline`` runs a prompt (:mod:`roofline.derive.pipeline`): ``whole``,
    through each stage in turn, e is the stages' sum with the sends and s the slowest stage's
    time (DistServe §3.1); ``chunked``, its chunks filling the pipeline, the pipeline serves
    one prompt at a time in the bound's time, e = s (a stage's mean share of the work)."""
    from ..evaluate.parallel import stage_times
    from ..evaluate.phases import prefill_time

    w = dist.weights
    if s.pipeline == "chunked":
        times = prefill_time(s, dist.lengths)
        mean = float(w @ times)
        return mean, mean, mean**2 if one else float(w @ times**2), None
    times = stage_times(s, dist.lengths)  # stages × lengths
    through, slowest = times.sum(axis=0), times.max(axis=0)
    stage_mean = float(w @ slowest)
    stage_second = stage_mean**2 if one else float(w @ slowest**2)
    return (float(w @ through), stage_mean, stage_second, tuple(float(x) for x in times @ w))
