"""A setting: a device, a model and how they are run. Its numbers are what every expression is
evaluated at, as plain Python numbers by symbol name (the fast path) or as exact SymPy values
(:meth:`Setting.values`, the symbolic path)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from numbers import Integral
from typing import TYPE_CHECKING, Any

from ..derive.architecture import (ATTENTION_MODES, DEFAULT_ATTENTION, FUSIONS, KV_CACHES,
                                   MLA_DECODES, PIPELINES, Architecture)
from ..errors import InputError
from ..specs.dtypes import STORAGE_DTYPES, bytes_per_element
from ..specs.estimate import estimate_numbers
from ..specs.hardware import Hardware
from ..specs.model import ModelShape
from .forms import crossover_forms, forms
from .links import Link, resolve

if TYPE_CHECKING:
    from sympy import Expr, Symbol

    from ..specs.network import Network

__all__ = ["Setting", "device_caches", "device_numbers", "level_bandwidths"]

_INF = float("inf")
PIPELINE_WORDS = {"chunked": "chunked: a prompt takes at least a stage's mean share",  # a title's
                  "whole": "whole: a prompt passes through each in turn, the stages summed"}


def _is_network(value: Any) -> bool:
    """A network file's record (its module imported only where a setting has one)."""
    from ..specs.network import Network

    return isinstance(value, Network)


def device_caches(hw: Hardware) -> tuple[str, ...]:
    """The cache levels between a device's SMs and HBM that its file gives, nearest first
    (``roofline.derive.levels.CACHES``): each with its capacity, on a device that gives its SM
    count (the thread blocks in flight). None where either is missing: then every byte a tiled
    schedule moves is charged to HBM, as the FlashAttention papers count."""
    if hw.sm_count is None:
        return ()
    sizes = {"l2": hw.l2_bytes, "l3": hw.l3_bytes}
    return tuple(level for level, size in sizes.items() if size is not None)


def level_bandwidths(hw: Hardware) -> dict[str, float]:
    """Bytes/s of each memory level beyond HBM that the device's file gives."""
    given = {"sram": hw.sram_bandwidth, "l2": hw.l2_bandwidth, "l3": hw.l3_bandwidth}
    return {level: bw for level, bw in given.items() if bw is not None}


def device_numbers(hw: Hardware, dtype: str) -> dict[str, int | float]:
    """The device's symbols by name for ``dtype``: achievable peak and bandwidth, memory, SRAM
    per SM, where :func:`device_caches` gives levels the SM count and their capacities, every
    level's bandwidth (one the file lacks infinite: it constrains nothing), the estimate's."""
    out: dict[str, int | float] = {"P_peak": hw.peak(dtype), "beta_hbm": hw.bandwidth(),
                                   "C_mem": hw.memory_capacity, **estimate_numbers(hw)}
    if hw.sram_per_sm is not None:
        out["M_sram"] = hw.sram_per_sm
    caches = device_caches(hw)
    if caches:
        out["N_sm"] = hw.sm_count
        out.update({f"M_{level}": size for level, size in
                    (("l2", hw.l2_bytes), ("l3", hw.l3_bytes)) if level in caches})
    bandwidths = level_bandwidths(hw)
    for level in ("sram", "l2", "l3"):
        out[f"beta_{level}"] = bandwidths.get(level, _INF)
    return out


