"""One Gated DeltaNet (linear-attention) layer as Qwen3-Next runs it: FLOPs, HBM bytes, state and
parameters of its prefill (chunkwise) and of a decode step (token by token).

Sources:

- Yang, Kautz, Hatamizadeh, "Gated Delta Networks: Improving Mamba2 with Delta Rule" (arXiv
  2412.06464) §3: S_t = α_t·S_{t−1}(I − β_t·k_t·k_tᵀ) + β_t·v_t·k_tᵀ, o_t = S_t·q_t, and its
  chunkwise form (the UT transform / WY representation of DeltaNet, Yang et al., arXiv
  2406.06484 §3), O(T·C·d + T·d²) per head;
- Hugging Face transformers ``src/transformers/models/qwen3_next/modeling_qwen3_next.py``
  (commit 7515843b617551b008901620ca58f1208bbc330d): ``Qwen3NextGatedDeltaNet`` (the layer and
  its parameter shapes), ``torch_chunk_gated_delta_rule`` (prefill, ``chunk_size=64``) and
  ``torch_recurrent_gated_delta_rule`` (decode). The layer ``repeat_interleave``\\ s q and k from
  n_lk to the n_lv value heads before either runs, so the recurrence runs on n_lv heads;
- flash-linear-attention (fla-org, commit bc3b101dcb713ddc5bd8924b66754eb68b5ccf89), the kernels
  HF calls when installed: ``fla/ops/gated_delta_rule/chunk.py`` (``chunk_gated_delta_rule``:
  ``l2norm_fwd`` of q and k, then ``chunk_gated_delta_rule_fwd``, ``chunk_size=64``),
  ``fla/ops/utils/cumsum.py`` (``chunk_local_cumsum`` of g),
  ``fla/ops/gated_delta_rule/chunk_fwd.py`` (fused k·kᵀ and triangular solve, writing
  A: [B, T, HV, 64]), ``fla/ops/gated_delta_rule/wy_fast.py`` (``recompute_w_u_fwd``: w, u),
  ``fla/ops/common/chunk_delta_h.py`` (``chunk_gated_delta_rule_fwd_h``: writes the state h at
  the start of every chunk, [B, NT, HV, K, V], the new values v_new and the final state) and
  ``fla/ops/common/chunk_o.py`` (``chunk_fwd_o``: reads q, k, v_new, h, g and writes o);
- vLLM ``vllm/model_executor/layers/mamba/mamba_utils.py``
  (``MambaStateShapeCalculator.gated_delta_net_state_shape``): a conv state of K_conv − 1
  columns of the 2·n_lk·H_lk + n_lv·H_lv channels and a recurrent state [n_lv, H_lv, H_lk].

Conventions: 2 FLOPs per multiply-add of every matmul; element-wise work inside the recurrence
(decays, exponentials, masks, the β scaling, the L2 norm of q and k) is not counted, as
:mod:`roofline.derive.attention` leaves out softmax. Matmuls are counted at their full shapes
(the reference and the kernels multiply whole C × C tiles, masked or not). B sequences of T
tokens; the reference pads every sequence to ⌈T/C_lin⌉ chunks (``pad_size``) and computes the
padded rows too, so the FLOPs count whole chunks; the kernels mask the ragged last chunk, so
their bytes count T rows. The triangular solve is counted as the reference's loop does it
(``solve="reference"``) or as a forward substitution (``solve="substitution"``, ≈ C³/3).
"""

from __future__ import annotations

from sympy import Expr, Integer, Rational, ceiling

from ..symbols import (B, C_lin, D, H_lk, H_lv, K_conv, T, b_a, b_kv, n_lk, n_lv)
from .entry import Entry
from .layers import ACT_FLOPS, NORM_FLOPS, Operation, elementwise_op, projection_op

__all__ = ["SOURCE", "SOLVES", "conv_channels", "chunks", "solve_macs", "chunk_macs",
           "chunkwise_flops", "recurrent_flops", "projection_operations", "recurrence",
           "layer_operations", "prefill_operations",
           "decode_step", "kernel_traffic", "chunkwise_bytes", "ideal_bytes", "state_elements",
           "layer_parameters", "entries"]

