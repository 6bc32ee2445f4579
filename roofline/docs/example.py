"""The worked example of the derivation pages: one device, one model, one prompt length.

:data:`EXAMPLE` names the setting (H100-SXM, Llama-3-8B, bf16, B = 1, T = 2048); :func:`build`
gives every catalogue symbol a value (the hardware and model files' own, and for the rest the
choices that :attr:`Example.notes` explains); :func:`_evaluate` puts them into one
expression.
"""

from __future__ import annotations

from dataclasses import dataclass

from sympy import Expr, Float, Integer, Rational, Sum, Symbol

from ..evaluate import CrossoverValue, Setting, crossover_values, exact, prefill
from ..specs.hardware import load_hardware
from ..specs.model import load_model
from ..symbols import (CATALOGUE, D, F, F_dense, F_op, F_sh, H_r, I_op, K_intra, L, L_moe, L_w,
                       M_l3, Q_op, R, T, T_chunk, T_ctx, W, beta_l3, d_c, d_cq, d_in, d_out,
                       i_chunk, n_rep, n_sh, t_mean, t_pre, t_slo, t_sq)
from ..symbols import (B, G_node, M_node, N_cp, N_dev, N_ep, S_msg, alpha_net, b_a, beta_net,
                       c_chunk)
from ..symbols import C_att, C_lin, H_idx, H_lk, H_lv, K_conv, L_lin, k_top, n_idx, n_lk, n_lv
from ..symbols import B_d, C, S, T_out, T_pre, n_kern, tau_tpot, tau_ttft
from ..derive.overhead import kernel_count
from ..derive.transformer import prefill_operations

__all__ = ["EXAMPLE", "ExampleSpec", "Example", "build"]


@dataclass(frozen=True)
class ExampleSpec:
    """The setting of every worked example."""

    hardware: str = "H100-SXM"
    model: str = "Llama-3-8B"
    dtype: str = "bf16"
    batch: int = 1
    prompt: int = 2048
    window: int = 1024  # W of the sliding-window entries: shorter than the prompt, so it cuts
    l3_device: str = "MI300X"  # whose Infinity Cache is the L3 of the entries that have one
    chunk: int = 512  # T_chunk; the example's chunk index is the last one, T/T_chunk − 1
    mix: tuple[int, int] = (1024, 3072)  # prompt lengths of the M/G/1 example, equally likely
    speedup: Rational = Rational(3, 2)  # K_intra
    replicas: int = 2  # n_rep
    # latent attention's ranks of the MLA entries: DeepSeek-V2's and V3's (HF config.json)
    latent: tuple[int, int, int] = (512, 1536, 64)  # d_c, d_cq, H_r
    shared: int = 2  # n_sh of the shared-expert entries, of width F_sh = F (DeepSeek-V2)
    # the worked example of the crossovers only some families have, by the name's start: latent
    # attention's, a window's (every layer windowed), a hybrid's, sparse attention's
    family_models: tuple[tuple[str, str], ...] = (
        ("mla_", "DeepSeek-V2-Lite"), ("window_", "Mistral-7B"),
        ("chunk_", "Llama-4-Scout-17B-16E"),
        ("full_attention_overtakes_linear", "Qwen3-Next-80B-A3B"),
        ("sparse_indexer", "DeepSeek-V3.2"))

    def family_model(self, crossover: str) -> str:
        """The example model of a crossover that the example's own model does not have."""
        return next(m for start, m in self.family_models if crossover.startswith(start))
    # Gated DeltaNet layers of the linear-attention entries: Qwen3-Next-80B-A3B's (HF
    # config.json: linear_num_key_heads, linear_num_value_heads, linear_key_head_dim,
    # linear_value_head_dim, linear_conv_kernel_dim) and FLA's chunk of 64
    linear: tuple[int, int, int, int, int, int] = (16, 32, 128, 128, 4, 64)
    # DeepSeek-V3.2's sparse attention (HF config.json: index_topk, index_n_heads,
    # index_head_dim)
    sparse: tuple[int, int, int] = (2048, 64, 128)


EXAMPLE = ExampleSpec()


