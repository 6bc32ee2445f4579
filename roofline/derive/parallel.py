"""One device's share of a prefill under every parallelism at once: N_tp-way tensor
(:mod:`.tensor_parallel`), N_pp pipeline stages (:mod:`.pipeline`), N_ep-way expert
(:mod:`.expert_parallel`) and N_cp-way context parallelism (:mod:`.context_parallel`), with the
collectives of each as operations of kind "communication".

The splits compose because each touches other symbols: tensor parallelism divides widths
(n_q, n_kv, F, V), expert parallelism the routed experts a device holds (n_e in the routed
GEMMs), context parallelism the token rows (T → T/N_cp, attention over N_cp). Their devices
multiply: N_tp·N_cp·N_ep·N_pp in all, numbered tensor-parallel fastest, then context, expert
and pipeline (Megatron-LM's order of its process groups, Narayanan et al. 2021, arXiv
2104.04473, §3: tensor parallelism inside a node, pipeline stages across), so that a
collective's group spans N_tp, N_tp·N_cp and N_tp·N_cp·N_ep consecutive devices
(:mod:`roofline.evaluate.links` times a group that leaves a node at the network). Each
expert-parallel rank runs its own B sequences (:mod:`.expert_parallel`).

With every degree 1, the compute operations are the single-device operations exactly and every
collective takes no time (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Expr, Integer, expand, factor_terms

from ..symbols import D, N_ep, N_pp, T, T_pos, V, b_w
from . import context_parallel, expert_parallel, pipeline, tensor_parallel
from .architecture import Architecture
from .entry import Entry
from .layers import embedding_parameters
from .transformer import Operation, edge_element, total_flops

__all__ = ["SOURCE", "device_prefill_operations", "device_decode_operations",
           "device_weight_bytes", "device_kv_cache_bytes", "device_edge_bytes",
           "device_resident_bytes", "entries"]

SOURCE = (f"{tensor_parallel.SOURCE}; {expert_parallel.SOURCE}; {context_parallel.SOURCE}; "
          "Megatron-LM 2 (Narayanan et al. 2021, arXiv 2104.04473) §3 (the order of the "
          "groups)")


def device_prefill_operations(arch: Architecture = Architecture(), mode: str = "tiled",
                              smooth: bool = False,
                              caches: Sequence[str] = ()) -> list[Operation]:
    """One device's prefill: the tensor-parallel shares with their all-reduces and the
    pipeline's sends (:func:`.tensor_parallel.tp_prefill_operations`), the routed experts of
    N_ep-way expert parallelism with their dispatch before the first routed GEMM and combine
    after the last, then every operation on the device's T/N_cp token rows and 1/N_cp of
    attention, with the K/V passes after the attention. Under ``arch.pipeline == "chunked"``
    (the default) the stages' share: 1/N_pp of each, without the sends
    (:func:`.pipeline.stage_share`); under "whole" every layer's operations and the sends."""
    ops = [expert_parallel.shard(op)
           for op in tensor_parallel.tp_prefill_operations(arch, mode, smooth, caches)]
    if arch.moe:
        dispatch, combine = expert_parallel.communication_operations(arch)
        first = next(i for i, op in enumerate(ops) if op.name == "moe.up")
        ops.insert(first, dispatch)
        last = next(i for i, op in enumerate(ops) if op.name == "moe.down")
        ops.insert(last + 1, combine)
    ops = [context_parallel.shard(op) for op in ops]
    # each tensor-parallel rank passes the K/V of its own max(1, n_kv/N_tp) heads
    passes = [tensor_parallel.shard(op) for op in context_parallel.communication_operations(arch)]
    after = max(i for i, op in enumerate(ops) if op.kind == "attention")
    ops = ops[:after + 1] + passes + ops[after + 1:]
    if arch.pipeline == "chunked":  # a stage's mean share of the prompt's chunks, no sends
        return pipeline.stage_share(ops)
    return ops


def device_decode_operations(arch: Architecture = Architecture()) -> list[Operation]:
    """One device's decode step under tensor parallelism
    (:func:`.tensor_parallel.tp_decode_operations`); the other splits are not applied to the
    decode step."""
    return tensor_parallel.tp_decode_operations(arch)