PAPER = ("Gated Delta Networks (Yang, Kautz, Hatamizadeh, arXiv 2412.06464) §3 "
         "(gated delta rule, chunkwise form with the UT transform)")
HF = ("HF transformers models/qwen3_next/modeling_qwen3_next.py @7515843 "
      "(Qwen3NextGatedDeltaNet, torch_chunk_gated_delta_rule, torch_recurrent_gated_delta_rule)")
FLA = ("flash-linear-attention @bc3b101 fla/ops/gated_delta_rule/{chunk,chunk_fwd,wy_fast}.py, "
       "fla/ops/common/{chunk_delta_h,chunk_o}.py (chunk_gated_delta_rule, chunk 64)")
VLLM = "vLLM model_executor/layers/mamba/mamba_utils.py (gated_delta_net_state_shape)"
SOURCE = f"{PAPER}; {HF}"
SOLVES = ("reference", "substitution")
GATE_FLOPS = 8  # β = sigmoid(b): 3 (exp, add, divide); g = −exp(A_log)·softplus(a + dt_bias): 5


def conv_channels() -> Expr:
    """Channels of the short convolution (q, k, v; HF ``conv_dim``): 2·n_lk·H_lk + n_lv·H_lv."""
    return 2 * n_lk * H_lk + n_lv * H_lv


def chunks(tokens: Expr = T) -> Expr:
    """Chunks of one sequence: ⌈tokens/C_lin⌉ (the reference pads to a multiple of C_lin)."""
    return ceiling(tokens / C_lin)


def solve_macs(solve: str = "reference") -> Expr:
    """Multiply-adds of one chunk's triangular solve (I + A)⁻¹, A strictly lower triangular.

    ``reference``: the loop ``for i in range(1, C)``: row i ← row + (row·sub).sum(-2) with
    ``sub = attn[..., :i, :i]``: an i × i product per step, Σ i² = (C−1)·C·(2C−1)/6.
    ``substitution``: forward substitution touching only the nonzeros (sub strictly lower):
    Σ_i Σ_{j<i} j = C·(C−1)·(C−2)/6, i.e. C³/3 FLOPs to leading order.

    >>> solve_macs().subs(C_lin, 64), solve_macs("substitution").subs(C_lin, 64)
    (85344, 41664)
    """
    c = C_lin
    if solve == "reference":
        return (c - 1) * c * (2 * c - 1) * Rational(1, 6)
    if solve == "substitution":
        return c * (c - 1) * (c - 2) * Rational(1, 6)
    raise ValueError(f"unknown solve {solve!r}; valid: {', '.join(SOLVES)}")


def chunk_macs(solve: str = "reference") -> Expr:
    """Multiply-adds of one chunk of one (sequence, value head) in
    ``torch_chunk_gated_delta_rule``. Before the loop: k_β·kᵀ (C²·H_lk), the solve,
    attn·v_β → u (C²·H_lv), attn·(k_β·e^g) → w (C²·H_lk). In the loop: q·kᵀ (C²·H_lk),
    w·S (C·H_lk·H_lv), (q·e^g)·S (C·H_lk·H_lv), attn·v_new (C²·H_lv) and the state update
    (k·decay)ᵀ·v_new (C·H_lk·H_lv). In all: C²·(3·H_lk + 2·H_lv) + 3·C·H_lk·H_lv + solve."""
    c = C_lin
    return c**2 * (3 * H_lk + 2 * H_lv) + 3 * c * H_lk * H_lv + solve_macs(solve)


def chunkwise_flops(solve: str = "reference", tokens: Expr = T) -> Expr:
    """Matmul FLOPs of one layer's chunked gated delta rule, B sequences of ``tokens``:
    2·B·n_lv·⌈T/C_lin⌉·:func:`chunk_macs`. Linear in T at fixed C_lin."""
    return 2 * B * n_lv * chunks(tokens) * chunk_macs(solve)


