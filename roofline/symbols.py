"""The one symbol catalogue: every SymPy symbol of the project, its meaning, unit and assumptions.

Names follow the notation of the scaling-book (Austin et al., "How to Scale Your Model",
https://jax-ml.github.io/scaling-book/) where it has one, and of the papers otherwise (e.g.
FlashAttention's M, DistServe's D for ``t_pre``). Every symbol is
positive (the chunk index ``i_chunk`` is non-negative); counts are also integers. Single letters
that SymPy itself defines (``N``, ``S``, ``E``, ``I``, ``O``, ``Q``, ``beta``, ``pi``, ``gamma``)
are not used. Any string form of an expression is read back with
``sympy.parse_expr(text, local_dict=local_dict())``.

>>> from sympy import parse_expr
>>> parse_expr("2*T*d_in*d_out", local_dict=local_dict()) == 2 * T * d_in * d_out
True
"""

from __future__ import annotations

from dataclasses import dataclass

from sympy import Symbol

__all__ = ["SymbolInfo", "CATALOGUE", "info", "by_name", "local_dict", "latex"]


@dataclass(frozen=True)
class SymbolInfo:
    """A symbol with its meaning and unit (``"1"`` for a pure number)."""

    symbol: Symbol
    meaning: str
    unit: str

    @property
    def name(self) -> str:
        return self.symbol.name

    @property
    def assumptions(self) -> list[str]:
        sign = "positive" if self.symbol.is_positive else "nonnegative"
        return [sign, "integer"] if self.symbol.is_integer else [sign]


def _count(name: str) -> Symbol:
    return Symbol(name, positive=True, integer=True)


def _real(name: str) -> Symbol:
    return Symbol(name, positive=True)


# --- workload --------------------------------------------------------------------------------
T = _count("T")  # prompt tokens per sequence (query length); tokens
B = _count("B")  # sequences in the batch
T_ctx = _count("T_ctx")  # context already in the KV cache at a decode step; tokens
T_chunk = _count("T_chunk")  # chunk size of chunked prefill; tokens
i_chunk = Symbol("i_chunk", integer=True, nonnegative=True)  # index of a chunk, 0 for the first

# --- model shape -----------------------------------------------------------------------------
D = _count("D")  # model width, d_model
F = _count("F")  # MLP intermediate width, d_ff (per expert for MoE)
n_q = _count("n_q")  # query heads
n_kv = _count("n_kv")  # key/value heads (GQA: n_kv < n_q; MQA: n_kv = 1)
H = _count("H")  # head dimension
L = _count("L")  # layers
V = _count("V")  # vocabulary size
T_pos = _count("T_pos")  # rows of a learned position-embedding table
n_e = _count("n_e")  # experts (MoE)
n_a = _count("n_a")  # experts active per token (MoE)
W = _count("W")  # sliding (local) attention window: keys a query sees, itself included; tokens
L_w = _count("L_w")  # layers with local attention (a window or chunks) when only some have it
C_att = _count("C_att")  # chunked local attention's chunk (Llama 4's attention_chunk_size)
d_in = _count("d_in")  # a projection's input width
d_out = _count("d_out")  # a projection's output width
# multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, §2.1): H is both the per-head
# dimension of the keys' non-rotary part and of the values (qk_nope_head_dim = v_head_dim)
d_c = _count("d_c")  # latent rank of keys and values (DeepSeek-V2's d_c, kv_lora_rank)
d_cq = _count("d_cq")  # latent rank of the queries (DeepSeek-V2's d'_c, q_lora_rank)
H_r = _count("H_r")  # decoupled rotary head dimension, one key shared by all heads (d_h^R)
# mixture of experts with shared experts and dense layers (DeepSeekMoE, Qwen2-MoE)
n_sh = _count("n_sh")  # shared experts per MoE layer, each of width F_sh
F_sh = _count("F_sh")  # MLP width of one shared expert
F_dense = _count("F_dense")  # MLP width of a dense layer in a model whose other layers are MoE
L_moe = _count("L_moe")  # layers with a mixture of experts when only some have one
# linear attention (Gated DeltaNet, Yang et al., arXiv 2412.06464; Qwen3-Next's linear layers)
L_lin = _count("L_lin")  # layers with linear attention in a hybrid (the others: full attention)
n_lk = _count("n_lk")  # linear attention's query and key heads
n_lv = _count("n_lv")  # linear attention's value heads (each with its own state)
H_lk = _count("H_lk")  # linear attention's query and key head dimension
H_lv = _count("H_lv")  # linear attention's value head dimension
K_conv = _count("K_conv")  # width of the short causal convolution before linear attention
C_lin = _count("C_lin")  # chunk length of the chunkwise linear-attention algorithm; tokens
# sparse attention (DeepSeek-V3.2's DSA: a lightning indexer picks each query's top-k keys)
k_top = _count("k_top")  # keys each query's sparse attention reads (index_topk); tokens
n_idx = _count("n_idx")  # the indexer's heads
H_idx = _count("H_idx")  # the indexer's head dimension

