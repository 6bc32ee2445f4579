"""Expert parallelism for mixture-of-experts layers over N_ep devices: the experts spread over
the devices, each token's hidden state sent to the devices of its n_a experts and back.

GShard (Lepikhin et al. 2020, arXiv 2006.16668, §2.2) and DeepSpeed-MoE (Rajbhandari et al.
2022, arXiv 2201.05596, §5) place n_e/N_ep experts on each device and move the routed tokens
with two all-to-alls per MoE layer: *dispatch* (each token's D-wide hidden state to each of its
n_a experts) and *combine* (the experts' outputs back). Each device starts with its own B·T
tokens (data-parallel attention beside the experts). The all-to-alls are counted as DeepEP's
normal kernels run them (:data:`DEEPEP`; DeepSeek-V3 and SGLang prefill with them): a token's D
values go once to each other node that holds any of its experts (over the network, to the
device of the same rank there) and from there, and from its own device inside its node, once
to each other device of the node that holds one (over the interconnect); experts on the device
itself cost nothing. Routing is ideal and balanced: each of a token's n_a experts on a device
drawn uniformly and independently, so that a device (a node) receives a token with
probability 1 − (1 − 1/N)^n_a, and node-limited routing (DeepSeek-V3's M = 4 nodes) caps the
nodes a token reaches. The two links work at once: an all-to-all takes the longer of the two
(:func:`dispatch_time`). Before this the whole buffer of B·T·n_a·D·b_a bytes went over the
slowest link (GShard's count), which published multi-node systems beat.

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

from sympy import Expr, Integer, Max, Min

from ..symbols import (B, D, G_node, M_node, N_ep, T, alpha_link, alpha_net, b_a, b_w, beta_link,
                       beta_net, n_a, n_e)
from . import comm
from .architecture import Architecture
from .entry import Entry
from .transformer import Operation, mlp_parameters

__all__ = ["SOURCE", "DEEPEP", "ROUTED", "experts_per_device", "routed_bytes", "copies",
           "dispatch_time",
           "layer_communication_time", "device_expert_bytes", "shard",
           "communication_operations", "routed_expert_bytes", "entries"]

# The routed experts' GEMMs (roofline.derive.transformer._mlp): the only operations EP splits.
ROUTED = ("moe.up", "moe.down")

SOURCE = ("GShard (Lepikhin et al. 2020, arXiv 2006.16668) §2.2; DeepSpeed-MoE (Rajbhandari "
          "et al. 2022, arXiv 2201.05596) §5 (experts over devices, all-to-all dispatch and "
          "combine)")


DEEPEP = ("DeepEP (github.com/deepseek-ai/DeepEP, README: normal kernels, NVLink and RDMA "
          "forwarding, for prefill); DeepSeek-V3 (arXiv 2412.19437) §2.1.2 (node-limited "
          "routing: each token to at most M nodes) and §3.4 (dispatch over IB to the node, "
          "forwarded over NVLink there)")


def experts_per_device() -> Expr:
    """n_e/N_ep experts on each device."""
    return n_e / N_ep


def routed_bytes() -> Expr:
    """Each device's all-to-all buffer as GShard counts it: its B·T tokens, n_a copies of D
    values each (every copy sent; the upper end of what :func:`copies` counts)."""
    return B * T * n_a * D * b_a


def _reaches(n: Expr) -> Expr:
    """The probability that a given one of n places holds at least one of a token's n_a
    experts, each drawn uniformly and independently: 1 − (1 − 1/n)^n_a."""
    return 1 - (1 - 1 / n) ** n_a


def copies() -> tuple[Expr, Expr]:
    """(network, interconnect) copies of one token's D values that one all-to-all sends, per
    token of the device: to each of the G − 1 other nodes it reaches, once, at most M of the G
    in all, (G − 1)·min(1 − (1 − 1/G)^n_a, M/G); inside each node that receives it (its own
    and each one reached), to each of the other g − 1 = N_ep/G − 1 devices holding one of its
    experts, G·(g − 1)·(1 − (1 − 1/N_ep)^n_a) = (N_ep − G)·(1 − (1 − 1/N_ep)^n_a).

    >>> net, inside = copies()
    >>> inside.subs({G_node: 1, N_ep: 8, n_a: 2})  # Mixtral in one node: 7·(1 − (7/8)²)
    105/64
    >>> net.subs({G_node: 1, N_ep: 8, n_a: 2})
    0
    """
    return ((G_node - 1) * Min(_reaches(G_node), M_node / G_node),
            (N_ep - G_node) * _reaches(N_ep))


def dispatch_time(tokens: Expr = T) -> Expr:
    """One all-to-all (dispatch, or combine) of B·``tokens`` token rows of D values: the
    longer of the network's part, (G − 1)·α_net + (network copies)·B·T·D·b_a/β_net, and the
    interconnect's, (N_ep/G − 1)·α_link + (interconnect copies)·B·T·D·b_a/β_link
    (:func:`copies`; pairwise exchanges, one message to each other node and device)."""
    net, inside = copies()
    row = B * tokens * D * b_a
    return Max((G_node - 1) * alpha_net + net * row / beta_net,
               (N_ep / G_node - 1) * alpha_link + inside * row / beta_link)


def layer_communication_time() -> Expr:
    """Dispatch and combine of one MoE layer.

    >>> layer_communication_time().subs({N_ep: 1, G_node: 1})
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
    return op.xreplace(sub)


def communication_operations(arch: Architecture,
                             tokens: Expr = T) -> tuple[Operation, Operation]:
    """The dispatch and the combine of every MoE layer (the count of MoE layers, L or L_moe:
    :func:`roofline.derive.moe.layer_split`), each an all-to-all of B·``tokens`` token rows
    (:func:`dispatch_time`), timed as bytes at the interconnect's β
    (:func:`roofline.derive.comm.time_as_bytes`)."""
    from .moe import layer_split
    from .tensor_parallel import COMMUNICATION as kind

    layers = layer_split(arch)[1]
    link = (("link", comm.time_as_bytes(dispatch_time(tokens))),)
    return (Operation("ep.dispatch", kind, Integer(0), Integer(0), layers, link),
            Operation("ep.combine", kind, Integer(0), Integer(0), layers, link))


def routed_expert_bytes(arch: Architecture = Architecture(moe=True)) -> Expr:
    """Bytes of the routed experts of every MoE layer, all n_e of them: (MoE layers)·n_e·(one
    expert's parameters)·b_w (the router and the shared experts not included)."""
    from .moe import layer_split

    return layer_split(arch)[1] * n_e * b_w * mlp_parameters(arch)


def entries() -> list[Entry]:
    note = ("N_ep devices, n_e/N_ep experts each", "each device routes its own B·T tokens")
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
        Entry("ep.routed_bytes", routed_bytes(), "bytes of each device's all-to-all buffer "
              "as GShard counts it (every copy sent)", "bytes", SOURCE, note[1:2]),
        Entry("ep.layer_comm_time", layer_communication_time(),
              "seconds of one MoE layer's dispatch and combine", "s",
              f"{DEEPEP}; {comm.SOURCE}", (*note[:2], "G_node nodes, N_ep/G_node devices each",
                                           "ideal routing: each expert on a device drawn "
                                           "uniformly", "network and interconnect at once")),
        Entry("ep.device_expert_bytes", device_expert_bytes(),
              "bytes of one MoE layer's experts on one device", "bytes", SOURCE, note[:1]),
    ]