def recurrent_flops(tokens: Expr = T) -> Expr:
    """Matmul FLOPs of ``torch_recurrent_gated_delta_rule`` over ``tokens`` per sequence: per
    token and value head Sᵀk (``kv_mem``), the rank-1 update k·δᵀ and Sᵀq, H_lk·H_lv multiply-adds
    each: 6·B·n_lv·tokens·H_lk·H_lv (the decay S·e^g, H_lk·H_lv products, is element-wise).

    >>> recurrent_flops(1)
    6*B*H_lk*H_lv*n_lv
    """
    return 6 * B * n_lv * tokens * H_lk * H_lv


def projection_operations(rows: Expr = B * T) -> list[Operation]:
    """The layer's work other than the recurrence, over ``rows`` token rows, in HF's order:
    ``in_proj_qkvz`` (D → 2·n_lk·H_lk + 2·n_lv·H_lv) and ``in_proj_ba`` (D → 2·n_lv); the
    depthwise causal conv1d of width K_conv over the q, k, v channels with its SiLU
    (2·K_conv + 4 FLOPs per output element, its K_conv weights per channel read once); the gates
    β = sigmoid(b), g = −exp(A_log)·softplus(a + dt_bias) (8 FLOPs per token and value head,
    A_log and dt_bias read); the gated RMSNorm of the output, RMSNorm then ·SiLU(z) (4 + 4 + 1
    per element, o and z read, its H_lv gains); ``out_proj`` (n_lv·H_lv → D). No biases."""
    qkvz, conv, out = 2 * n_lk * H_lk + 2 * n_lv * H_lv, conv_channels(), n_lv * H_lv
    gated = NORM_FLOPS["rms"] + ACT_FLOPS["silu"] + 1
    return [
        projection_op("linear_attn.in_proj_qkvz", rows, D, qkvz, False),
        projection_op("linear_attn.in_proj_ba", rows, D, 2 * n_lv, False),
        elementwise_op("linear_attn.conv", 2 * K_conv + ACT_FLOPS["silu"], rows * conv,
                       rows * conv, rows * conv, conv * K_conv),
        elementwise_op("linear_attn.gates", GATE_FLOPS, rows * n_lv, rows * 2 * n_lv,
                       rows * 2 * n_lv, 2 * n_lv),
        elementwise_op("linear_attn.norm", gated, rows * out, 2 * rows * out, rows * out, H_lv),
        projection_op("linear_attn.out_proj", rows, out, D, False),
    ]


def recurrence(mode: str = "kernel", smooth: bool = False,
               solve: str = "reference") -> Operation:
    """One layer's chunked recurrence over B·T rows ("attention" kind), as the bound counts it:
    :func:`chunkwise_flops` and, in every attention mode but ``ideal``, FLA's traffic
    (:func:`chunkwise_bytes`; the modes name schedules of softmax attention, and a linear
    layer has one kernel whichever the full-attention layers run), ``ideal``'s otherwise
    (:func:`ideal_bytes`), each with T/C_lin chunks in place of ⌈T/C_lin⌉: the work of the
    chunks spread over their tokens, which leaves out the padded last chunk's extra work and
    state (a lower count, exact at multiples of C_lin) and gives ``prefill`` and the
    crossovers one form. ``smooth`` changes nothing (the form has no ceiling)."""
    ideal = mode == "ideal"
    flops, nbytes = chunkwise_flops(solve), ideal_bytes() if ideal else chunkwise_bytes()
    flops, nbytes = (e.replace(ceiling, lambda x: x) for e in (flops, nbytes))
    return Operation(f"linear_attn.chunk.{mode}", "attention", flops, nbytes)


def layer_operations(rows: Expr, recurrence_op: Operation) -> list[Operation]:
    """One linear-attention layer over ``rows`` token rows: :func:`projection_operations` with
    ``recurrence_op`` (:func:`recurrence` in a prefill, :func:`decode_step` in a decode step)
    after the gates."""
    ops = projection_operations(rows)
    return ops[:4] + [recurrence_op] + ops[4:]