@dataclass(frozen=True)
class Setting:
    """A device, a model and how they are run: precision, attention mode, batch."""

    hardware: Hardware
    model: ModelShape
    dtype: str = "bf16"  # compute data type; default bytes of weights, activations, KV cache
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    attention: str = DEFAULT_ATTENTION
    batch: int = 1
    kv_cache: str = "window"  # a windowed layer's cache: the last W tokens, or all T ("full")
    fusion: str = "none"  # element-wise work: separate kernels, or folded ("elementwise")
    mla_decode: str = "absorbed"  # latent attention's decode step: absorbed, or naive
    tp: int = 1  # tensor-parallel degree N_tp (roofline.derive.tensor_parallel)
    pp: int = 1  # pipeline stages N_pp (roofline.derive.pipeline)
    overlap: bool = False  # tensor parallelism's all-reduces hidden under compute (bound)
    ep: int = 1  # expert-parallel degree N_ep (roofline.derive.expert_parallel)
    cp: int = 1  # context-parallel degree N_cp (roofline.derive.context_parallel)
    network: Network | None = None  # the link between nodes (roofline.evaluate.links)
    # activations (GEMM inputs and outputs, the residual stream, collectives); None: the
    # compute data type's bytes, the permissive reading under fp8 (engines write fp8 GEMMs'
    # outputs in bf16: act_dtype="bf16" counts them so)
    act_dtype: str | None = None
    # how a prompt crosses the pp stages (roofline.derive.pipeline): in chunks that fill the
    # pipeline (the bound), or whole through each stage in turn (DistServe's inter-op)
    pipeline: str = "chunked"

    def __post_init__(self) -> None:
        for name in ("batch", "tp", "pp", "ep", "cp"):  # numpy's integers as Python's
            n = getattr(self, name)
            if isinstance(n, Integral) and not isinstance(n, (bool, int)):
                object.__setattr__(self, name, int(n))
        for name, choices in (("attention", ATTENTION_MODES), ("fusion", FUSIONS),
                              ("kv_cache", KV_CACHES), ("mla_decode", MLA_DECODES),
                              ("pipeline", PIPELINES)):
            if getattr(self, name) not in choices:
                raise InputError(name, f"must be one of {', '.join(choices)}",
                                 getattr(self, name))
        arch = self.model.architecture
        if self.mla_decode != "absorbed" and not arch.mla:
            raise InputError("mla_decode", f"applies to a latent-attention model; "
                             f"{self.model.name} has none", self.mla_decode)
        if self.kv_cache != "window" and arch.window == "none":
            raise InputError("kv_cache", f"applies to a model with a sliding window; "
                             f"{self.model.name} has none", self.kv_cache)
        if isinstance(self.batch, bool) or not (isinstance(self.batch, int) and self.batch >= 1):
            raise InputError("batch", "must be a positive integer", self.batch)
        self.hardware.peak(self.dtype)  # a data type the device lacks is an error
        self._check_parallel()
        for name, dtype in (("weight_dtype", self.weight_dtype), ("kv_dtype", self.kv_dtype),
                            ("act_dtype", self.act_dtype)):
            if dtype is not None and dtype not in STORAGE_DTYPES:
                raise InputError(name, f"must be one of {', '.join(STORAGE_DTYPES)}", dtype)
        if self.model.quantized is not None:  # a quantization not read needs weight_dtype
            self.model.quantized.check(self.weight_dtype, f"{self.model.path}")

    def _check_parallel(self) -> None:
        """tp, pp, ep, cp: positive integers; tp divides the query heads and is a divisor or a
        multiple of the KV heads (vLLM's rule: ``total_num_heads % tp_size == 0``, KV heads
        split or replicated); pp at most the layers; ep above 1 only for a mixture of experts,
        and a divisor of its routed experts (each device holds n_e/N_ep whole experts); more
        than one device needs the device file's interconnect, and a group that leaves a node
        the network between nodes (:mod:`.links`)."""
        heads, kv, layers = (self.model.num_heads, self.model.num_kv_heads,
                             self.model.num_layers)
        for name, n in (("tp", self.tp), ("pp", self.pp), ("ep", self.ep), ("cp", self.cp)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise InputError(name, "must be a positive integer", n)
        if self.tp > heads:
            raise InputError("tp", f"must be at most {self.model.name}'s {heads} query heads",
                             self.tp)
        if heads % self.tp:
            raise InputError("tp", f"must divide {self.model.name}'s {heads} query heads "
                             "(each device holds whole heads)", self.tp)
        if kv % self.tp and self.tp % kv:
            raise InputError("tp", f"must divide {self.model.name}'s {kv} key/value heads or "
                             "be a multiple of them (split or replicated)", self.tp)
        if self.pp > layers:
            raise InputError("pp", f"must be at most {self.model.name}'s {layers} layers",
                             self.pp)
        experts = self.model.num_experts
        if self.ep > 1 and experts == 1:
            raise InputError("ep", f"needs a mixture-of-experts model; {self.model.name} is "
                             "dense (no experts to spread over devices)", self.ep)
        if experts % self.ep:
            raise InputError("ep", f"must divide {self.model.name}'s {experts} routed experts "
                             "(each device holds whole experts)", self.ep)
        if not isinstance(self.overlap, bool):
            raise InputError("overlap", "must be true or false", self.overlap)
        if self.network is not None and not _is_network(self.network):
            raise InputError("network", "must be a network file's record (load_network)",
                             self.network)
        for name, n in (("tp", self.tp), ("pp", self.pp), ("ep", self.ep), ("cp", self.cp)):
            if n > 1 and self.hardware.link_bandwidth() is None:
                raise InputError(name, f"{n} devices need an interconnect, which "
                                 f"{self.hardware.name}'s file does not give "
                                 "([interconnect] bandwidth)", n)
        _ = self.links  # a group that leaves a node needs the network: refused now

    @cached_property
    def links(self) -> dict[str, Link]:
        """The link of each collective's group ("tp", "cp", "ep", "pp"; "network" where given):
        the interconnect inside a node, the network beyond (:func:`.links.resolve`)."""
        return resolve(self.hardware, self.network, self.tp, self.cp, self.ep, self.pp)

    @property
    def across_nodes(self) -> tuple[str, ...]:
        """The groups whose collectives (for "pp": some of whose sends) leave a node and are
        timed at the network."""
        from .links import crossing_boundaries

        out = [g for g in ("tp", "cp", "ep") if g in self.links
               and self.links[g].level == "network"]
        if self.pp > 1 and crossing_boundaries(self.tp * self.cp * self.ep, self.pp,
                                               self.hardware.devices_per_node):
            out.append("pp")
        return tuple(out)

    @property
    def parallel_words(self) -> str:
        """The splits in words, for a table's title: ", tensor parallel over 8 devices (...),
        ...; one device's share" ("" on one device)."""
        parts = []
        if self.tp > 1:
            parts.append(f"tensor parallel over {self.tp} devices (all-reduces "
                         f"{'overlapped with' if self.overlap else 'after'} the compute)")
        if self.cp > 1:
            parts.append(f"context parallel over {self.cp} (ring attention)")
        if self.ep > 1:
            parts.append(f"expert parallel over {self.ep} (each with its own batch)")
        if self.pp > 1:
            parts.append(f"{self.pp} pipeline stages ({PIPELINE_WORDS[self.pipeline]})")
        if not parts:
            return ""
        across = self.across_nodes
        where = (f"; {', '.join(across)} across nodes over {self.network.name}"
                 if across and self.network is not None else "")
        share = "; one device's share" if self.tp * self.cp * self.ep > 1 else ""
        return ", " + ", ".join(parts) + share + where

    def link_numbers(self, group: str) -> dict[str, float]:
        """``alpha_link`` and ``beta_link`` of ``group``'s link ({} without an interconnect);
        for "ep" the interconnect's, as the all-to-alls hold the network apart
        (``alpha_net``, ``beta_net``: :meth:`numbers`)."""
        link = self.links.get("pp" if group == "ep" else group)  # "pp": the interconnect
        return {} if link is None else {"alpha_link": link.alpha, "beta_link": link.beta}

    @property
    def expert_nodes(self) -> int:
        """G_node: the nodes the expert-parallel group spans (1 inside a node). Its ranks are
        N_tp·N_cp devices apart (:mod:`roofline.derive.parallel`), so a node of
        ``devices_per_node`` holds max(1, devices_per_node // (N_tp·N_cp)) of them."""
        from .links import crosses

        per_node = self.hardware.devices_per_node
        if self.ep == 1 or not crosses(self.tp * self.cp * self.ep, per_node):
            return 1
        return -(-self.ep // max(1, per_node // (self.tp * self.cp)))

    @property
    def parallel(self) -> bool:
        """Whether more than one device runs the prefill."""
        return self.tp > 1 or self.pp > 1 or self.ep > 1 or self.cp > 1

    def check_attention(self) -> None:
        """A tiled mode needs the device's SRAM per SM: an InputError where the file lacks it
        (checked when the prefill is evaluated; crossovers of other modes need no SRAM)."""
        if self.attention.startswith("tiled") and self.hardware.sram_per_sm is None:
            raise InputError("attention", f"{self.attention} attention needs the on-chip SRAM "
                             f"per SM, which {self.hardware.name} does not give "
                             "(on_chip.sram_per_sm); use kernel (the default), naive or ideal",
                             self.attention)

    @property
    def precision(self) -> dict[str, str]:
        """Data types: compute, weights, activations, KV cache (and a quantized checkpoint's
        embedding table and LM head, "embeddings")."""
        weights = self.weight_dtype or self.model.weight_dtype or self.dtype
        out = {"compute": self.dtype, "weights": weights,
               "activations": self.act_dtype or self.dtype,
               "kv_cache": self.kv_dtype or self.dtype}
        if self.model.embedding_dtype:
            out["embeddings"] = self.model.embedding_dtype
        return out

    def element_bytes(self) -> dict[str, Fraction]:
        """Bytes of one element by symbol, exact: b_w (a quantized checkpoint's with its scales,
        :mod:`roofline.specs.quantization`), b_a, b_kv, b_e (else b_w's)."""
        p = self.precision
        weights = (self.model.quantized.bytes_per_weight if self.weights_from_config
                   else bytes_per_element(p["weights"]))
        return {"b_w": weights, "b_a": bytes_per_element(p["activations"]),
                "b_kv": bytes_per_element(p["kv_cache"]),
                "b_e": bytes_per_element(p["embeddings"]) if "embeddings" in p else weights}

    @property
    def precision_words(self) -> str:
        """The compute data type, and the weights', activations' and KV cache's where they
        differ (the weights' source where it is the config's quantization): "bf16, weights
        fp8"."""
        p = self.precision
        words = self.dtype + "".join(f", {what} {p[key]}" for key, what in
                                     (("weights", "weights"), ("activations", "activations"),
                                      ("kv_cache", "KV cache")) if p[key] != self.dtype)
        if self.weights_from_config:  # "weights int4 (the config's quantization: gptq, ...)"
            how = self.model.quantization.replace("quantization_config", "the config's "
                                                  "quantization")
            words = words.replace(f"weights {p['weights']}", f"weights {p['weights']} ({how})")
        return words + (f", embeddings and LM head {p['embeddings']}" if "embeddings" in p else "")

    @property
    def weights_from_config(self) -> bool:
        """Whether the weights' data type is the checkpoint's (its quantization_config), no
        ``weight_dtype`` given."""
        return self.weight_dtype is None and self.model.weight_dtype is not None

    @property
    def splits(self) -> dict[str, Any]:
        """The degrees of parallelism, as ``--json`` gives them."""
        return {"tp": self.tp, "pp": self.pp, "pipeline": self.pipeline, "ep": self.ep,
                "cp": self.cp, "overlap": self.overlap,
                "network": None if self.network is None else self.network.name,
                "across_nodes": list(self.across_nodes)}

    @property
    def peak(self) -> float:
        """Achievable FLOP/s in the compute data type."""
        return self.hardware.peak(self.dtype)

    @property
    def bandwidth(self) -> float:
        """Achievable HBM bytes/s."""
        return self.hardware.bandwidth()

    @cached_property
    def ridge(self) -> float:
        return self.peak / self.bandwidth

    @cached_property
    def architecture(self) -> Architecture:
        """The model's architecture as run: a windowed model's KV cache as ``kv_cache`` says
        (a model without a window has one kind of cache only), the element-wise work fused as
        ``fusion`` says, a latent-attention model's decode step as ``mla_decode`` says, its
        crossovers on one device's share where more than one runs it (``parallel``; its
        memory the fullest pipeline stage's, ``staged``)."""
        from dataclasses import replace

        arch = self.model.architecture
        if self.parallel:  # staged: memory as the fullest pipeline stage holds it
            arch = replace(arch, parallel=True, staged=self.pp > 1,
                           pipeline=self.pipeline if self.pp > 1 else arch.pipeline)
        if arch.window != "none" and arch.kv_cache != self.kv_cache:
            arch = replace(arch, kv_cache=self.kv_cache)
        if arch.fusion != self.fusion:
            arch = replace(arch, fusion=self.fusion)
        if arch.mla and arch.mla_decode != self.mla_decode:
            arch = replace(arch, mla_decode=self.mla_decode)
        return arch

    @property
    def caches(self) -> tuple[str, ...]:
        """The cache levels of the device the forms are derived behind (:func:`device_caches`)."""
        return device_caches(self.hardware)

    @cached_property
    def forms(self) -> Mapping[str, Any]:
        """The derived expressions of the architecture as run (:mod:`.forms`)."""
        return forms(self.architecture, self.caches)

    @cached_property
    def crossover_forms(self) -> dict[str, Any]:
        """Every crossover of the architecture as run, solved (:mod:`.forms`)."""
        return crossover_forms(self.architecture, self.caches)

    @cached_property
    def level_bandwidths(self) -> dict[str, float]:
        """Bytes/s of each memory level beyond HBM the device's file gives: "sram", "l2",
        "l3"; and "link", one direction of the interconnect, where more than one device runs
        the prefill."""
        out = level_bandwidths(self.hardware)
        if self.parallel:  # communication is timed at the link (its time as link bytes)
            out["link"] = self.hardware.link_bandwidth()
            if "network" in self.links:
                out["network"] = self.links["network"].beta
        return out

    def numbers(self, batch: bool = True) -> dict[str, int | float]:
        """Every symbol's value by name but the prompt length T (and B when ``batch`` is
        False): integers stay integers, byte sizes of sub-byte types are floats."""
        out: dict[str, int | float] = {
            **device_numbers(self.hardware, self.dtype),
            **{name: int(f) if f.denominator == 1 else float(f)
               for name, f in self.element_bytes().items()},
            **self.model.values(),
            "N_tp": self.tp, "N_pp": self.pp, "N_ep": self.ep, "N_cp": self.cp,
            "G_node": self.expert_nodes, "M_node": self.model.node_limit(self.expert_nodes),
            # the network between nodes: none given, it carries nothing (G_node = 1)
            "alpha_net": 0.0 if self.network is None else self.network.latency,
            "beta_net": _INF if self.network is None else self.network.link_bandwidth(),
        }
        out.update(self.link_numbers("tp"))  # the tensor-parallel group's link by default
        if batch:
            out["B"] = self.batch
        return out

    def values(self, batch: bool = True) -> dict[Symbol, Expr]:
        """:meth:`numbers` as exact SymPy values by symbol (byte sizes as Rationals): for
        exact substitution on the symbolic path."""
        from sympy import Float, Integer, Rational

        from ..symbols import CATALOGUE

        exact = self.element_bytes()
        out: dict[Symbol, Expr] = {}
        for name, v in self.numbers(batch).items():
            if name in exact:
                f = exact[name]
                out[CATALOGUE[name].symbol] = Rational(f.numerator, f.denominator)
            else:
                out[CATALOGUE[name].symbol] = Integer(v) if isinstance(v, int) else Float(v)
        return out
