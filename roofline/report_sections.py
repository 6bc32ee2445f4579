"""The parts of ``report.md`` that describe what a setting's model is: the catalogue entries
it shows (those of every model, then those of the model's own kind of attention), each figure's
caption (the attention figure's third panel, where the model has one), in words."""

from __future__ import annotations

from .evaluate import Setting

__all__ = ["DERIVATIONS", "FAMILY_DERIVATIONS", "FIGURES", "families", "derivations",
           "caption"]

# Catalogue entries the report shows, in reading order.
DERIVATIONS = ("roofline.ridge", "roofline.time", "projection.flops", "projection.bytes",
               "projection.intensity", "attention.flops", "attention.naive.bytes",
               "attention.naive.score_bytes", "attention.tiled.block_c", "attention.tiled.bytes",
               "attention.tiled_fa2.bytes", "attention.kernel.bytes", "attention.ideal.bytes",
               "levels.kernel.working_set", "levels.kernel.sharing", "levels.kernel.hbm_bytes",
               "levels.kernel.l2_bytes", "kv_cache.bytes")
# and those of a model's own kind of attention, after them
FAMILY_DERIVATIONS = {
    "window": ("window.pairs", "window.flops", "window.kv_cache.bytes.some"),
    "chunked": ("chunked.pairs", "chunked.flops", "chunked.decode_keys"),
    "mla": ("mla.kv_cache.bytes", "mla.attention.flops", "mla.decode.absorbed.flops"),
    "linear": ("linear_attention.flops.chunkwise", "linear_attention.bytes.chunkwise",
               "linear_attention.state.elements"),
    "sparse": ("dsa.indexer.flops", "dsa.pairs", "dsa.attention.flops",
               "dsa.attention.mha.flops"),
}
FIGURES = {
    "roofline": "The hierarchical roofline: the HBM ceiling, a ceiling for each further memory "
                "level the device's file gives (L2, L3, SRAM) and one compute ceiling per data "
                "type, each ridge P/β annotated; the prefill's projections, attention (naive, "
                "kernel, ideal) and the whole prefill at each prompt length (marker size), and "
                "decode steps, at their HBM intensity and attained FLOP/s, the cached attention "
                "once more at each level's intensity; the dotted vertical line is the intensity "
                "that tiled attention tends to with this SRAM per SM if every re-read came from "
                "HBM (no cache).",
    "time": "Prefill time against prompt length, in total and per operation class (solid: "
            "compute-bound, dashed: memory-bound); each crossover of the report's attention "
            "mode, and each one that holds for every mode, is a vertical line tagged [n]; the "
            "table under the figure gives every crossover's value, the drawn ones with their "
            "tags, the other modes' without a line.",
    "attention": "Attention's HBM traffic for one layer against T: naive Θ(T²), tiled "
                 "Θ(T²H²/M) at several SRAM sizes, ideal Θ(T); and the memory that naive "
                 "attention's score matrix (or the KV cache) needs beside the weights.",
    "phases": "Prefill against decode: intensity against prompt length and against decode "
              "batch, with the ridge: a prefill reuses each weight over T rows, a decode step "
              "over B rows only, and reads the KV cache besides.",
}

def families(s: Setting) -> list[str]:
    """The kinds of attention a setting's model has beyond the dense one (keys of
    :data:`FAMILY_DERIVATIONS`)."""
    arch = s.architecture
    kinds = {"window": arch.window != "none" and arch.window_kind == "sliding",
             "chunked": arch.window != "none" and arch.window_kind == "chunked",
             "mla": arch.mla, "linear": arch.linear_attention, "sparse": arch.sparse_attention}
    return [k for k, has in kinds.items() if has]


def derivations(s: Setting) -> list[str]:
    from .catalog import record

    out = ["## Derivations used", "",
           "Exact expressions from the catalogue (`roofline derive NAME` prints any of them); "
           "the symbols are those of `roofline.symbols`.", ""]
    own = [n for kind in families(s) for n in FAMILY_DERIVATIONS[kind]]
    for name in (*DERIVATIONS, *own):
        e = record(name)
        assumptions = e["assumptions"]
        out += [f"**`{name}`**: {e['meaning']} ({e['unit']}).", "", f"$$\n{e['latex']}\n$$", "",
                f"*Source:* {e['source']}." + (f" *Assumptions:* {'; '.join(assumptions)}."
                                               if assumptions else ""), ""]
    return out


def _third_panel(s: Setting) -> str:
    """The attention figure's third panel in words, where the model's attention has one."""
    kinds = families(s)
    if "linear" in kinds:
        return (" The third panel: a Gated DeltaNet layer's chunked recurrence, Θ(T), beside a "
                "full-attention layer's attention, Θ(T²) (FLOPs and HBM bytes).")
    if "sparse" in kinds:
        return (" The third panel: the sparse layer's top-k attention, Θ(k·T) beyond T = k, and "
                "its indexer, Θ(T²), beside dense latent attention.")
    if "window" in kinds or "chunked" in kinds:
        span = "W" if "window" in kinds else "C"
        return (f" The third panel: one local layer's FLOPs and bytes with and without its "
                f"{'window' if span == 'W' else 'chunks'}, bending from T² to {span}·T.")
    return ""




def caption(kind: str, s: Setting) -> str:
    """A figure's caption in ``report.md``."""
    return FIGURES[kind] + (_third_panel(s) if kind == "attention" else "")
