"""Expert parallelism for mixture-of-experts layers over N_ep devices: the experts spread over
the devices, each token's hidden state sent to the devices of its n_a experts and back.

GShard (Lepikhin et al. 2020, arXiv 2006.16668, §2.2) and DeepSpeed-MoE (Rajbhandari et al.
2022, arXiv 2201.05596, §5) place n_e/N_ep experts on each device and move the routed tokens
with two all-to-alls per MoE layer: *dispatch* (each token's D-wide hidden state to each of its
n_a experts) and *combine* (the experts' outputs back). Each device starts with its own B·T
tokens (data-parallel attention beside the experts), so each all-to-all moves a buffer of
B·T·n_a·D·b_a bytes per device, timed as a pairwise-exchange all-to-all
(:func:`roofline.derive.comm.alltoall_time`: (N−1)/N of it leaves the device, as under uniform
routing).
"""

from __future__ import annotations

from sympy import Expr

from ..symbols import B, D, N_ep, T, b_a, b_w, n_a, n_e
from . import comm
from .architecture import Architecture
from .entry import Entry
from .transformer import mlp_parameters

__all__ = ["SOURCE", "experts_per_device", "routed_bytes", "dispatch_time",
           "layer_communication_time", "device_expert_bytes", "entries"]

SOURCE = ("GShard (Lepikhin et al. 2020, arXiv 2006.16668) §2.2; DeepSpeed-MoE (Rajbhandari "
          "et al. 2022, arXiv 2201.05596) §5 (experts over devices, all-to-all dispatch and "
          "combine)")


def experts_per_device() -> Expr:
    """n_e/N_ep experts on each device."""
    return n_e / N_ep


def routed_bytes() -> Expr:
    """Each device's all-to-all buffer: its B·T tokens, n_a copies of D values each."""
    return B * T * n_a * D * b_a


def dispatch_time() -> Expr:
    """One all-to-all (dispatch, or combine): (N−1)·α + (N−1)/N·B·T·n_a·D·b_a/β."""
    return comm.alltoall_time(N_ep, routed_bytes())


def layer_communication_time() -> Expr:
    """Dispatch and combine of one MoE layer.

    >>> layer_communication_time().subs(N_ep, 1)
    0
    """
    return 2 * dispatch_time()


def device_expert_bytes(arch: Architecture = Architecture(moe=True)) -> Expr:
    """Bytes of one MoE layer's experts on one device: n_e/N_ep experts of the MLP's
    parameters."""
    return b_w * experts_per_device() * mlp_parameters(arch)


def entries() -> list[Entry]:
    note = ("N_ep devices, n_e/N_ep experts each", "each device routes its own B·T tokens",
            "pairwise-exchange all-to-all")
    return [
        Entry("ep.routed_bytes", routed_bytes(), "bytes of each device's all-to-all buffer",
              "bytes", SOURCE, note[1:2]),
        Entry("ep.layer_comm_time", layer_communication_time(),
              "seconds of one MoE layer's dispatch and combine", "s",
              f"{SOURCE}; {comm.SOURCE}", note),
        Entry("ep.device_expert_bytes", device_expert_bytes(),
              "bytes of one MoE layer's experts on one device", "bytes", SOURCE, note[:1]),
    ]
