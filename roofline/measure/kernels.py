"""The CPU kernels, in numpy: what ``roofline measure`` and ``roofline validate`` time.

- :func:`measure_matmul`: ``n×n @ n×n`` (2·n³ FLOPs);
- :func:`measure_stream`: STREAM's ``copy`` (a = b, 16 bytes per fp64 element) and ``triad``
  (a = b + s·c, 24 bytes per element) by one thread per core, each thread in chunks that fit its
  private cache, so the intermediate s·c never goes to memory (McCalpin, STREAM benchmark);
- :func:`call_overhead`: the fixed cost of one numpy call (a 1×1 matmul);
- :func:`run_projection`: ``X[:T] @ W`` in fp32 for each T;
- :func:`naive_attention` (FlashAttention's Algorithm 0: the T×T scores materialised) and
  :func:`blocked_attention` (Algorithm 1: K, V blocks outside, Q blocks inside, online softmax),
  timed by :func:`run_attention`, which checks that both agree.

Each returns the work it counts and the wall times (:mod:`.timing`); turning them into rates or
predictions is the caller's. numpy is imported inside the functions.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .timing import Progress, Stats, summarize, time_call

__all__ = ["measure_matmul", "measure_stream", "call_overhead", "naive_attention",
           "blocked_attention", "run_projection", "run_attention"]


def measure_matmul(dtype: str, n: int, repeats: int, progress: Progress | None = None,
                   rng_seed: int = 0) -> tuple[float, list[float]]:
    """(FLOPs = 2·n³, wall times) of ``a @ b`` for n×n arrays of ``dtype`` (numpy's name)."""
    import numpy as np

    rng = np.random.default_rng(rng_seed)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype)

    def run() -> None:
        np.matmul(a, b, out=out)
        if progress:
            progress.step(f"matmul {dtype} {n}^3")

    return 2.0 * n**3, time_call(run, repeats)


