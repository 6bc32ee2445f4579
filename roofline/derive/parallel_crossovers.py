"""Crossovers of parallelism across devices, each an equality that :mod:`.crossovers` solves as it
solves the others (a sign change for a setting, the closed form of the branch that holds there):

- tensor parallelism (:mod:`.tensor_parallel`): the prompt length above which a layer's
  all-reduces take less time than its compute (they can then be hidden under it), the degree
  beyond which they take more time than the device's share of the layers' roofline time, and
  the smallest degree whose memory holds one device's weights and KV cache (under the setting's
  expert and context parallelism, :mod:`.parallel`);
- context parallelism (:mod:`.context_parallel`): the prompt length above which a device's
  causal attention (FLOP time) covers the ring's K/V passes, which ring attention overlaps with
  it;
- expert parallelism (:mod:`.expert_parallel`, mixture-of-experts models only): the prompt
  length above which a device's routed-expert GEMMs (FLOP time) take longer than the dispatch
  and combine all-to-alls, which can then be hidden under them.

The three "hidden" crossovers compare FLOP time with the link's time: above one, overlapped,
the collective is hidden whatever binds the compute (its roofline time is at least its FLOP
time); ``prefill --overlap`` hides it under the roofline time, so from that length or earlier,
where the compute is memory-bound. Each needs its degree above 1 (one device has nothing to
hide), and none is evaluated without an interconnect.
"""

from __future__ import annotations

from sympy import Integer

from ..symbols import C_mem, N_tp, P_peak, T
from . import expert_parallel as ep
from . import tensor_parallel as tp
from .architecture import Architecture
from .bounds import aggregate_time
from .branches import cross
from .transformer import Operation, total_flops

__all__ = ["parallel_crossovers", "link_time"]


def link_time(ops: list[Operation]) -> object:
    """Seconds of communication operations: their link bytes (time·β, :mod:`.comm`) over β."""
    return sum((op.count * op.levels[0][1] for op in ops), Integer(0)) / tp.beta_link


def parallel_crossovers(arch: Architecture, caches: tuple[str, ...]) -> list:
    """The crossovers of tensor, context and (for a mixture-of-experts ``arch``) expert
    parallelism behind the cache levels ``caches``."""
    from . import context_parallel as cp
    from . import parallel

    layers = tp.layer_operations_per_device(arch, "kernel", caches)  # the default attention
    comm = [op for op in tp.tp_prefill_operations(arch, "kernel", True, caches)
            if op.name.startswith("tp.all_reduce.") and op.count != 1]  # the layers' own
    link = link_time(comm)
    source = f"{tp.SOURCE}; {tp.comm.SOURCE}"
    held = parallel.device_resident_bytes(arch)
    out = [
        cross("tp_allreduce_hidden_tokens",
               "prompt length above which a layer's all-reduces take less time than its "
               "compute (FLOP time) on one tensor-parallel device: overlapped, they are hidden",
               "tokens", source, T, total_flops(layers) / P_peak, link, "hidden",
               ("N_tp devices; ring all-reduces of B·T·D·b_a bytes, two per layer",
                "compute: the device's share of the layers' FLOPs at P_peak")),
        cross("tp_communication_dominates_degree",
               "tensor-parallel degree beyond which a layer's all-reduces take longer than the "
               "device's share of its roofline time (at the model's context length)", "devices",
               source, N_tp, link, aggregate_time(layers), "balance",
               ("T at the model's context length; B sequences",
                "the layers' operations as one at their roof; ring all-reduces")),
        cross("tp_fits_memory_degree",
               "smallest tensor-parallel degree whose device memory holds one device's weights "
               "and KV cache (at the model's context length); round it up to a degree the heads "
               "allow", "devices", source, N_tp, C_mem, held, "balance",
               ("weights and KV cache resident; activations ignored",
                "KV heads replicated where N_tp > n_kv",
                "the setting's expert, context and pipeline parallelism (the fullest stage's "
                "layers and edge)")),
    ]
    device = parallel.device_prefill_operations(arch, "kernel", True, caches)
    attention = [op for op in device if op.kind == "attention"]
    passes = [op for op in device if op.name.startswith("cp.")]
    out.append(cross(
        "cp_kv_pass_hidden_tokens",
        "prompt length above which a context-parallel device's causal attention (FLOP time) "
        "takes longer than ring attention's K/V passes, which are then hidden under it",
        "tokens", f"{cp.SOURCE}; {cp.BALANCED}; {tp.comm.SOURCE}", T,
        total_flops(attention) / P_peak, link_time(passes), "hidden",
        ("N_cp devices, T/N_cp tokens each; N_cp − 1 K/V blocks passed per layer",
         "causal work balanced over the devices (2·N_cp chunks)")))
    if arch.moe:
        routed = [op for op in device if op.name in ep.ROUTED]
        a2a = [op for op in device if op.name.startswith("ep.")]
        out.append(cross(
            "ep_alltoall_hidden_tokens",
            "prompt length above which an expert-parallel device's routed-expert GEMMs (FLOP "
            "time) take longer than their dispatch and combine all-to-alls, which can then be "
            "hidden under them", "tokens", f"{ep.SOURCE}; {tp.comm.SOURCE}", T,
            total_flops(routed) / P_peak, link_time(a2a), "hidden",
            ("N_ep devices, each routing its own B·T tokens; pairwise all-to-alls",
             "uniform routing")))
    return out