def device_weight_bytes(arch: Architecture = Architecture()) -> Expr:
    """Bytes of the weights one device holds: its tensor-parallel share
    (:func:`.tensor_parallel.device_weight_bytes`) less the (1 − 1/N_ep) of the routed experts
    that the other expert-parallel ranks hold."""
    held = tensor_parallel.device_weight_bytes(arch)
    if not arch.moe:
        return held
    routed = expert_parallel.routed_expert_bytes(arch).xreplace(tensor_parallel.substitution())
    return held - (1 - 1 / N_ep) * routed


def device_kv_cache_bytes(arch: Architecture = Architecture()) -> Expr:
    """Bytes of the KV cache one device holds after the prefill: its tensor-parallel heads
    (:func:`.tensor_parallel.device_kv_cache_bytes`) of its T/N_cp positions."""
    from ..symbols import N_cp

    return tensor_parallel.device_kv_cache_bytes(arch).xreplace({T: T / N_cp})


def device_edge_bytes(arch: Architecture = Architecture()) -> tuple[Expr, Expr, Expr]:
    """The weights outside the layers that one device holds under N_tp, as three sums: as
    :func:`device_weight_bytes` counts them (the embedding table, the LM head unless tied, the
    learned positions, the final norm), the first stage's (the table and the positions) and the
    last stage's (the final norm and the LM head: a copy of the table where the two are tied, as
    vLLM's last rank builds ``embed_tokens`` beside ``lm_head`` when
    ``tie_word_embeddings`` is set, ``vllm/model_executor/models/llama.py``)."""
    element = edge_element(arch)
    table = V * D * element
    positions = T_pos * D * element if arch.position == "learned" else 0
    final = (D if arch.norm == "rms" else 2 * D) * b_w
    sub = tensor_parallel.substitution()
    return tuple(e.xreplace(sub) for e in (element * embedding_parameters(arch) + final,
                                            table + positions, table + final))


def device_resident_bytes(arch: Architecture = Architecture()) -> Expr:
    """The weights and the KV cache one device holds after the prefill
    (:func:`device_weight_bytes` + :func:`device_kv_cache_bytes`); over N_pp ≥ 2 pipeline
    stages (``arch.staged``) the fullest stage's: its layers' share of both and its edge
    (:func:`.pipeline.busiest_stage_bytes`)."""
    held = device_weight_bytes(arch) + device_kv_cache_bytes(arch)
    if not arch.staged:
        return held
    counted, first, last = device_edge_bytes(arch)
    return pipeline.busiest_stage_bytes(factor_terms(expand(held - counted)), first, last)


def entries() -> list[Entry]:
    moe = Architecture(moe=True)
    note = ("Mixtral-style layer", "N_tp·N_cp·N_ep·N_pp devices",
            "each expert-parallel rank runs its own B sequences")
    compute = [op for op in device_prefill_operations(moe, "tiled")
               if op.kind != tensor_parallel.COMMUNICATION]
    return [
        Entry("parallel.device_flops", total_flops(compute),
              "FLOPs of one device's share of a prefill under tensor, expert and context "
              "parallelism (tiled attention)", "FLOP", SOURCE, note),
        Entry("parallel.device_weight_bytes", device_weight_bytes(moe),
              "bytes of the weights one device holds (tensor and expert parallelism)", "bytes",
              SOURCE, note[:2]),
        Entry("parallel.device_resident_bytes.staged",
              device_resident_bytes(Architecture(parallel=True, staged=True)),
              "bytes of the weights and KV cache that the fullest of N_pp ≥ 2 pipeline stages "
              "holds (each stage its layers' share, the first the embedding, the last the final "
              "norm and LM head)", "bytes",
              f"{SOURCE}; {pipeline.SOURCE}; vLLM get_pp_indices (vllm/distributed/utils.py: "
              "L // N_pp layers a stage, the remainder one each to the r stages just before the "
              "last)",
              ("Llama-style layer", "N_tp·N_cp·N_pp devices",
               "every layer the mean layer's bytes"),
              holds=(N_pp >= 2,),
              example=((N_pp, Integer(3), "an assumed 3 stages; the form holds from 2"),)),
        Entry("parallel.device_kv_cache_bytes", device_kv_cache_bytes(Architecture()),
              "bytes of the KV cache one device holds after the prefill (tensor and context "
              "parallelism)", "bytes", SOURCE, ("Llama-style layer", "N_tp·N_cp devices")),
    ]
