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
"""

from __future__ import annotations

from sympy import Expr

from ..symbols import B, H, N_cp, P_peak, T, b_a, n_kv, n_q
from . import comm
from .entry import Entry

__all__ = ["SOURCE", "block_tokens", "block_flops", "block_bytes", "block_compute_time",
           "block_send_time", "hidden_tokens", "entries"]

SOURCE = ("Ring Attention (Liu, Zaharia & Abbeel 2023, arXiv 2310.01889) §3 (K/V blocks passed "
          "around a ring, overlapped with blockwise attention)")


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
    ]
