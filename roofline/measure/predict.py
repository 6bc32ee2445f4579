"""The model's prediction for a measured shape, through the evaluation core.

Nothing here is a second copy of the model: FLOPs and bytes are the derivation layer's
expressions (``roofline.derive.projection``, ``roofline.derive.attention``) evaluated by
:func:`roofline.evaluate.scalar`, the time is :func:`roofline.evaluate.roofline_time` (the same
max(F/P, Q/β) a ``roofline prefill`` uses), and the projection's crossover is solved once, by the
derivation layer's :func:`roofline.derive.branches.quadratic_root`, from the projection's
intensity equality F(T) = (P_peak/beta_hbm)·Q(T), then evaluated by the evaluation core.

An element's bytes are the data type's (:func:`roofline.specs.dtypes.bytes_per_element`):
``fp32`` on the CPU (numpy), ``bf16`` on the GPU. SymPy is imported inside the functions.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from sympy import Expr

__all__ = ["element_bytes", "projection_work", "predict_projection", "projection_crossover",
           "attention_form", "predict_attention", "block_sizes"]

ATTENTION_FORMS = {"naive": "naive", "blocked": "tiled", "sdpa": "tiled"}  # run → model mode


def element_bytes(dtype: str) -> int:
    """Bytes of one element of ``dtype``: b_w = b_a in every measured kernel.

    >>> element_bytes("fp32"), element_bytes("bf16")
    (4, 2)
    """
    from ..specs.dtypes import bytes_per_element

    return int(bytes_per_element(dtype))


def _shape(d_in: int, d_out: int, dtype: str, **more: Any) -> dict[str, Any]:
    b = element_bytes(dtype)
    return {"d_in": d_in, "d_out": d_out, "b_w": b, "b_a": b, **more}


def projection_work(T: int, d_in: int, d_out: int, dtype: str = "fp32") -> tuple[float, float]:
    """(F, Q): ``projection.flops()`` and ``projection.hbm_bytes()`` at this shape.

    >>> projection_work(2, 3, 5)  # F = 2·2·3·5; Q = 4·3·5 + 4·2·(3 + 5)
    (60.0, 124.0)
    """
    from .. import evaluate
    from ..derive import projection

    where = _shape(d_in, d_out, dtype, T=T)
    return (evaluate.scalar(projection.flops(), where),
            evaluate.scalar(projection.hbm_bytes(), where))


def predict_projection(T: int, d_in: int, d_out: int, p_peak: float, beta: float,
                       t_call: float = 0.0, dtype: str = "fp32") -> tuple[float, float, float]:
    """(F, Q, t): :func:`projection_work` and t = t_call + roofline_time(F, Q, P, β).

    >>> predict_projection(2, 3, 5, 1e9, 1e9)
    (60.0, 124.0, 1.24e-07)
    """
    from .. import evaluate

    f, q = projection_work(T, d_in, d_out, dtype)
    return f, q, t_call + evaluate.roofline_time(f, q, p_peak, beta)


@cache
def _projection_crossover() -> Expr:
    """T at which one projection's intensity reaches the ridge: the root of
    beta_hbm·F(T) − P_peak·Q(T) (negative at T → 0: the weights' read), solved by SymPy."""
    from ..derive import projection
    from ..derive.branches import quadratic_root
    from ..symbols import T, P_peak, beta_hbm

    return quadratic_root(beta_hbm * projection.flops() - P_peak * projection.hbm_bytes(), T)


def projection_crossover(d_in: int, d_out: int, p_peak: float, beta: float,
                         dtype: str = "fp32") -> float | None:
    """The prompt length T at which X (T×d_in) @ W (d_in×d_out) turns compute-bound; None where
    its intensity never reaches the ridge (its limit 2·d_in·d_out/(b_a·(d_in + d_out)) as T → ∞
    is at or below P_peak/beta_hbm).

    >>> round(projection_crossover(4096, 4096, 320e9, 20e9), 3)
    32.508
    """
    from .. import evaluate

    value = evaluate.exact(_projection_crossover(),
                           _shape(d_in, d_out, dtype, P_peak=p_peak, beta_hbm=beta))
    if not value.is_real or not value.is_finite:  # the ridge is the intensity's limit: no root
        return None
    x = float(value)
    return x if x > 0 and math.isfinite(x) else None


def attention_form(run: str) -> str:
    """The model's attention mode for a run: ``naive`` → naive, ``blocked``/``sdpa`` → tiled."""
    try:
        return ATTENTION_FORMS[run]
    except KeyError:
        raise ValueError(f"unknown attention form {run!r}; valid: "
                         f"{', '.join(ATTENTION_FORMS)}") from None


def _attention_values(T: int, heads: int, head_dim: int, m_sram: float,
                      dtype: str) -> dict[str, Any]:
    m = int(m_sram) if float(m_sram).is_integer() else m_sram  # exact where it is whole
    return {"T": T, "B": 1, "n_q": heads, "n_kv": heads, "H": head_dim,
            "b_a": element_bytes(dtype), "M_sram": m}


def predict_attention(mode: str, T: int, heads: int, head_dim: int, m_sram: float, p_peak: float,
                      beta: float, t_call: float = 0.0, calls: int = 0,
                      dtype: str = "fp32") -> tuple[float, float, float]:
    """(F, Q, t) of causal attention of one sequence: ``attention.mode_flops`` and
    ``attention.hbm_bytes`` of :func:`attention_form` (naive: Algorithm 0, all T² scores;
    blocked, sdpa: Algorithm 1, ``tiled_bytes(causal=True)`` at M = ``m_sram`` bytes), and
    t = t_call·calls + roofline_time(F, Q, P, β)."""
    from .. import evaluate
    from ..derive import attention

    form = attention_form(mode)
    where = _attention_values(T, heads, head_dim, m_sram, dtype)
    f = evaluate.scalar(attention.mode_flops(form), where)
    q = evaluate.scalar(attention.hbm_bytes(form, causal=True, smooth=False), where)
    return f, q, t_call * calls + evaluate.roofline_time(f, q, p_peak, beta)


def block_sizes(head_dim: int, m_sram: float, dtype: str = "fp32") -> tuple[int, int]:
    """(B_c, B_r) = (⌈M/(4d)⌉, min(B_c, d)), M = m_sram/b_a elements (FlashAttention Alg. 1):
    ``attention.block_sizes()`` evaluated.

    >>> block_sizes(64, 2 * 2**20)
    (2048, 64)
    """
    from .. import evaluate
    from ..derive import attention

    where = _attention_values(1, 1, head_dim, m_sram, dtype)
    b_c, b_r = attention.block_sizes()
    return int(evaluate.scalar(b_c, where)), int(evaluate.scalar(b_r, where))
