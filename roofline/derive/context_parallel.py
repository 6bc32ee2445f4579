"""Context (sequence) parallelism by ring attention over N_cp devices (Liu, Zaharia & Abbeel
2023, "Ring Attention with Blockwise Transformers for Near-Infinite Context", arXiv
2310.01889).

The prompt is split into N_cp blocks of T/N_cp tokens, one per device. Each device keeps its
query block and passes key/value blocks around the ring: in each of N_cp steps it computes the
attention of its queries against the K/V block it holds while sending that block on and
receiving the next (§3: "overlapping the communication of key-value blocks with the
computation of blockwise attention"). Per layer and step:

- compute: one block pair, 4·B·(T/N_cp)²·H·n_q FLOPs (QKᵀ and PV, the whole block; blocks
  on the diagonal are half masked, which only lowers it);
- communication: one K/V block, 2·B·(T/N_cp)·n_kv·H·b_a bytes to the next device: α + that/β.

The pass is hidden when the block's compute takes at least its send. Without latency the
condition is the paper's (§3, Table 1: the block size must exceed FLOPS/bandwidth):
T/N_cp ≥ n_kv·b_a·P_peak/(2·n_q·β_link).

One device's share of a whole prefill (:func:`shard`), with the causal mask: every operation on
token rows (projections, norms, the MLP, the embedding, the other collectives' buffers) runs on
the device's T/N_cp rows (T → T/N_cp); attention does 1/N_cp of the whole prompt's attention,
its FLOPs and its traffic at every memory level, when the queries are assigned so that the
devices' causal work is balanced: the prompt cut into 2·N_cp chunks of s = T/(2N_cp) tokens,
device i holding chunks i and 2N_cp − 1 − i (Llama 3, arXiv 2407.21783, §3.3.2; the "zigzag"
split): chunk c's queries see c·s earlier keys and their own causal triangle, so device i's
pairs are s²(i + 2N − 1 − i) + s(s + 1) = T(T + 1)/(2N) whatever i, exactly 1/N of the causal
count (:func:`device_pairs`). Each received K/V block's HBM write is not
charged (a lower bound). The LM head and final norm run on the device holding the last
positions: one device's table counts them. Per layer each device passes on N_cp − 1 K/V blocks
(:func:`communication_operations`), of 2·n_kv·H values per token (a latent-attention model's
cache, d_c + H_r, passed as it is cached); the evaluation hides them under the layers'
attention (ring attention's schedule: time max(0, passes − attention) exposed), and
:func:`layer_hidden_tokens` is the prompt length above which that attention's FLOP time covers
them.
"""

from __future__ import annotations

from dataclasses import replace

from sympy import Expr, Integer

from ..symbols import B, H, L, N_cp, P_peak, T, b_a, n_kv, n_q
from . import comm
from .architecture import Architecture
from .entry import Entry
from .transformer import Operation

__all__ = ["SOURCE", "BALANCED", "block_tokens", "block_flops", "block_bytes",
           "block_compute_time", "block_send_time", "hidden_tokens", "shard",
           "kv_elements", "communication_operations", "device_pairs", "layer_pass_time",
           "layer_hidden_tokens", "entries"]

SOURCE = ("Ring Attention (Liu, Zaharia & Abbeel 2023, arXiv 2310.01889) §3 (K/V blocks passed "
          "around a ring, overlapped with blockwise attention)")
BALANCED = ("The Llama 3 Herd of Models (arXiv 2407.21783) §3.3.2: 2·N_cp chunks, rank i holding "
            "chunks i and 2·N_cp − 1 − i, causal work balanced")


def block_tokens() -> Expr:
    """Tokens per device: T/N_cp."""
    return T / N_cp


def block_flops() -> Expr:
    """One step's attention on one device and layer: 4·B·(T/N)²·H·n_q."""
    return 4 * B * block_tokens()**2 * H * n_q


def block_bytes() -> Expr:
    """One K/V block: 2·B·(T/N)·n_kv·H·b_a bytes."""
    return 2 * B * block_tokens() * n_kv * H * b_a


def block_compute_time() -> Expr:
    return block_flops() / P_peak


def block_send_time() -> Expr:
    return comm.p2p_time(block_bytes())


def hidden_tokens() -> Expr:
    """The prompt length above which a K/V block's send takes no longer than its attention:
    the positive root of 4B(T/N)²Hn_q/P = α + 2B(T/N)n_kvHb_a/β, solved by SymPy."""
    from .branches import quadratic_root

    return quadratic_root(block_compute_time() - block_send_time(), T)