def measure_stream(elements: int, repeats: int, chunk: int, threads: int,
                   progress: Progress | None = None) -> dict[str, tuple[float, list[float]]]:
    """``{"copy": (bytes, times), "triad": (bytes, times)}`` over fp64 arrays of ``elements``.

    Each of ``threads`` threads streams its contiguous part in chunks of ``chunk`` elements.
    Bytes counted the STREAM way: copy 16, triad 24 per element."""
    import numpy as np

    a, b, c = (np.empty(elements) for _ in range(3))
    for x, v in ((a, 0.0), (b, 1.0), (c, 2.0)):  # touch every page before timing
        x.fill(v)
    scalar = 3.0
    bounds = [elements * i // threads for i in range(threads + 1)]
    tmps = [np.empty(chunk) for _ in range(threads)]

    def copy_part(i: int) -> None:
        for s in range(bounds[i], bounds[i + 1], chunk):
            e = min(s + chunk, bounds[i + 1])
            np.copyto(a[s:e], b[s:e])

    def triad_part(i: int) -> None:
        tmp = tmps[i]
        for s in range(bounds[i], bounds[i + 1], chunk):
            e = min(s + chunk, bounds[i + 1])
            t = tmp[: e - s]
            np.multiply(c[s:e], scalar, out=t)
            np.add(b[s:e], t, out=a[s:e])

    def parallel(part: Callable[[int], None], label: str) -> Callable[[], None]:
        def run() -> None:
            workers = [threading.Thread(target=part, args=(i,)) for i in range(1, threads)]
            for w in workers:
                w.start()
            part(0)
            for w in workers:
                w.join()
            if progress:
                progress.step(label)
        return run

    out = {"copy": (16.0 * elements, time_call(parallel(copy_part, "stream copy"), repeats)),
           "triad": (24.0 * elements, time_call(parallel(triad_part, "stream triad"), repeats))}
    if not np.allclose(a[:: max(1, elements // 97)], 1.0 + scalar * 2.0):
        raise RuntimeError("stream triad computed a wrong result")
    return out


def call_overhead(repeats: int = 200) -> float:
    """Median time of one tiny numpy matmul (1×1 @ 1×1): the fixed cost of a numpy call."""
    import numpy as np

    a = np.ones((1, 1), np.float32)
    out = np.empty((1, 1), np.float32)
    return summarize(time_call(lambda: np.matmul(a, a, out=out), repeats, warmup=10)).median


def naive_attention(q: Any, k: Any, v: Any, mask: Any) -> tuple[Any, int]:
    """Causal softmax(Q Kᵀ/√d + mask) V with the scores materialised; (output, numpy calls).

    ``q, k, v``: (heads, T, d) fp32; ``mask``: (T, T) with 0 on and below the diagonal, −inf above.
    """
    import numpy as np

    s = np.matmul(q, k.transpose(0, 2, 1))  # (heads, T, T): the full score matrix
    s *= np.float32(1 / math.sqrt(q.shape[-1]))
    s += mask
    m = s.max(axis=-1, keepdims=True)
    s -= m
    np.exp(s, out=s)
    denom = s.sum(axis=-1, keepdims=True)
    s /= denom
    return np.matmul(s, v), 9


def blocked_attention(q: Any, k: Any, v: Any, b_c: int, b_r: int) -> tuple[Any, int]:
    """Causal attention in FlashAttention's Algorithm 1 order, one head at a time: outer loop over
    K_j, V_j blocks of ``b_c`` rows, inner loop over Q_i blocks of ``b_r`` rows at or below the
    diagonal; online softmax with row statistics m, ℓ. Never holds more than a b_r×b_c tile of
    scores. Returns (output, numpy calls made)."""
    import numpy as np

    heads, n, d = q.shape
    scale = np.float32(1 / math.sqrt(d))
    out = np.zeros_like(q)
    calls = 0
    for h in range(heads):
        qh, kh, vh, oh = q[h] * scale, k[h], v[h], out[h]
        m = np.full(n, -np.inf, np.float32)
        ell = np.zeros(n, np.float32)
        calls += 3
        for j0 in range(0, n, b_c):
            j1 = min(j0 + b_c, n)
            kt, vj = kh[j0:j1].T, vh[j0:j1]
            first_row = (j0 // b_r) * b_r  # rows above j0 see none of this block
            for i0 in range(first_row, n, b_r):
                i1 = min(i0 + b_r, n)
                s = qh[i0:i1] @ kt  # (b_r, b_c) tile
                calls += 1
                if j1 - 1 > i0:  # the tile reaches above the diagonal: mask it
                    rows = np.arange(i0, i1)[:, None]
                    cols = np.arange(j0, j1)[None, :]
                    s[cols > rows] = -np.inf
                    calls += 4
                m_tile = s.max(axis=1)
                m_new = np.maximum(m[i0:i1], m_tile)
                s -= m_new[:, None]
                np.exp(s, out=s)
                alpha = np.exp(m[i0:i1] - m_new)
                ell[i0:i1] = alpha * ell[i0:i1] + s.sum(axis=1)
                oh[i0:i1] = alpha[:, None] * oh[i0:i1] + s @ vj
                m[i0:i1] = m_new
                calls += 15
        oh /= ell[:, None]
        calls += 1
    return out, calls


# --- timed sweeps ---------------------------------------------------------------------------
def run_projection(tokens: Sequence[int], d_in: int, d_out: int, repeats: int,
                   budget_s: float, progress: Progress | None = None) -> dict[int, Stats]:
    """Median-of-repeats timings of X[:T] @ W for each T (fp32), W of d_in×d_out."""
    import numpy as np

    rng = np.random.default_rng(0)
    w = rng.random((d_in, d_out), dtype=np.float32)
    x = rng.random((max(tokens), d_in), dtype=np.float32)
    y = np.empty((max(tokens), d_out), np.float32)
    out: dict[int, Stats] = {}
    for t in tokens:
        xt, yt = x[:t], y[:t]
        out[t] = summarize(time_call(lambda: np.matmul(xt, w, out=yt), repeats,
                                     budget_s=budget_s))
        if progress:
            progress.step(f"projection T={t}")
    return out


def run_attention(tokens: Sequence[int], heads: int, head_dim: int, blocks: tuple[int, int],
                  repeats: int, budget_s: float, progress: Progress | None = None,
                  ) -> dict[str, dict[int, tuple[Stats, int]]]:
    """{"naive"|"blocked": {T: (stats, numpy calls)}}, ``blocks`` = (B_c, B_r) of the blocked
    form; checks both agree at every T."""
    import numpy as np

    b_c, b_r = blocks
    rng = np.random.default_rng(1)
    out: dict[str, dict[int, tuple[Stats, int]]] = {"naive": {}, "blocked": {}}
    for t in tokens:
        q, k, v = (rng.standard_normal((heads, t, head_dim), dtype=np.float32) for _ in range(3))
        mask = np.triu(np.full((t, t), -np.inf, np.float32), 1)
        ref, n_naive = naive_attention(q, k, v, mask)
        got, n_blocked = blocked_attention(q, k, v, b_c, b_r)
        if not np.allclose(ref, got, rtol=1e-3, atol=1e-4):
            raise RuntimeError(f"blocked attention disagrees with naive at T={t}")
        del ref, got
        for name, fn, calls in (("naive", lambda: naive_attention(q, k, v, mask), n_naive),
                                ("blocked", lambda: blocked_attention(q, k, v, b_c, b_r),
                                 n_blocked)):
            out[name][t] = (summarize(time_call(fn, repeats, warmup=0, budget_s=budget_s)), calls)
            if progress:
                progress.step(f"attention {name} T={t}")
    return out
