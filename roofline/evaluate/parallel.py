"""What N devices buy: the prefill time of one setting at several tensor-parallel degrees, its
communication share and the parallel efficiency t(1)/(N·t(N)) (the numbers of the scaling
figure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import InputError
from .phases import prefill
from .setting import Setting

__all__ = ["Scaling", "scaling", "DEGREES"]

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