def shard(op: Operation) -> Operation:
    """One device's share of ``op`` under N_cp-way context parallelism: attention's FLOPs and
    bytes (at every level) over N_cp, every other operation on T/N_cp token rows.

    >>> from roofline.derive.transformer import prefill_operations
    >>> up = next(op for op in prefill_operations() if op.name == "mlp.up")
    >>> shard(up).flops
    4*B*D*F*T/N_cp
    """
    if op.kind == "attention":
        share = Integer(1) / N_cp
        return replace(op, flops=op.flops * share, bytes=op.bytes * share,
                       levels=tuple((level, q * share) for level, q in op.levels))
    sub = {T: T / N_cp}
    return replace(op, flops=op.flops.xreplace(sub), bytes=op.bytes.xreplace(sub),
                   levels=tuple((level, q.xreplace(sub)) for level, q in op.levels))


def kv_elements(arch: Architecture = Architecture()) -> Expr:
    """Values per token of one layer's K/V block: 2·n_kv·H, or a latent-attention model's
    cache, d_c + H_r (:func:`roofline.derive.mla.cache_elements`)."""
    if arch.mla:
        from . import mla

        return mla.cache_elements()
    return 2 * n_kv * H


def layer_pass_time(arch: Architecture = Architecture()) -> Expr:
    """One layer's N_cp − 1 K/V passes on one device: (N−1)·(α + B·(T/N)·kv·b_a/β).

    >>> layer_pass_time().subs(N_cp, 1)
    0
    """
    return (N_cp - 1) * comm.p2p_time(B * block_tokens() * kv_elements(arch) * b_a)


def communication_operations(arch: Architecture = Architecture()) -> list[Operation]:
    """The K/V passes of every layer (count L), timed at the link as bytes."""
    from .tensor_parallel import COMMUNICATION

    return [Operation("cp.kv_pass", COMMUNICATION, Integer(0), Integer(0), L,
                      (("link", comm.time_as_bytes(layer_pass_time(arch))),))]


def device_pairs() -> Expr:
    """Causal query–key pairs one device computes per sequence and head under the balanced
    split: chunks i and 2N − 1 − i of s = T/(2N) tokens, s²(2N − 1) + s(s + 1) = T(T + 1)/(2N).

    >>> from sympy import factor
    >>> factor(device_pairs())
    T*(T + 1)/(2*N_cp)
    """
    s = T / (2 * N_cp)
    return s**2 * (2 * N_cp - 1) + s * (s + 1)


def layer_hidden_tokens() -> Expr:
    """The prompt length above which one layer's causal attention on one device (FLOP time,
    4·B·n_q·H·T(T+1)/(2N)/P, balanced) takes at least its N_cp − 1 K/V passes: the positive
    root, solved by SymPy."""
    from .branches import quadratic_root

    compute = 4 * B * n_q * H * device_pairs() / P_peak
    return quadratic_root(compute - layer_pass_time(), T)


def entries() -> list[Entry]:
    note = ("N_cp devices, T/N_cp tokens each", "one K/V block sent per step, overlapped",
            "whole block pairs (the causal diagonal only lowers the compute)")
    return [
        Entry("cp.block_bytes", block_bytes(), "bytes of one K/V block passed on", "bytes",
              SOURCE, note[:1]),
        Entry("cp.block_flops", block_flops(), "FLOPs of one block pair's attention", "FLOP",
              SOURCE, note),
        Entry("cp.ring_pass_hidden_tokens", hidden_tokens(),
              "prompt length above which ring attention's K/V pass is hidden under the "
              "blockwise attention", "tokens", f"{SOURCE}; {comm.SOURCE}", note),
        Entry("cp.device_pairs", device_pairs(),
              "causal query–key pairs of one device per sequence and head (balanced)", "1",
              f"{SOURCE}; {BALANCED}", note[:1]),
        Entry("cp.layer_pass_time", layer_pass_time(),
              "seconds of one layer's N_cp − 1 K/V passes on one device", "s",
              f"{SOURCE}; {comm.SOURCE}", note[:2]),
        Entry("cp.layer_hidden_tokens", layer_hidden_tokens(),
              "prompt length above which one layer's causal attention on a device covers its "
              "K/V passes (FLOP time)", "tokens", f"{SOURCE}; {BALANCED}; {comm.SOURCE}",
              (*note[:2], "causal mask, work balanced over the devices")),
    ]
