"""Launch and host overhead of a prefill: the kernels it launches, by fusion choice, and the
prompt length below which their overhead outweighs the roofline time.

A roofline times each operation as if the device went from one kernel to the next at no cost.
It does not: each kernel costs a launch latency on the device's timeline (t_launch: the gap
between back-to-back kernels, less under a CUDA graph), and each engine step a host overhead
(t_host: scheduling, preparing the inputs, sampling), which a single prefill pays once. These
enter the *estimate* (:mod:`roofline.evaluate.estimate`), never the bound.

Kernels are counted from the prefill's own operation list (:mod:`roofline.derive.transformer`),
one rule for every family: each operation is one kernel per instance (``count`` times: L for
per-layer ones), an element-wise operation none when ``fusion="elementwise"`` folds it into its
neighbour (:func:`roofline.derive.layers.fused`), and naive attention four (PyTorch's eager
attention as HF transformers' ``eager_attention_forward`` runs it: ``matmul`` for the scores, the
mask's ``+``, ``softmax``, ``matmul`` with V; its dropout is the identity at inference). A
collective (tensor, expert, context parallelism) is one kernel (NCCL runs each as one).

The overhead crossover is an equality like the others (:mod:`roofline.derive.crossovers`): the
roofline time of the prefill, which grows with T, against the overhead n_kern·t_launch + t_host,
which does not; below its root the overhead is the larger.
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Expr, Integer

from ..symbols import n_kern, t_host, t_launch
from .architecture import NAIVE_KERNELS, kernels
from .entry import Entry
from .layers import Operation

__all__ = ["NAIVE_KERNELS", "kernels", "kernel_count", "overhead_time", "entries", "SOURCE"]

SOURCE = ("kernel launch and host overhead: each kernel a launch latency on the device's "
          "timeline, each engine step a host overhead (NVIDIA CUDA C++ Best Practices Guide, "
          "'Asynchronous and Overlapping Transfers' and CUDA Graphs; vLLM's model runner, one "
          "engine step per prefill); naive attention as HF transformers' "
          "eager_attention_forward (matmul, mask add, softmax, matmul)")


def kernel_count(ops: Sequence[Operation], fusion: str) -> Expr:
    """n_kern: the kernels a prefill of ``ops`` launches, Σ count·kernels(op).

    >>> from roofline.derive.transformer import Architecture, prefill_operations
    >>> kernel_count(prefill_operations(Architecture(), "kernel"), "none")
    11*L + 3
    >>> kernel_count(prefill_operations(Architecture(fusion="elementwise"), "kernel"),
    ...              "elementwise")
    5*L + 2
    """
    return sum((op.count * kernels(op.name, op.kind, fusion) for op in ops), Integer(0))


def overhead_time(count: Expr = n_kern) -> Expr:
    """The overhead of one prefill: n_kern·t_launch + t_host (one engine step).

    >>> from roofline.symbols import L
    >>> overhead_time(11 * L + 3).subs({L: 32, t_launch: Integer(4) / 10**6,
    ...                                  t_host: Integer(2) / 10**3})
    171/50000
    """
    return count * t_launch + t_host


def entries() -> list[Entry]:
    """The kernel counts of the default (Llama-style) prefill by fusion choice, and the
    overhead form."""
    from .architecture import Architecture
    from .transformer import prefill_operations

    out = [Entry("overhead.time", overhead_time(), "launch and host overhead of one prefill",
                 "s", SOURCE, ("one engine step", "every kernel launched back to back",
                               "under parallelism n_kern is one device's: each collective one "
                               "kernel more, a pipeline stage 1/N_pp of all"),
                 topic="overhead")]
    for fusion in ("none", "elementwise"):
        for mode in ("naive", "kernel"):
            ops = prefill_operations(Architecture(fusion=fusion), mode)
            out.append(Entry(
                f"overhead.kernels.{mode}.{fusion}", kernel_count(ops, fusion),
                f"kernels of one prefill ({mode} attention, fusion {fusion})", "1", SOURCE,
                ("one kernel per operation and layer",
                 "element-wise operations each one kernel" if fusion == "none" else
                 "element-wise operations folded into their neighbours: none",
                 f"naive attention {NAIVE_KERNELS} kernels (matmul, mask add, softmax, matmul)"
                 if mode == "naive" else "fused attention one kernel"), topic="overhead"))
    return out