# --- precision -------------------------------------------------------------------------------
b_w = _real("b_w")  # bytes per weight element
b_a = _real("b_a")  # bytes per activation element
b_kv = _real("b_kv")  # bytes per KV-cache element
# a quantized checkpoint's embedding table and LM head, which its method leaves unquantized
b_e = _real("b_e")  # bytes per embedding-table and LM-head element

# --- hardware --------------------------------------------------------------------------------
P_peak = _real("P_peak")  # peak FLOP/s of the compute data type
beta_hbm = _real("beta_hbm")  # memory (HBM) bandwidth; bytes/s
M_sram = _real("M_sram")  # on-chip SRAM per streaming multiprocessor (FlashAttention's M); bytes
C_mem = _real("C_mem")  # device memory capacity; bytes
N_sm = _count("N_sm")  # streaming multiprocessors (compute units): thread blocks in flight
M_l2 = _real("M_l2")  # L2 cache capacity (the last level on NVIDIA); bytes
M_l3 = _real("M_l3")  # a cache beyond L2 (AMD's Infinity Cache, a TPU's CMEM); bytes
beta_l2 = _real("beta_l2")  # L2 → SM bandwidth, whole device; bytes/s
beta_l3 = _real("beta_l3")  # bandwidth of the cache beyond L2; bytes/s
beta_sram = _real("beta_sram")  # shared-memory (SRAM, LDS) bandwidth, whole device; bytes/s

# --- across devices (issue 13) ---------------------------------------------------------------
N_tp = _count("N_tp")  # tensor-parallel degree (devices a layer is split over)
N_pp = _count("N_pp")  # pipeline-parallel degree (stages)
N_ep = _count("N_ep")  # expert-parallel degree
N_cp = _count("N_cp")  # context-parallel degree
N_dev = _count("N_dev")  # devices taking part in one collective
S_msg = _real("S_msg")  # bytes of one collective's buffer on each device; bytes
beta_link = _real("beta_link")  # interconnect bandwidth per device, one direction; bytes/s
# interconnect latency per message (one step); s. Non-negative: a device file that gives none
# charges none (a bound), so 0 is a value it takes
alpha_link = Symbol("alpha_link", nonnegative=True)
c_chunk = _count("c_chunk")  # chunks of a prompt sent through a pipeline
G_node = _count("G_node")  # nodes the expert-parallel group spans (1 inside a node)
# nodes one token's experts may lie on (the routing's node limit: DeepSeek-V3's M); where a model
# routes without one it is infinite
M_node = _real("M_node")
beta_net = _real("beta_net")  # network bandwidth between nodes per device, one direction; bytes/s
alpha_net = Symbol("alpha_net", nonnegative=True)  # network latency per message; s

# --- one operation on the roofline -----------------------------------------------------------
F_op = _real("F_op")  # FLOPs of one operation
Q_op = _real("Q_op")  # HBM bytes of one operation
I_op = _real("I_op")  # arithmetic intensity of one operation; FLOP/byte