def prefill_operations(mode: str = "kernel", solve: str = "reference") -> list[Operation]:
    """One layer's prefill of B·T rows: :func:`layer_operations` with the chunked recurrence;
    ``mode`` "kernel" (FLA's traffic) or "ideal"."""
    return layer_operations(B * T, recurrence(mode, solve=solve))


def decode_step(layers: Expr = Integer(1)) -> Operation:
    """One decode token per sequence against the state (``fused_recurrent_gated_delta_rule``,
    or the torch reference): :func:`recurrent_flops` of one token; q, k (repeated to n_lv
    heads), v, g, β read and o written (b_a), the state read and written (b_kv)."""
    acts = B * n_lv * (2 * H_lk + 2 * H_lv + 2) * b_a
    state = 2 * B * n_lv * H_lk * H_lv * b_kv
    return Operation("linear_attn.decode", "attention", recurrent_flops(1), acts + state, layers)


def kernel_traffic() -> list[tuple[str, Expr]]:
    """Elements each kernel of FLA's ``chunk_gated_delta_rule`` forward reads and writes, per
    sequence and value head (HF hands it q, k already repeated: H = HV = n_lv), T rows each
    (the ragged last chunk masked), N = ⌈T/C_lin⌉ chunks. All at b_a except the final state."""
    c, n, hk, hv = C_lin, chunks(), H_lk, H_lv
    return [
        ("l2norm_fwd of q and k: x read, y and rstd written", 2 * (2 * T * hk + T)),
        ("chunk_local_cumsum: g read, its cumulative sum written", 2 * T),
        ("kkt + solve_tril: k, g, beta read; A (C_lin per row) written", T * hk + 2 * T + T * c),
        ("recompute_w_u: k, v, beta, A, g read; w, u written",
         T * hk + T * hv + 2 * T + T * c + T * hk + T * hv),
        ("fwd_h: k, w, u, g read; h (one state per chunk) and v_new written",
         2 * T * hk + T * hv + T + n * hk * hv + T * hv),
        ("fwd_o: q, k, v_new, h, g read; o written",
         2 * T * hk + T * hv + n * hk * hv + T + T * hv),
    ]


def chunkwise_bytes() -> Expr:
    """HBM bytes of FLA's chunk kernels for one layer (:func:`kernel_traffic` summed):
    B·n_lv·(b_a·(T·(11·H_lk + 6·H_lv + 10 + 2·C_lin) + 2·⌈T/C_lin⌉·H_lk·H_lv) + b_kv·H_lk·H_lv),
    the last term the final state written (HF asks for it whenever it keeps a cache).
    The intermediate states h are stored in k's dtype (``k.new_empty``), hence b_a."""
    per_head = sum((e for _, e in kernel_traffic()), Integer(0))
    return B * n_lv * (b_a * per_head.expand() + b_kv * H_lk * H_lv)


def ideal_bytes() -> Expr:
    """The lower bound: q and k once per key head (before the repeat), v, g, β read once, o
    written once, the final state written once:
    B·T·b_a·(2·n_lk·H_lk + 2·n_lv·H_lv + 2·n_lv) + B·n_lv·H_lk·H_lv·b_kv."""
    acts = B * T * b_a * (2 * n_lk * H_lk + 2 * n_lv * H_lv + 2 * n_lv)
    return acts + B * n_lv * H_lk * H_lv * b_kv


def state_elements() -> Expr:
    """State one layer keeps per sequence for decode (in place of a KV cache): the recurrent
    state n_lv·H_lk·H_lv and the conv state (K_conv − 1)·(2·n_lk·H_lk + n_lv·H_lv) (vLLM's
    shape; HF's cache keeps K_conv columns, one more than the convolution needs).

    >>> state_elements().subs({n_lk: 16, n_lv: 32, H_lk: 128, H_lv: 128, K_conv: 4})
    548864
    """
    return n_lv * H_lk * H_lv + (K_conv - 1) * conv_channels()


