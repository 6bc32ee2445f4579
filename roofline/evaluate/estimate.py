"""The estimate beside the bound: what the roofline leaves out, added back.

Two answers, never confused. The **bound** is the roofline (:mod:`.phases`): no measurement may
beat it. The **estimate** is what a performance engineer plans with; for each operation

    t_est = max(F / (s·η_c·P_peak), Q / (η_m·β_hbm), Q_level / (η_m·β_level)) + k·t_launch

with s the shape efficiency of its kernel's whole tiles and waves (tile and wave quantization,
:mod:`roofline.derive.shapes`; 1 where not derived), η_c and η_m the achievable fractions of the
peaks that the device file's ``[estimate]`` gives with their sources, k its kernels
(:mod:`roofline.derive.overhead`: by fusion choice) and t_launch the launch latency of one kernel;
collectives keep their link time (no fraction) and add their launch. The operations combine as
the bound's do (collectives added, or overlapped under ``--overlap``; ring attention's passes
hidden under the attention), and one engine step's host overhead t_host is added once.

Each factor only lengthens an operation (s, η ≤ 1; overheads ≥ 0), so the estimate is never
below the bound. A device whose file has no ``[estimate]`` section gets none (``None``), said
where the estimate would be shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..codegen.runtime import Max
from ..derive.architecture import kernels
from ..specs.estimate import estimate_numbers
from .links import LEVELS as LINK_LEVELS
from .phases import operations

if TYPE_CHECKING:
    from .setting import Setting

__all__ = ["estimate_columns", "kernel_count", "missing", "delivery", "WHAT", "DELIVERY"]

# the operations that deliver the first token once the prompt's layers are done
DELIVERY = ("final_norm", "lm_head")
WHAT = ("estimate: the bound plus launch and host overhead, tile and wave quantization and "
        "the device's achievable fractions of its peaks (never below the bound)")


def missing(setting: Setting) -> str | None:
    """Why this setting has no estimate, in words; None where it has one."""
    if setting.hardware.estimate:
        return None
    return (f"no estimate: {setting.hardware.name}'s file has no [estimate] section "
            "(hardware/README.md)")


def estimate_columns(setting: Setting, prompts: Sequence[int] | Any) -> dict[str, Any] | None:
    """The estimate at the prompt lengths ``prompts``: ``time_s`` (the estimate), and its parts:
    ``operations_s`` (the operations at their achievable, shape-limited roofs, communication
    included as the bound combines it), ``launch_s`` (kernels · t_launch), ``host_s``
    (t_host), and ``kernels``; lists over a list of lengths (plain Python: a table's few
    points import no numpy), numpy arrays over an array; None where the device gives no
    ``[estimate]``."""
    if not setting.hardware.estimate:
        return None
    if isinstance(prompts, (list, tuple, range)):
        points = [_estimate_at(setting, float(t)) for t in prompts]
        out = {key: [p[key] for p in points] for key in _PARTS}
        return {"prompt_tokens": [int(t) for t in prompts], **out,
                "kernels": kernel_count(setting)}
    import numpy as np

    tokens = np.asarray(prompts, dtype=float)
    at = _estimate_at(setting, tokens)
    return {"prompt_tokens": tokens.astype(np.int64),
            **{key: at[key] + np.zeros(tokens.shape) for key in _PARTS},
            "kernels": kernel_count(setting)}


_PARTS = ("time_s", "operations_s", "launch_s", "host_s")


def kernel_count(setting: Setting) -> float:
    """n_kern: the kernels one prefill of the setting launches (one device's share, its
    collectives included; a stage's mean share under pipeline parallelism)."""
    n = sum(op.count * kernels(op.name, op.kind, setting.fusion) for op in operations(setting))
    return int(n) if n == int(n) else n  # whole kernels print as such


def _estimate_at(setting: Setting, x: Any) -> dict[str, Any]:
    """The estimate's parts at ``x`` tokens (a number or a numpy array: the generated
    functions and :mod:`roofline.codegen.runtime`'s Max take either)."""
    n = estimate_numbers(setting.hardware)
    peak, bw = setting.peak * n["eta_c"], setting.bandwidth * n["eta_m"]
    total = comm = attn = ring = 0.0
    for op in operations(setting):
        t = _op_time(op, x, peak, bw, n["eta_m"])
        if op.name.startswith("cp.") and op.kind == "communication":
            ring = ring + t
        elif op.kind == "communication":
            comm = comm + t
        else:
            total = total + t
            if op.kind == "attention":
                attn = attn + t
    comm = comm + Max(0.0, ring - attn)  # as the bound: ring attention hides its passes
    ops = Max(total, comm) if setting.overlap else total + comm
    launch = kernel_count(setting) * n["t_launch"]
    return {"time_s": ops + launch + n["t_host"], "operations_s": ops, "launch_s": launch,
            "host_s": n["t_host"]}


def _op_time(op: Any, tokens: Any, peak: float, bw: float, eta_m: float) -> Any:
    """One operation's time at achievable roofs: peak and bandwidth already scaled, its
    compute time over its shape efficiency, each further memory level's bandwidth scaled by
    eta_m (a link's not)."""
    f, q = op.count * op.flops(tokens), op.count * op.bytes(tokens)
    t = Max(f / (op.shape(tokens) * peak), q / bw)
    for level, level_bw, served in op.levels:
        fraction = 1.0 if level in LINK_LEVELS else eta_m
        t = Max(t, op.count * served(tokens) / (level_bw * fraction))
    return t


def delivery(setting: Setting, tokens: int) -> tuple[float, float | None]:
    """First-token delivery after a prompt of ``tokens``: the final norm and the LM head on the
    last position (:data:`DELIVERY`), as the bound times them (sampling and the host's step
    cost nothing there), and as the estimate does, with their launches and one engine step's
    host overhead (scheduling and sampling); the second None without an ``[estimate]``."""
    from .phases import roofline_time

    ops = [op for op in operations(setting) if op.name in DELIVERY]
    bound = sum(float(roofline_time(op.count * op.flops(tokens), op.count * op.bytes(tokens),
                                    setting.peak, setting.bandwidth)) for op in ops)
    if not setting.hardware.estimate:
        return bound, None
    n = estimate_numbers(setting.hardware)
    peak, bw = setting.peak * n["eta_c"], setting.bandwidth * n["eta_m"]
    est = sum(float(_op_time(op, tokens, peak, bw, n["eta_m"]))
              + op.count * kernels(op.name, op.kind, setting.fusion) * n["t_launch"]
              for op in ops)
    return bound, est + n["t_host"]