@dataclass(frozen=True)
class Example:
    """The example's setting, a value for every catalogue symbol, and its crossovers."""

    setting: Setting
    values: dict[Symbol, Expr]  # every catalogue symbol
    notes: dict[Symbol, str]  # how a value that is not in the files was chosen
    crossovers: dict[str, CrossoverValue]

    def describe(self) -> str:
        s = self.setting
        return (f"{s.hardware.name} and {s.model.name} in {s.dtype}, B = {s.batch}, "
                f"T = {EXAMPLE.prompt}")


def build() -> Example:
    """The worked example of :data:`EXAMPLE`, from the shipped hardware and model files."""
    s = Setting(load_hardware(EXAMPLE.hardware), load_model(EXAMPLE.model), EXAMPLE.dtype,
                batch=EXAMPLE.batch)
    vals: dict[Symbol, Expr] = dict(s.values())
    l3 = load_hardware(EXAMPLE.l3_device)  # the example's device has no cache beyond its L2
    vals.update({M_l3: Integer(int(l3.l3_bytes)), beta_l3: Float(l3.l3_bandwidth)})
    t = EXAMPLE.prompt
    point = prefill(s, [t])[0]
    short, long_ = prefill(s, list(EXAMPLE.mix))
    mean = (short.time_s + long_.time_s) / 2
    vals.update({
        T: Integer(t), T_ctx: Integer(t), d_in: vals[D], d_out: vals[F],
        F_op: Float(point.flops), Q_op: Float(point.bytes), I_op: Float(point.flops / point.bytes),
        t_pre: Float(point.time_s), R: Float(0.5 / point.time_s), t_slo: Float(2 * point.time_s),
        t_mean: Float(mean), t_sq: Float((short.time_s**2 + long_.time_s**2) / 2),
        K_intra: EXAMPLE.speedup, n_rep: Integer(EXAMPLE.replicas),
        T_chunk: Integer(EXAMPLE.chunk), i_chunk: Integer(t // EXAMPLE.chunk - 1),
        W: Integer(EXAMPLE.window), L_w: vals[L] / 2, C_att: Integer(EXAMPLE.window),
        d_c: Integer(EXAMPLE.latent[0]), d_cq: Integer(EXAMPLE.latent[1]),
        H_r: Integer(EXAMPLE.latent[2]), n_sh: Integer(EXAMPLE.shared), F_sh: vals[F],
        F_dense: vals[F], L_moe: vals[L] - 1,
        # across devices (issue 13): the setting's N_tp = N_pp = 1 and its link; assumed rest
        N_ep: Integer(8), N_cp: Integer(2), N_dev: Integer(8),
        S_msg: vals[B] * Integer(t) * vals[D] * vals[b_a], c_chunk: Integer(t // EXAMPLE.chunk),
        **dict(zip((n_lk, n_lv, H_lk, H_lv, K_conv, C_lin), map(Integer, EXAMPLE.linear))),
        L_lin: vals[L] * 3 / 4, **dict(zip((k_top, n_idx, H_idx), map(Integer, EXAMPLE.sparse))),
        n_kern: kernel_count(prefill_operations(s.architecture, s.attention),
                             s.fusion).xreplace(vals),
        # prefill beside decode (issue 30): the last chunk of the prompt beside 32 decodes
        C: Integer(EXAMPLE.chunk), T_pre: Integer(t - EXAMPLE.chunk), B_d: Integer(32),
        S: Integer(t), T_out: Integer(128), tau_tpot: Rational(1, 20),
        tau_ttft: Float(2 * point.time_s),
    })
    a, b = EXAMPLE.mix
    notes = {
        d_in: "D: the MLP's gate (or up) projection", d_out: "F",
        T_ctx: "T: the first decode step after the prompt",
        F_op: f"prefill.flops at T = {t}", Q_op: f"prefill.bytes at T = {t}",
        I_op: f"F_op / Q_op: the whole prefill at T = {t}",
        t_pre: f"prefill.time at T = {t}, {s.attention} attention", R: "load R·t_pre = 1/2",
        t_slo: "2·t_pre", t_mean: f"prompts of {a} and {b} tokens, equally likely",
        t_sq: f"prompts of {a} and {b} tokens, equally likely",
        K_intra: "an assumed speedup", n_rep: "two replicas",
        i_chunk: f"the last chunk of a {t}-token prompt",
        W: f"an assumed window of {EXAMPLE.window:,} tokens (the model has none), below T",
        L_w: "L/2: every other layer windowed, as Gemma-2",
        C_att: f"an assumed chunk of {EXAMPLE.window:,} tokens (the model has none), below T",
        M_l3: f"{EXAMPLE.hardware} has no L3: {EXAMPLE.l3_device}'s Infinity Cache",
        beta_l3: f"{EXAMPLE.hardware} has no L3: {EXAMPLE.l3_device}'s Infinity Cache",
        d_c: "DeepSeek-V2's and V3's kv_lora_rank (the model has no latent attention)",
        d_cq: "DeepSeek-V2's and V3's q_lora_rank", H_r: "DeepSeek-V2's and V3's qk_rope_head_dim",
        n_sh: "DeepSeek-V2's two shared experts (the model has no experts)", F_sh: "F",
        F_dense: "F", L_moe: "L − 1: the first layer dense, as DeepSeek-V2",
        N_ep: "an assumed 8 devices", N_cp: "an assumed 2 devices", N_dev: "an assumed 8 devices",
        S_msg: "B·T·D·b_a: one tensor-parallel all-reduce's buffer",
        G_node: "the N_ep devices in one node", M_node: "no node limit: the model routes "
        "without expert groups", alpha_net: "one node: no network", beta_net: "one node: no "
        "network, so it carries nothing",
        c_chunk: f"a {t}-token prompt in chunks of {EXAMPLE.chunk}",
        **{sym: "Qwen3-Next-80B-A3B's Gated DeltaNet layers (the model has none)"
           for sym in (n_lk, n_lv, H_lk, H_lv, K_conv)},
        C_lin: "flash-linear-attention's chunk of 64 tokens",
        n_kern: f"the kernels of the example's prefill (fusion {s.fusion})",
        L_lin: "3L/4: three linear-attention layers to one full, as Qwen3-Next",
        **{sym: "DeepSeek-V3.2's sparse attention (the model has none)"
           for sym in (k_top, n_idx, H_idx)},
        T_pre: f"T − C: the last chunk of a {t}-token prompt", B_d: "an assumed 32 decodes",
        S: "T: the decodes' context as long as the prompt", T_out: "an assumed 128 tokens",
        tau_tpot: "an assumed 50 ms objective", tau_ttft: "2·t_pre, as t_slo",
    }
    missing = [n for n, info in CATALOGUE.items() if info.symbol not in vals]
    if missing:
        raise ValueError(f"the worked example gives no value to {', '.join(missing)}")
    return Example(s, vals, notes, {**crossover_values(s), **_serving(s, vals)})


def _serving(s: Setting, vals: dict[Symbol, Expr]) -> dict[str, CrossoverValue]:
    """The crossovers whose numbers a serving step gives (the TPOT budget's decodes, their
    context, the chunk's offset and the objective), at the example's."""
    from ..evaluate.crossover import crossover_at

    extra = {sym.name: float(vals[sym]) if sym == tau_tpot else int(vals[sym])
             for sym in (B_d, S, T_pre, tau_tpot)}
    return {name: crossover_at(s, name, extra) for name, c in s.crossover_forms.items()
            if c["kind"] == "deadline"}


def _evaluate(expr: Expr, values: dict[Symbol, Expr]) -> float | Integer:
    """``expr`` at ``values``: an exact Integer where it is one, a float otherwise.

    The one place the pages turn an expression into a number (a sum's index stays a symbol).

    >>> from sympy import Symbol
    >>> x = Symbol("x", positive=True)
    >>> _evaluate(2 * x, {x: Integer(3)}), _evaluate(x / 4, {x: Integer(3)})
    (6, 0.75)
    """
    bound = {v for s in expr.atoms(Sum) for v in s.variables}
    out = exact(expr, {k: v for k, v in values.items() if k not in bound})
    if out.has(Sum):
        out = out.doit()
    return out if isinstance(out, Integer) else float(out)