def layer_parameters() -> Expr:
    """Parameters of ``Qwen3NextGatedDeltaNet``: in_proj_qkvz [2·n_lk·H_lk + 2·n_lv·H_lv, D],
    in_proj_ba [2·n_lv, D], conv1d.weight [conv_dim, 1, K_conv] (no bias), dt_bias [n_lv],
    A_log [n_lv], norm.weight [H_lv], out_proj [D, n_lv·H_lv]; no linear biases."""
    qkvz = D * (2 * n_lk * H_lk + 2 * n_lv * H_lv)
    return (qkvz + D * 2 * n_lv + conv_channels() * K_conv + 2 * n_lv + H_lv
            + n_lv * H_lv * D)


def entries() -> list[Entry]:
    layer = ("one Gated DeltaNet layer; B sequences of T tokens; n_lk query/key heads of H_lk "
             "repeated to n_lv value heads of H_lv (HF repeat_interleave)")
    mm = "2 FLOPs per multiply-add of every matmul; element-wise work not counted"
    pad = "T padded to ⌈T/C_lin⌉ chunks of C_lin (the reference's pad_size)"
    solve = "triangular solve counted as the reference's loop: Σ_{i<C} i² multiply-adds"
    tile = ("each kernel reads its inputs once (one value tile: BV = H_lv; narrower tiles "
            "re-read k, w and q, k H_lv/BV times)")
    flops, nbytes = chunkwise_flops(), chunkwise_bytes()
    steps = tuple((name, B * n_lv * b_a * e) for name, e in kernel_traffic())
    return [
        Entry("linear_attention.flops.chunkwise", flops,
              "matmul FLOPs of one linear-attention layer's chunked gated delta rule", "FLOP",
              SOURCE, (layer, mm, pad, solve),
              steps=(("multiply-adds per chunk and value head (the reference's solve)",
                      chunk_macs()),
                     ("as the bound counts them: T/C_lin chunks (the padded last chunk's extra "
                      "work left out)", chunkwise_flops().replace(ceiling, lambda x: x)),
                     ("another count of the solve, forward substitution (≈ C³/6 multiply-adds; "
                      "not used)", solve_macs("substitution")))),
        Entry("linear_attention.flops.recurrent", recurrent_flops(),
              "matmul FLOPs of the token-by-token gated delta rule over T tokens", "FLOP",
              SOURCE, (layer, mm, "3 state–vector products per token and value head")),
        Entry("linear_attention.flops.decode", recurrent_flops(1),
              "matmul FLOPs of one decode token per sequence against the state", "FLOP",
              SOURCE, (layer, mm)),
        Entry("linear_attention.bytes.chunkwise", nbytes,
              "HBM bytes of flash-linear-attention's chunk kernels for one layer", "bytes",
              f"{FLA}; {HF}", (layer, tile, "intermediates (A, w, u, v_new, h, g, rstd) at b_a",
                               "final state written at b_kv"), steps=steps),
        Entry("linear_attention.bytes.ideal", ideal_bytes(),
              "lower bound on one layer's recurrence traffic: inputs once, o and the final "
              "state once", "bytes", SOURCE, (layer, "q, k read per key head")),
        Entry("linear_attention.state.elements", state_elements(),
              "recurrent and conv state of one layer per sequence (what decode keeps)", "1",
              f"{HF}; {VLLM}", ("conv state of K_conv − 1 columns (vLLM)",)),
        Entry("linear_attention.state.bytes", B * state_elements() * b_kv,
              "state of one layer for B sequences", "bytes", f"{HF}; {VLLM}",
              ("both states at b_kv",)),
        Entry("linear_attention.parameters", layer_parameters(),
              "parameters of one Gated DeltaNet layer (Qwen3NextGatedDeltaNet)", "1", HF,
              ("no biases", "the decoder layer's input norm not included")),
        Entry("linear_attention.intensity.chunkwise", flops / nbytes,
              "arithmetic intensity of the chunked recurrence with FLA's traffic", "FLOP/byte",
              f"{SOURCE}; {FLA}", (layer, mm, pad, tile)),
        Entry("linear_attention.intensity.ideal", flops / ideal_bytes(),
              "arithmetic intensity of the chunked recurrence at the ideal traffic",
              "FLOP/byte", SOURCE, (layer, mm, pad)),
    ]
