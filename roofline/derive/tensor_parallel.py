"""Tensor parallelism over N_tp devices (Megatron-LM, Shoeybi et al. 2019, arXiv 1909.08053).

Megatron-LM §3 splits each layer so that one forward pass needs two all-reduces:

- the MLP: the first GEMM (gate and up, D → 2F) split by columns, each device holding F/N_tp of
  the intermediate width, the activation applied locally, the second GEMM (down, F → D) split by
  rows; its partial sums are all-reduced (the "g" operator of Figure 3a);
- attention: the QKV projection split by columns so that each device holds whole heads, n_q/N_tp
  query heads, attention computed per head locally, the output projection (n_q·H → D) split by
  rows and its partial sums all-reduced (Figure 3b);
- the embedding and the LM head split over the vocabulary (§3, "input embedding weight matrix
  ... parallelized along the vocabulary dimension"): the embedding's output is all-reduced, the
  logits gathered (vLLM's ``VocabParallelEmbedding``, ``ParallelLMHead``, whose logits are
  gathered to one device: taken here as an all-gather, the larger of the two).

Key/value heads: with n_kv ≥ N_tp each device holds n_kv/N_tp of them; with n_kv < N_tp they are
replicated so that each device holds one (vLLM ``QKVParallelLinear``: "the KV heads are
replicated" when the TP size exceeds them): max(1, n_kv/N_tp) per device. Norms and residual
adds are replicated (every device does them on all B·T·D activations).

One device's share of every operation is the single-device operation with n_q → n_q/N_tp,
n_kv → max(1, n_kv/N_tp), F → F/N_tp (and the shared experts' and dense layers' widths),
V → V/N_tp, and a linear-attention layer's heads n_lk → n_lk/N_tp, n_lv → n_lv/N_tp (vLLM's
``Qwen3NextGatedDeltaNet``: its projections column-parallel over the heads, ``out_proj``
row-parallel, each device's state its heads') substituted (``xreplace``), so the attention modes and the memory hierarchy of
:mod:`roofline.derive.levels` carry over unchanged; N_tp = 1 gives the single-device operations
exactly. Each all-reduce moves the B·T·D·b_a bytes of the layer's output, timed as a ring
all-reduce (:mod:`roofline.derive.comm`; NCCL's choice for messages of megabytes): an operation
of kind "communication" whose time is carried as the bytes the link moves in it
(``levels``: ("link", time·beta_link)), so that it is timed at the link as any memory level is.

Overlap: by default the all-reduces are **not** overlapped with compute (time = sum): vLLM and
TensorRT-LLM run each all-reduce after the GEMM whose output it reduces, on the critical path
(Megatron-LM §3: the all-reduce is a synchronisation point of the forward pass). The overlapped
variant (time = max of the layers' compute and their communication) is the bound of a schedule
that hides it completely, as fused GEMM + communication kernels aim to (e.g. Wang et al. 2023,
"Overlap communication with dependent computation via decomposition", ASPLOS).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from sympy import Expr, Integer, Max

from ..symbols import (B, D, F, F_dense, F_sh, L, N_pp, N_tp, T, V, b_a, beta_link, n_kv, n_lk,
                       n_lv, n_q)
from . import comm
from .architecture import Architecture
from .entry import Entry
from .transformer import Operation, prefill_operations, total_flops, weight_bytes

__all__ = ["SOURCE", "COMMUNICATION", "beta_link", "comm", "layer_operations_per_device",
           "substitution", "shard", "allreduce_bytes", "with_communication",
           "communication_operations", "tp_prefill_operations", "tp_decode_operations",
           "device_weight_bytes", "device_kv_cache_bytes", "layer_communication_time", "entries"]

SOURCE = ("Megatron-LM (Shoeybi et al. 2019, arXiv 1909.08053) §3, Figure 3 (column- then "
          "row-parallel GEMMs, two all-reduces per layer in the forward pass); vLLM "
          "QKVParallelLinear (KV heads replicated when N_tp > n_kv), VocabParallelEmbedding, "
          "ParallelLMHead")
COMMUNICATION = "communication"  # the kind of the operations that move data between devices


def substitution() -> dict[Expr, Expr]:
    """One device's share of the widths the split divides.

    >>> substitution()[n_kv]
    Max(1, n_kv/N_tp)
    """
    return dict(_substitution())


@cache
def _substitution() -> dict[Expr, Expr]:  # built once: SymPy's Max takes milliseconds to make
    return {n_q: n_q / N_tp, n_kv: Max(1, n_kv / N_tp), F: F / N_tp, F_sh: F_sh / N_tp,
            F_dense: F_dense / N_tp, V: V / N_tp, n_lk: n_lk / N_tp, n_lv: n_lv / N_tp}


def shard(op: Operation) -> Operation:
    """One device's share of ``op``: :func:`substitution` put into its FLOPs, bytes and the
    bytes of each memory level."""
    sub = substitution()
    return op.xreplace(sub)


def allreduce_bytes(tokens: Expr = T) -> Expr:
    """The buffer of each of a layer's two all-reduces: the B·``tokens`` token rows of width D
    (one token per sequence in a decode step)."""
    return B * tokens * D * b_a


def _link(name: str, time: Expr, count: Expr) -> Operation:
    return Operation(name, COMMUNICATION, Integer(0), Integer(0), count,
                     (("link", comm.time_as_bytes(time)),))


def communication_operations(algorithm: str = "ring", tokens: Expr = T) -> list[Operation]:
    """The prefill's communication on one device (``tokens`` = 1: a decode step's): two
    all-reduces per layer (after the output projection and after the MLP's down projection),
    the embedding's all-reduce, and the gather of the last positions' logits (B·V·b_a bytes in
    all)."""
    per = comm.allreduce_time(algorithm, N_tp, allreduce_bytes(tokens))
    return [_link("tp.all_reduce.attn", per, L), _link("tp.all_reduce.mlp", per, L),
            _link("tp.all_reduce.embedding", per, Integer(1)),
            _link("tp.all_gather.logits", comm.allgather_time(N_tp, B * V * b_a), Integer(1))]


def with_communication(ops: Sequence[Operation], tokens: Expr = T) -> list[Operation]:
    """``ops`` (one device's shares) with the all-reduces placed after the output projection
    and after the MLP (before its residual add), the embedding's and the logits' collectives
    after theirs."""
    attn_ar, mlp_ar, embed_ar, gather = communication_operations(tokens=tokens)
    before = {"residual_add.mlp": mlp_ar}  # the MLP's output (any MLP), reduced before the add
    after = {"o_proj": attn_ar, "embedding": embed_ar, "lm_head": gather}
    out: list[Operation] = []
    for op in ops:
        out += [before[op.name], op] if op.name in before else [op]
        if op.name in after:
            out.append(after[op.name])
    return out


def tp_prefill_operations(arch: Architecture = Architecture(), mode: str = "tiled",
                          smooth: bool = False, caches: Sequence[str] = ()) -> list[Operation]:
    """One device's prefill operations under N_tp-way tensor parallelism (and the N_pp − 1
    sends between pipeline stages, :mod:`roofline.derive.pipeline`: the stages' times add up to
    the whole prompt's, so one prompt's prefill is the layers' operations plus the sends): each
    single-device operation's share (:func:`shard`) with its collectives
    (:func:`with_communication`)."""
    out = with_communication([shard(op) for op in prefill_operations(arch, mode, smooth,
                                                                      caches)])
    from . import pipeline  # N_pp stages: N_pp − 1 sends (none on one stage)

    last = max(i for i, op in enumerate(out) if op.name == "residual_add.mlp")
    out.insert(last + 1, _link("pp.send", pipeline.send_time(), N_pp - 1))
    return out


def tp_decode_operations(arch: Architecture = Architecture()) -> list[Operation]:
    """One device's decode step under N_tp-way tensor parallelism: each operation's share (its
    weights' columns and rows, its max(1, n_kv/N_tp) heads of the KV cache) and the all-reduces
    of the step's B token rows (B·D·b_a bytes each, two per layer)."""
    from .decode import decode_operations

    return with_communication([shard(op) for op in decode_operations(arch)], Integer(1))


def device_weight_bytes(arch: Architecture = Architecture()) -> Expr:
    """Bytes of the weights each device holds: its columns and rows of every projection, its
    share of the vocabulary, the KV heads it holds (replicated where N_tp > n_kv), the norms
    in full."""
    return weight_bytes(arch).xreplace(substitution())


def device_kv_cache_bytes(arch: Architecture = Architecture()) -> Expr:
    """Bytes of the KV cache each device holds: its max(1, n_kv/N_tp) key/value heads."""
    from .decode import model_kv_cache_bytes

    return model_kv_cache_bytes(arch).xreplace(substitution())


def layer_communication_time(algorithm: str = "ring") -> Expr:
    """Seconds of one layer's two all-reduces: 2·(2(N−1)/N·B·T·D·b_a/β + 2(N−1)·α) (ring).

    >>> layer_communication_time().subs(N_tp, 1)
    0
    """
    return 2 * comm.allreduce_time(algorithm, N_tp, allreduce_bytes())


def layer_operations_per_device(arch: Architecture = Architecture(), mode: str = "tiled",
                                caches: Sequence[str] = ()) -> list[Operation]:
    """The per-layer (non-edge) compute operations of one device, smooth (for crossovers)."""
    return [op for op in tp_prefill_operations(arch, mode, True, caches)
            if op.kind in ("projection", "attention", "elementwise")
            and not op.name.startswith(("final_norm", "embed"))]


def entries() -> list[Entry]:
    arch = Architecture()
    note = ("Llama-style layer", "N_tp devices; KV heads replicated where N_tp > n_kv",
            "B sequences of T tokens")
    ops = tp_prefill_operations(arch, "tiled")
    compute = [op for op in ops if op.kind != COMMUNICATION]
    return [
        Entry("tp.allreduce_bytes", allreduce_bytes(),
              "bytes of each all-reduce of a layer (two per layer in prefill)", "bytes", SOURCE,
              note[2:]),
        Entry("tp.layer_comm_time", layer_communication_time(),
              "seconds of one layer's two ring all-reduces", "s",
              f"{SOURCE}; {comm.SOURCE}", note),
        Entry("tp.device_flops", total_flops(compute),
              "FLOPs of one device's share of the prefill (tiled attention)", "FLOP", SOURCE,
              note),
        Entry("tp.device_weight_bytes", device_weight_bytes(arch),
              "bytes of the weights one device holds", "bytes", SOURCE, note[:2]),
        Entry("tp.device_kv_cache_bytes", device_kv_cache_bytes(arch),
              "bytes of the KV cache one device holds", "bytes", SOURCE, note),
    ]

