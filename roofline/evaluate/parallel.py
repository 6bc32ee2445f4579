"""What N devices buy: the prefill time of one setting at several tensor-parallel degrees, its
communication share and the parallel efficiency t(1)/(N·t(N)) (the numbers of the scaling
figure); and the time of each pipeline stage (the inter-op queue of ``ttft --parallel
inter``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError
from .phases import operations, roofline_time
from .points import prefill
from .setting import Setting

__all__ = ["Scaling", "scaling", "DEGREES", "stage_times", "FIRST", "LAST"]

# The operations of the pipeline's first and last stage; every other one (but the sends) is a
# layer's, shared by the stages in proportion to their layers.
FIRST = ("embedding", "embed_scale", "tp.all_reduce.embedding")
LAST = ("final_norm", "lm_head", "tp.all_gather.logits")

DEGREES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Scaling:
    """Per degree (``degrees``) and prompt length (``prompts``): the prefill time, the part of
    it spent in communication, and the parallel efficiency t(1)/(N·t(N))."""

    setting: Setting
    degrees: tuple[int, ...]
    prompts: tuple[int, ...]
    time_s: dict[int, tuple[float, ...]]  # degree → time at each prompt length
    communication_s: dict[int, tuple[float, ...]]
    efficiency: dict[int, tuple[float, ...]]


def scaling(setting: Setting, prompts: Sequence[int],
            degrees: Sequence[int] = DEGREES) -> Scaling:
    """The setting (its tensor-parallel degree replaced by each of ``degrees``, 1 first) at
    each prompt length. A degree the model or device refuses is an InputError naming ``tp``."""
    if not degrees or 1 not in degrees:
        raise InputError("tp", "the degrees must include 1 (the efficiency's reference)",
                         list(degrees))
    times, comm = {}, {}
    for n in sorted(set(degrees)):
        points = prefill(replace(setting, tp=n), list(prompts))
        times[n] = tuple(p.time_s for p in points)
        comm[n] = tuple(sum(o.time_s for o in p.operations if o.kind == "communication")
                        for p in points)
    eff = {n: tuple(t1 / (n * tn) for t1, tn in zip(times[1], times[n])) for n in times}
    return Scaling(setting, tuple(times), tuple(prompts), times, comm, eff)


def stage_times(setting: Setting, prompts: Any) -> Any:
    """The time of each of the setting's ``pp`` stages at each prompt length, seconds (an array
    of stages × lengths): its layers (:func:`roofline.derive.pipeline.stage_layer_counts`, every
    layer operation's time in proportion), the first stage's embedding, the last's final norm
    and LM head, and each stage's send to the next (at the network where that boundary leaves a
    node, :func:`roofline.evaluate.links.boundary_crosses`). Communication is hidden as the
    setting hides it: ring attention's passes under the stage's attention, and with ``overlap``
    all of it under the stage's compute. The stages' sum is the prompt's time through the
    pipeline under the ``whole`` schedule, :func:`roofline.evaluate.phases.prefill_time`, where
    each stage's shares add up to the whole's (tested); the slowest stage is at least the
    ``chunked`` schedule's bound, a stage's mean share (tested)."""
    import numpy as np

    from ..derive.pipeline import stage_layer_counts
    from .links import boundary_crosses

    tokens = np.asarray(prompts, dtype=float)
    setting = replace(setting, pipeline="whole")  # every layer's operations, and the sends
    n, layers = setting.pp, setting.model.num_layers
    share = np.array(stage_layer_counts(layers, n), dtype=float) / layers
    parts = {key: np.zeros((n, tokens.size)) for key in ("compute", "attention", "ring", "comm")}
    sends = {}
    for op in operations(setting):
        t = roofline_time(op.flops(tokens), op.bytes(tokens), setting.peak, setting.bandwidth)
        for _, level_bw, q in op.levels:
            t = np.maximum(t, q(tokens) / level_bw)
        if op.name.startswith("pp.send"):
            sends[op.name] = t  # one boundary's send
            continue
        where = np.zeros((n, 1))
        if op.name in FIRST:
            where[0] = 1
        elif op.name in LAST:
            where[-1] = 1
        else:
            where[:, 0] = share
        total = op.count * where * t
        if op.kind == "communication":
            parts["ring" if op.name.startswith("cp.") else "comm"] += total
        else:
            parts["compute"] += total
            if op.kind == "attention":
                parts["attention"] += total
    stage = setting.tp * setting.cp * setting.ep
    for k in range(1, n):  # boundary k: stage k − 1 sends to stage k
        across = boundary_crosses(k, stage, setting.hardware.devices_per_node)
        parts["comm"][k - 1] += sends["pp.send.network" if across else "pp.send"]
    comm = parts["comm"] + np.maximum(0.0, parts["ring"] - parts["attention"])
    if setting.overlap:
        return np.maximum(parts["compute"], comm)
    return parts["compute"] + comm
