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

One device's share of a prefill (:func:`shard`): each of the N_ep devices runs its own B
sequences through attention and the dense parts (data-parallel, as GShard places them; the N_ep
devices together run N_ep·B sequences), and in each MoE layer the routed experts' GEMMs of its
n_e/N_ep experts. Under uniform routing the token–expert pairs that reach a device are as many
as it sends, B·T·n_a: the GEMMs' FLOPs stay those of one device's B sequences, and the experts
whose weights it reads are min(n_e/N_ep, B·T·n_a), n_e → n_e/N_ep in the routed GEMMs' bytes.
The router (it scores all n_e experts) and the shared experts (every token passes them) stay
whole on every device, replicated as the dense parts are. The N_ep devices' FLOPs add up to those of one device running the
N_ep·B sequences. With tensor parallelism beside it, each expert's width is split too (F/N_tp,
:mod:`roofline.derive.tensor_parallel`): N_tp·N_ep devices.
"""

from __future__ import annotations

from dataclasses import replace

from sympy import Expr, Integer

from ..symbols import B, D, N_ep, T, b_a, b_w, n_a, n_e
from . import comm
from .architecture import Architecture
from .entry import Entry
from .transformer import Operation, mlp_parameters

__all__ = ["SOURCE", "ROUTED", "experts_per_device", "routed_bytes", "dispatch_time",
           "layer_communication_time", "device_expert_bytes", "shard",
           "communication_operations", "routed_expert_bytes", "entries"]

# The routed experts' GEMMs (roofline.derive.transformer._mlp): the only operations EP splits.
ROUTED = ("moe.up", "moe.down")

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


def shard(op: Operation) -> Operation:
    """One device's share of ``op`` under N_ep-way expert parallelism: in the routed experts'
    GEMMs (:data:`ROUTED`) the experts held are n_e/N_ep, so the experts whose weights are read
    are min(n_e/N_ep, B·T·n_a); every other operation is the device's own (its B sequences).

    >>> from roofline.derive.transformer import prefill_operations
    >>> up = next(op for op in prefill_operations(Architecture(moe=True)) if op.name == "moe.up")
    >>> shard(up).bytes.has(n_e / N_ep)
    True
    """
    if op.name not in ROUTED:
        return op
    sub = {n_e: n_e / N_ep}
    return replace(op, flops=op.flops.xreplace(sub), bytes=op.bytes.xreplace(sub),
                   levels=tuple((level, q.xreplace(sub)) for level, q in op.levels))


def communication_operations(arch: Architecture,
                             tokens: Expr = T) -> tuple[Operation, Operation]:
    """The dispatch and the combine of every MoE layer (the count of MoE layers, L or L_moe:
    :func:`roofline.derive.moe.layer_split`), each a pairwise all-to-all of
    B·``tokens``·n_a·D·b_a bytes per device, timed at the link as bytes
    (:func:`roofline.derive.comm.time_as_bytes`)."""
    from .moe import layer_split
    from .tensor_parallel import COMMUNICATION as kind

    layers = layer_split(arch)[1]
    time = comm.alltoall_time(N_ep, B * tokens * n_a * D * b_a)
    link = (("link", comm.time_as_bytes(time)),)
    return (Operation("ep.dispatch", kind, Integer(0), Integer(0), layers, link),
            Operation("ep.combine", kind, Integer(0), Integer(0), layers, link))


def routed_expert_bytes(arch: Architecture = Architecture(moe=True)) -> Expr:
    """Bytes of the routed experts of every MoE layer, all n_e of them: (MoE layers)·n_e·(one
    expert's parameters)·b_w (the router and the shared experts not included)."""
    from .moe import layer_split

    return layer_split(arch)[1] * n_e * b_w * mlp_parameters(arch)


def entries() -> list[Entry]:
    note = ("N_ep devices, n_e/N_ep experts each", "each device routes its own B·T tokens",
            "pairwise-exchange all-to-all")
    from .transformer import prefill_operations, total_flops

    arch = Architecture(moe=True)
    ops = prefill_operations(arch, "tiled")
    routed = [op for op in ops if op.name in ROUTED]
    return [
        Entry("ep.device_routed_flops", total_flops([shard(op) for op in routed]),
              "FLOPs of one device's routed-expert GEMMs in a prefill of its B sequences "
              "(uniform routing: as many token–expert pairs arrive as it sends)", "FLOP", SOURCE,
              ("Mixtral-style layer", *note[:2])),
        Entry("ep.device_routed_bytes", sum((op.count * shard(op).bytes for op in routed),
                                            Integer(0)),
              "HBM bytes of one device's routed-expert GEMMs: the weights of min(n_e/N_ep, "
              "B·T·n_a) experts and the routed activations", "bytes", SOURCE,
              ("Mixtral-style layer", *note[:2])),
        Entry("ep.routed_bytes", routed_bytes(), "bytes of each device's all-to-all buffer",
              "bytes", SOURCE, note[1:2]),
        Entry("ep.layer_comm_time", layer_communication_time(),
              "seconds of one MoE layer's dispatch and combine", "s",
              f"{SOURCE}; {comm.SOURCE}", note),
        Entry("ep.device_expert_bytes", device_expert_bytes(),
              "bytes of one MoE layer's experts on one device", "bytes", SOURCE, note[:1]),
    ]
