"""The device memory of a setting: what one device holds of the weights, the KV cache and a
naive layer's scores (:func:`footprint`, :func:`held_bytes`), a prefill's or a decode step's peak
(:func:`memory_bytes`, :func:`peak_bytes`) and the warning where it does not fit
(:func:`check_memory`). Under parallelism one device's share; over pipeline stages the fullest
stage's, as the memory crossovers count it (:func:`roofline.derive.parallel.device_resident_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..codegen import call
from .compiled import bind
from .setting import Setting

__all__ = ["footprint", "held_bytes", "stage_bytes", "fullest_stage", "memory_bytes",
           "check_memory", "activation_bytes", "peak_bytes"]


def _held(setting: Setting, key: str, step: str) -> tuple[str, int, dict[str, int]]:
    """The derived form of the device memory ``key`` that one device holds in ``step``, the
    number of devices that share it out beyond that form, and the numbers replaced (see
    :func:`footprint`)."""
    if not setting.parallel:
        return key, 1, {}
    if step == "decode":  # the decode step's own shares: tensor parallelism alone (decode())
        if key == "kv_cache":
            return ("kv_cache_tp" if setting.tp > 1 else "kv_cache"), 1, {}
        return key if key == "scores" else "weights_parallel", 1, {"N_ep": 1}
    if key == "scores":  # one layer's: its heads under tp, its query rows under cp
        return key, setting.tp * setting.cp, {}
    return f"{key}_parallel", 1, {}


def stage_bytes(setting: Setting, tokens: Any) -> tuple[Any, Any]:
    """The weights and the KV cache each of the setting's ``pp`` stages holds at ``tokens`` (a
    number or an array; arrays of stages × lengths): one device's share of the layers' bytes
    split as :func:`roofline.derive.pipeline.stage_layer_counts` splits the layers, the first
    stage's embedding, the last's final norm and LM head (the closed form the memory crossovers
    solve: :func:`roofline.derive.pipeline.busiest_stage_bytes`)."""
    import numpy as np

    from ..derive.pipeline import stage_layer_counts

    numbers = {**setting.numbers(), "T": tokens}
    kv = np.asarray(call(setting.forms["kv_cache_parallel"], numbers), dtype=float)
    weights = call(setting.forms["weights_parallel"], numbers)
    edge = {k: call(f, numbers) for k, f in setting.forms["edges_parallel"].items()}
    layers = setting.model.num_layers
    shares = np.array(stage_layer_counts(layers, setting.pp)) / layers
    ends = np.array([edge["first"], *[0.0] * (setting.pp - 2), edge["last"]])
    column = (-1,) + (1,) * kv.ndim
    own = shares.reshape(column) * (weights - edge["counted"]) + ends.reshape(column)
    cache = shares.reshape(column) * kv
    return np.broadcast_to(own, cache.shape), cache


def fullest_stage(setting: Setting, tokens: int) -> tuple[int, int]:
    """The pipeline stage that holds the most at ``tokens`` (the first of equals), as its index
    (0 the first stage, as vLLM's pipeline ranks) and its number of layers
    (:func:`stage_bytes`)."""
    import numpy as np

    from ..derive.pipeline import stage_layer_counts

    own, cache = stage_bytes(setting, tokens)
    index = int(np.argmax(own + cache))
    return index, stage_layer_counts(setting.model.num_layers, setting.pp)[index]


def _fullest_stage(setting: Setting, key: str, tokens: Any) -> Any:
    """The weights or the KV cache (``key``) of the stage that holds the most at ``tokens``
    (:func:`stage_bytes`)."""
    import numpy as np

    own, cache = stage_bytes(setting, tokens)
    fullest = np.argmax(own + cache, axis=0)[None]
    held = np.take_along_axis(own if key == "weights" else cache, fullest, axis=0)[0]
    return held if np.ndim(tokens) else float(held)


@lru_cache(maxsize=64)
def footprint(setting: Setting, key: str, step: str = "prefill") -> Callable[[Any], Any]:
    """One device's memory ``key`` (``weights``, ``kv_cache``, ``scores``) as a function of the
    prompt length T (the context, for a decode step), of numbers or of numpy arrays, the
    setting's numbers folded in. Where several devices run a prefill, a device holds its share
    of the weights and of the KV cache (its columns and rows under tp, its experts under ep, its
    T/N_cp positions under cp: ``weights_parallel``, ``kv_cache_parallel``), under pp those of
    the fullest stage (:func:`_fullest_stage`), and of one layer's naive score matrix its heads
    (1/N_tp) and its query rows (1/N_cp). A decode step (``step="decode"``) holds what
    :func:`decode` models: the tensor-parallel shares alone."""
    if setting.pp > 1 and step == "prefill" and key != "scores":
        return lambda t: _fullest_stage(setting, key, t)
    name, shared, numbers = _held(setting, key, step)
    f = bind(setting.forms[name], {**setting.numbers(), **numbers}, ("T",))
    return f if shared == 1 else lambda t: f(t) / shared


def held_bytes(setting: Setting, key: str, tokens: int = 0, step: str = "prefill") -> float:
    """:func:`footprint` at T = ``tokens`` (a number; a numpy array of them gives an array)."""
    if setting.pp > 1 and step == "prefill" and key != "scores":
        return _fullest_stage(setting, key, tokens)
    name, shared, numbers = _held(setting, key, step)
    return call(setting.forms[name], {**setting.numbers(), **numbers, "T": tokens}) / shared


def memory_bytes(setting: Setting, tokens: int, step: str = "prefill") -> float:
    """Device memory a prefill of ``tokens`` tokens (the setting's batch), or a decode step at a
    context of ``tokens`` (``step="decode"``), holds at its peak: the weights, the KV cache, and
    in a prefill with naive attention one layer's score matrix (one device's share:
    :func:`footprint`)."""
    keys = ("weights", "kv_cache", "scores") if setting.attention == "naive" \
        and step == "prefill" else ("weights", "kv_cache")
    return sum(held_bytes(setting, key, tokens, step) for key in keys)


def activation_bytes(setting: Setting, tokens: int) -> float | None:
    """The live activations and workspace of a prefill of ``tokens`` at its peak, beyond the
    weights and the KV cache (:mod:`roofline.derive.workspace`, in the setting's attention
    mode); None where they are not derived (a device's parallel share, linear or sparse
    attention, chunked local attention)."""
    live = setting.forms["activations"]
    if setting.parallel or setting.attention not in live:
        return None
    return call(live[setting.attention], {**setting.numbers(), "T": tokens})


def peak_bytes(setting: Setting, tokens: int, step: str = "prefill") -> float:
    """:func:`memory_bytes` with a prefill's live activations where they are derived (in
    naive attention they hold its score matrices, so those replace the one layer's scores)."""
    live = activation_bytes(setting, tokens) if step == "prefill" else None
    if live is None:
        return memory_bytes(setting, tokens, step)
    return sum(held_bytes(setting, key, tokens) for key in ("weights", "kv_cache")) + live


def check_memory(setting: Setting, tokens: int, what: str,
                 step: str = "prefill") -> str | None:
    """A warning's text where ``what`` (a prefill of, or a decode step at, ``tokens``:
    ``step``) does not fit in one device's memory, its live activations counted where they
    are derived (:func:`peak_bytes`); None where it fits, or where the weights alone do not
    (the setting's own warning says so)."""
    used, capacity = peak_bytes(setting, tokens, step), setting.hardware.memory_capacity
    weights = held_bytes(setting, "weights", step=step)
    if used <= capacity or weights > capacity:  # fits, or the weights alone do not (said apart)
        return None
    scores = " and one layer's scores" if setting.attention == "naive" and step == "prefill" \
        else ""
    if step == "prefill" and activation_bytes(setting, tokens) is not None:
        scores = " and its live activations"
    device = "one device's " if setting.parallel else ""
    from ..tables import si

    return (f"{what} of batch {setting.batch} at {tokens:,} tokens needs {used / 1e9:,.4g} GB "
            f"({device}weights, KV cache{scores}), {si(used - capacity, 'B')} more than "
            f"{setting.hardware.name}'s {capacity / 1e9:.4g} GB: the time assumes it fits")