# --- service ---------------------------------------------------------------------------------
R = _real("R")  # request arrival rate; 1/s
t_pre = _real("t_pre")  # prefill execution time of one request (DistServe's D); s
t_slo = _real("t_slo")  # a mean-TTFT target; s
t_mean = _real("t_mean")  # mean service time E[t] over a prompt-length distribution; s
t_sq = _real("t_sq")  # second moment of the service time E[t^2]; s^2
K_intra = _real("K_intra")  # speedup of two-way intra-op parallelism (1 < K_intra < 2)
n_rep = _count("n_rep")  # equal prefill replicas sharing the arrivals

# --- what the roofline leaves out: the estimate beside the bound (issue 29) ---------------------
t_launch = _real("t_launch")  # launch latency of one kernel on the device's timeline; s
t_host = _real("t_host")  # host overhead of one engine step (scheduling, sampling); s
n_kern = _count("n_kern")  # kernels one prefill launches
B_m = _count("B_m")  # a GEMM kernel's output tile: rows (tokens)
B_n = _count("B_n")  # a GEMM kernel's output tile: columns (output features)
B_r = _count("B_r")  # an attention kernel's query tile: rows (FlashAttention's B_r)
n_cta = _count("n_cta")  # tiles (thread blocks) one SM runs at once: a wave is N_sm·n_cta tiles
eta_c = _real("eta_c")  # achievable fraction of peak FLOP/s at a kernel's best shape
eta_m = _real("eta_m")  # achievable fraction of peak memory bandwidth

# --- prefill inside a serving system (issue 30) -----------------------------------------------
C = Symbol("C", integer=True, nonnegative=True)  # prefill chunk in one hybrid step; tokens
T_pre = Symbol("T_pre", integer=True, nonnegative=True)  # the chunk's prompt tokens done before
B_d = Symbol("B_d", integer=True, nonnegative=True)  # decode sequences in one step
S = _count("S")  # context the decodes of a step have cached; tokens
T_out = _count("T_out")  # output tokens of a request (the first one its prefill's)
tau_tpot = _real("tau_tpot")  # the TPOT (time per output token) objective; s
tau_ttft = _real("tau_ttft")  # the TTFT objective; s


CATALOGUE: dict[str, SymbolInfo] = {
    s.name: s
    for s in (
        SymbolInfo(T, "prompt tokens per sequence (query length)", "tokens"),
        SymbolInfo(B, "sequences in the batch", "1"),
        SymbolInfo(T_ctx, "context length already in the KV cache (decode)", "tokens"),
        SymbolInfo(T_chunk, "chunk size of chunked prefill", "tokens"),
        SymbolInfo(i_chunk, "index of a chunk of chunked prefill (0 for the first)", "1"),
        SymbolInfo(D, "model width (d_model)", "1"),
        SymbolInfo(F, "MLP intermediate width (d_ff, per expert for MoE)", "1"),
        SymbolInfo(n_q, "query heads", "1"),
        SymbolInfo(n_kv, "key/value heads (GQA: n_kv < n_q; MQA: n_kv = 1)", "1"),
        SymbolInfo(H, "head dimension", "1"),
        SymbolInfo(L, "layers", "1"),
        SymbolInfo(V, "vocabulary size", "1"),
        SymbolInfo(T_pos, "rows of a learned position-embedding table", "1"),
        SymbolInfo(n_e, "experts (MoE)", "1"),
        SymbolInfo(n_a, "experts active per token (MoE)", "1"),
        SymbolInfo(W, "sliding (local) attention window: keys a query sees, itself included",
                   "tokens"),
        SymbolInfo(L_w, "layers with local attention, a sliding window or chunks (where only "
                   "some have it)", "1"),
        SymbolInfo(C_att, "chunked local attention's chunk: a query sees its own chunk's keys "
                   "up to itself", "tokens"),
        SymbolInfo(d_in, "a projection's input width", "1"),
        SymbolInfo(d_out, "a projection's output width", "1"),
        SymbolInfo(d_c, "MLA: latent rank of keys and values (kv_lora_rank)", "1"),
        SymbolInfo(d_cq, "MLA: latent rank of the queries (q_lora_rank)", "1"),
        SymbolInfo(H_r, "MLA: decoupled rotary head dimension, one key shared by the heads",
                   "1"),
        SymbolInfo(n_sh, "shared experts per MoE layer", "1"),
        SymbolInfo(F_sh, "MLP width of one shared expert", "1"),
        SymbolInfo(F_dense, "MLP width of the dense layers of a model whose other layers are "
                   "MoE", "1"),
        SymbolInfo(L_moe, "layers with a mixture of experts (where only some have one)", "1"),
        SymbolInfo(L_lin, "layers with linear attention in a hybrid (the others: full "
                   "attention)", "1"),
        SymbolInfo(n_lk, "linear attention: query and key heads", "1"),
        SymbolInfo(n_lv, "linear attention: value heads, each with its own state", "1"),
        SymbolInfo(H_lk, "linear attention: query and key head dimension", "1"),
        SymbolInfo(H_lv, "linear attention: value head dimension", "1"),
        SymbolInfo(K_conv, "width of the short causal convolution before linear attention",
                   "1"),
        SymbolInfo(C_lin, "chunk length of the chunkwise linear-attention algorithm", "tokens"),
        SymbolInfo(k_top, "sparse attention: keys each query attends to (the indexer's top-k)",
                   "tokens"),
        SymbolInfo(n_idx, "sparse attention: the indexer's heads", "1"),
        SymbolInfo(H_idx, "sparse attention: the indexer's head dimension", "1"),
        SymbolInfo(b_w, "bytes per weight element", "bytes"),
        SymbolInfo(b_a, "bytes per activation element", "bytes"),
        SymbolInfo(b_kv, "bytes per KV-cache element", "bytes"),
        SymbolInfo(b_e, "bytes per embedding-table and LM-head element of a quantized "
                   "checkpoint (its layers' weights at b_w)", "bytes"),
        SymbolInfo(P_peak, "peak FLOP/s of the compute data type", "FLOP/s"),
        SymbolInfo(beta_hbm, "memory (HBM) bandwidth", "bytes/s"),
        SymbolInfo(M_sram, "on-chip SRAM per streaming multiprocessor", "bytes"),
        SymbolInfo(C_mem, "device memory capacity", "bytes"),
        SymbolInfo(N_sm, "streaming multiprocessors (compute units): thread blocks in flight",
                   "1"),
        SymbolInfo(M_l2, "L2 cache capacity", "bytes"),
        SymbolInfo(M_l3, "capacity of a cache beyond L2 (Infinity Cache, CMEM)", "bytes"),
        SymbolInfo(beta_l2, "L2 bandwidth to the SMs, whole device", "bytes/s"),
        SymbolInfo(beta_l3, "bandwidth of the cache beyond L2", "bytes/s"),
        SymbolInfo(beta_sram, "shared-memory (SRAM) bandwidth, whole device", "bytes/s"),
        SymbolInfo(N_tp, "tensor-parallel degree", "1"),
        SymbolInfo(N_pp, "pipeline-parallel degree (stages)", "1"),
        SymbolInfo(N_ep, "expert-parallel degree", "1"),
        SymbolInfo(N_cp, "context-parallel degree", "1"),
        SymbolInfo(N_dev, "devices taking part in one collective", "1"),
        SymbolInfo(S_msg, "bytes of a collective's buffer on each device", "bytes"),
        SymbolInfo(beta_link, "interconnect bandwidth per device, one direction", "bytes/s"),
        SymbolInfo(alpha_link, "interconnect latency per message", "s"),
        SymbolInfo(c_chunk, "chunks of a prompt sent through a pipeline", "1"),
        SymbolInfo(G_node, "nodes the expert-parallel group spans", "1"),
        SymbolInfo(M_node, "nodes one token's experts may lie on (the routing's node limit)",
                   "1"),
        SymbolInfo(beta_net, "network bandwidth between nodes per device, one direction",
                   "bytes/s"),
        SymbolInfo(alpha_net, "network latency per message", "s"),
        SymbolInfo(F_op, "FLOPs of one operation", "FLOP"),
        SymbolInfo(Q_op, "HBM bytes of one operation", "bytes"),
        SymbolInfo(I_op, "arithmetic intensity of one operation", "FLOP/byte"),
        SymbolInfo(R, "request arrival rate", "1/s"),
        SymbolInfo(t_pre, "prefill execution time of one request (DistServe's D)", "s"),
        SymbolInfo(t_slo, "a mean time-to-first-token target", "s"),
        SymbolInfo(t_mean, "mean prefill execution time E[t] over prompt lengths", "s"),
        SymbolInfo(t_sq, "second moment E[t^2] of the prefill execution time", "s^2"),
        SymbolInfo(K_intra, "speedup of two-way intra-op parallelism", "1"),
        SymbolInfo(n_rep, "equal prefill replicas sharing the arrivals", "1"),
        SymbolInfo(t_launch, "launch latency of one kernel on the device's timeline", "s"),
        SymbolInfo(t_host, "host overhead of one engine step (scheduling, sampling)", "s"),
        SymbolInfo(n_kern, "kernels one prefill launches", "1"),
        SymbolInfo(B_m, "a GEMM kernel's output tile: rows (tokens)", "1"),
        SymbolInfo(B_n, "a GEMM kernel's output tile: columns (output features)", "1"),
        SymbolInfo(B_r, "an attention kernel's query tile: rows (FlashAttention's B_r)", "1"),
        SymbolInfo(n_cta, "tiles one SM runs at once (a wave is N_sm·n_cta tiles)", "1"),
        SymbolInfo(eta_c, "achievable fraction of peak FLOP/s at a kernel's best shape", "1"),
        SymbolInfo(eta_m, "achievable fraction of peak memory bandwidth", "1"),
        SymbolInfo(C, "prefill chunk: prompt tokens in one hybrid step", "tokens"),
        SymbolInfo(T_pre, "prompt tokens of the chunk's prompt prefilled in earlier steps",
                   "tokens"),
        SymbolInfo(B_d, "decode sequences in one step", "1"),
        SymbolInfo(S, "context the decodes of a step have cached", "tokens"),
        SymbolInfo(T_out, "output tokens of a request (the first one its prefill's)", "tokens"),
        SymbolInfo(tau_tpot, "the TPOT objective (time per output token)", "s"),
        SymbolInfo(tau_ttft, "the TTFT objective (time to first token)", "s"),
    )
}


def info(name: str) -> SymbolInfo:
    """The catalogue entry of a symbol name (``KeyError`` for an unknown one)."""
    return CATALOGUE[name]


def by_name(values: dict[str, object]) -> dict[Symbol, object]:
    """Numbers by symbol name → by the catalogue's symbol, for ``expr.xreplace`` or ``subs``
    (the symbols carry assumptions: ``Symbol("T")`` without them is another symbol, which a
    substitution silently leaves alone).

    >>> (2 * T * d_in * d_out).xreplace(by_name({"T": 2048, "d_in": 4096, "d_out": 14336}))
    240518168576
    """
    return {CATALOGUE[name].symbol: value for name, value in values.items()}


def local_dict() -> dict[str, Symbol]:
    """Names → symbols, for ``sympy.parse_expr(text, local_dict=local_dict())``."""
    return {name: s.symbol for name, s in CATALOGUE.items()}


# How each multi-letter name is typeset (SymPy would read "hbm" in beta_hbm as a bold modifier).
_LATEX_NAMES = {
    "T_ctx": r"T_{\mathrm{ctx}}", "T_chunk": r"T_{\mathrm{chunk}}", "i_chunk": r"i_{\mathrm{chunk}}",
    "T_pos": r"T_{\mathrm{pos}}",
    "n_q": "n_{q}", "n_kv": r"n_{\mathrm{kv}}", "L_w": "L_{w}", "C_att": r"C_{\mathrm{att}}",
    "n_e": "n_{e}", "n_a": "n_{a}",
    "d_in": r"d_{\mathrm{in}}", "d_out": r"d_{\mathrm{out}}",
    "d_c": "d_{c}", "d_cq": r"d_{c}^{\prime}", "H_r": "H_{r}", "n_sh": r"n_{\mathrm{sh}}",
    "F_sh": r"F_{\mathrm{sh}}", "F_dense": r"F_{\mathrm{dense}}", "L_moe": r"L_{\mathrm{MoE}}",
    "L_lin": r"L_{\mathrm{lin}}", "n_lk": r"n_{\mathrm{lk}}", "n_lv": r"n_{\mathrm{lv}}",
    "H_lk": r"H_{\mathrm{lk}}", "H_lv": r"H_{\mathrm{lv}}", "K_conv": r"K_{\mathrm{conv}}",
    "C_lin": r"C_{\mathrm{lin}}", "k_top": r"k_{\mathrm{top}}", "n_idx": r"n_{\mathrm{idx}}",
    "H_idx": r"H_{\mathrm{idx}}",
    "b_w": "b_{w}", "b_a": "b_{a}", "b_kv": r"b_{\mathrm{kv}}", "b_e": "b_{e}",
    "P_peak": r"P_{\mathrm{peak}}", "beta_hbm": r"\beta_{\mathrm{HBM}}",
    "M_sram": r"M_{\mathrm{SRAM}}", "C_mem": r"C_{\mathrm{mem}}", "N_sm": r"N_{\mathrm{SM}}",
    "M_l2": r"M_{\mathrm{L2}}", "M_l3": r"M_{\mathrm{L3}}", "beta_l2": r"\beta_{\mathrm{L2}}",
    "beta_l3": r"\beta_{\mathrm{L3}}", "beta_sram": r"\beta_{\mathrm{SRAM}}",
    "F_op": r"F_{\mathrm{op}}", "Q_op": r"Q_{\mathrm{op}}", "I_op": r"I_{\mathrm{op}}",
    "t_pre": r"t_{\mathrm{pre}}", "t_slo": r"t_{\mathrm{SLO}}", "t_mean": r"\bar{t}",
    "N_tp": r"N_{\mathrm{tp}}", "N_pp": r"N_{\mathrm{pp}}", "N_ep": r"N_{\mathrm{ep}}",
    "N_cp": r"N_{\mathrm{cp}}", "N_dev": r"N_{\mathrm{dev}}", "S_msg": r"S_{\mathrm{msg}}",
    "beta_link": r"\beta_{\mathrm{link}}", "alpha_link": r"\alpha_{\mathrm{link}}",
    "c_chunk": r"c_{\mathrm{chunk}}", "G_node": r"G_{\mathrm{node}}",
    "M_node": r"M_{\mathrm{node}}", "beta_net": r"\beta_{\mathrm{net}}",
    "alpha_net": r"\alpha_{\mathrm{net}}",
    "t_sq": r"\overline{t^{2}}", "K_intra": r"K_{\mathrm{intra}}", "n_rep": r"n_{\mathrm{rep}}",
    "t_launch": r"t_{\mathrm{launch}}", "t_host": r"t_{\mathrm{host}}",
    "n_kern": r"n_{\mathrm{kern}}", "B_m": "B_{m}", "B_n": "B_{n}", "B_r": "B_{r}",
    "n_cta": r"n_{\mathrm{CTA}}", "eta_c": r"\eta_{c}", "eta_m": r"\eta_{m}",
    "T_pre": r"T_{\mathrm{pre}}", "B_d": "B_{d}", "T_out": r"T_{\mathrm{out}}",
    "tau_tpot": r"\tau_{\mathrm{TPOT}}", "tau_ttft": r"\tau_{\mathrm{TTFT}}",
}


def latex(expr: object) -> str:
    """``sympy.latex`` with the catalogue's typesetting of symbol names.

    >>> latex(P_peak / beta_hbm)
    '\\\\frac{P_{\\\\mathrm{peak}}}{\\\\beta_{\\\\mathrm{HBM}}}'
    """
    from sympy import latex as _latex

    names = {s.symbol: _LATEX_NAMES[n] for n, s in CATALOGUE.items() if n in _LATEX_NAMES}
    return _latex(expr, symbol_names=names)
