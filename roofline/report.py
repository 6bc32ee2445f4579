"""``roofline report``: one Markdown report of a device and a model, with its figures.

``report.md`` holds the derivations used (LaTeX from the catalogue), the crossover table (closed
form and value of each), the prefill table at a few prompt lengths with the decode step beside
it, and the four figures embedded as relative links; the figures are written beside it. Every
file is written into a temporary folder first and moved into place at the end (the report
last), so a failure leaves nothing half-written. The temporary folder, ``.NAME.tmp-PID-XXXX``
beside the output folder ``NAME``, is removed on any failure, Ctrl-C included (and the command
line's SIGTERM and SIGHUP, which it raises as Ctrl-C), and the process drawing half the figures
is killed and waited for first; those signals are held back while the folder is made and while
the files are moved into place, so that a report is never half-moved. One left by a run that was
killed outright (SIGKILL: its process ``PID`` gone, the drawing process killed with it) is
removed by the next run into the same folder.
"""

from __future__ import annotations

import glob
import math
import os
import shutil
import tempfile
import textwrap
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import evaluate
from .api import CrossoverTable, PrefillTable, setting
from .defaults import DEFAULT
from .errors import InputError
from .evaluate import CrossoverValue, Setting
from .forked import _signals_held, map_halves
from .output import check_target, make_folders, remove_folders
from .report_sections import DERIVATIONS, FIGURES, caption, derivations
from .tables import absent, binary_size, count, grouped, level_name, render, si

__all__ = ["Report", "build", "markdown", "DEFAULT", "DERIVATIONS", "FIGURES", "PROMPTS"]

PROMPTS = (128, 512, 2048, 8192, 32768)  # the prefill table's prompt lengths
FIGURE_PROMPTS = (128, 2048, 8192)  # placed on the roofline and the phases figure
BATCHES = (1, 64)
_LONG = 220  # LaTeX longer than this goes in its own display block, not in a table cell


@dataclass(frozen=True)
class Report:
    """What :func:`build` wrote: the folder, ``report.md``, the figures by kind."""

    directory: Path
    markdown: Path
    figures: dict[str, Path]
    summary: str


def _crossovers(table: CrossoverTable) -> list[str]:
    from .evaluate import solve_closed_forms

    values = solve_closed_forms(table.setting, table.values)  # all at once, not one by one
    rows, blocks = [], []
    for name, v in values.items():
        value = (f"{count(v.value, v.unit)} {v.unit}" if v.exists
                 else absent(v.reason, v.evaluated))
        tex = v.latex
        if not tex:  # never, or no closed form of degree ≤ 2 on its branch
            form = "–"
        elif len(tex) <= _LONG:
            form = f"${tex}$"
        else:
            unknown = "B" if v.unit == "sequences" else "T"
            blocks += [f"**`{name}`**", "", f"$$\n{unknown}^{{*}} = {tex}\n$$", ""]
            form = "see below"
        rows.append([f"`{name}`", form, value, v.reason or ""])
    s = table.setting
    out = ["## Crossovers", "",
           f"Each crossover is solved by SymPy from its defining equality; the value is for "
           f"{s.model.name} on {s.hardware.name} ({s.precision_words}{s.parallel_words}). The "
           "closed form is the branch "
           "of the piecewise roofline that holds at that value.", "",
           render(["crossover", "closed form", "value", "note"], rows, markdown=True), ""]
    if blocks:
        out += ["### Closed forms too long for the table", "", *blocks]
    return out


def _prefill(table: PrefillTable, caught: Sequence[str]) -> list[str]:
    d = table.decode
    out = ["## Prefill at a few prompt lengths", "", render(*table.rows(), markdown=True), "",
           f"{table.estimate_line()}.", "", f"{table.decode_line()}.", ""]
    s = table.setting
    if s.architecture.mla:  # latent attention: the step in its other form too
        from dataclasses import replace

        other = "naive" if s.mla_decode == "absorbed" else "absorbed"
        n = evaluate.decode(replace(s, mla_decode=other), d.context_tokens)
        how = ("expanding the latent cache into per-head keys and values each step"
               if other == "naive" else "attending over the latent, W^UK and W^UV absorbed")
        out[-1:-1] = ["", f"That is latent attention's {s.mla_decode} form; the {other} one, "
                      f"{how}, takes {si(n.time_s, 's')} at {n.intensity:.3g} FLOP/byte "
                      f"({n.bound}-bound)."]
    out += [f"*Note:* {w}." for w in caught]
    return out + ([""] if caught else [])


def _device(s: Setting) -> list[str]:
    hw, mo = s.hardware, s.model
    sram = binary_size(hw.sram_per_sm) if hw.sram_per_sm else "not given"
    rows = [["peak compute", f"{si(hw.peak(s.dtype), 'FLOP/s')} ({s.dtype})"],
            ["memory bandwidth β", si(hw.bandwidth(), "B/s")],
            ["ridge P/β", f"{grouped(s.ridge)} FLOP/byte"],
            ["device memory", si(hw.memory_capacity, "B")],
            ["on-chip SRAM per SM", sram],
            *_levels(hw),
            ["model", f"{mo.name}: {mo.parameters:,} parameters, D = {mo.hidden_size}, "
                      f"L = {mo.num_layers}, n_q = {mo.num_heads}, n_kv = {mo.num_kv_heads}, "
                      f"H = {mo.head_dim}, F = {mo.intermediate_size}, V = {mo.vocab_size}"],
            ["precision", ", ".join(f"{k} {v}" for k, v in s.precision.items())],
            ["attention", f"{s.attention}; batch {s.batch}"],
            ["element-wise work", "fused into the neighbouring kernels" if s.fusion != "none"
             else "separate kernels through HBM"]]
    if s.parallel:
        rows.append(["parallelism", s.parallel_words.removeprefix(", ")])
    if mo.window != "none":
        layers = "every layer" if mo.window == "all" else \
            f"{mo.window_layers} of {mo.num_layers} layers"
        if mo.attention_chunk_size:
            cache = "the current chunk" if s.kv_cache == "window" else "all T tokens"
            rows.append(["chunked attention", f"C_att = {mo.attention_chunk_size:,} tokens on "
                         f"{layers}; their KV cache keeps {cache}"])
        else:
            cache = "the last W tokens" if s.kv_cache == "window" else "all T tokens"
            rows.append(["sliding window", f"W = {mo.sliding_window:,} tokens on {layers}; "
                         f"their KV cache keeps {cache}"])
    if mo.linear_layers:
        rows.append(["linear attention", f"Gated DeltaNet on {mo.linear_layers} of "
                     f"{mo.num_layers} layers, {mo.linear_value_heads} value heads of "
                     f"{mo.linear_value_head_dim} (a state per layer in place of a KV cache); "
                     "the others full attention"])
    if mo.index_topk:
        rows.append(["sparse attention", f"an indexer of {mo.index_heads} heads of "
                     f"{mo.index_head_dim} scores every earlier token; the attention reads "
                     f"the top {mo.index_topk:,}"])
    return ["## Setting", "", render(["", ""], rows, markdown=True), "",
            f"Hardware file: `{hw.path.name}`; model: `{mo.path.name}`.", ""]


def markdown(s: Setting, prefill: PrefillTable, crossovers: CrossoverTable,
             figures: Sequence[str], caught: Sequence[str] = ()) -> str:
    """The text of ``report.md``; ``figures``: the kinds whose PNG lies beside it."""
    out = [f"# Prefill roofline: {s.model.name} on {s.hardware.name} ({s.dtype})", "",
           _summary_text(s, prefill, crossovers.values), "",
           *_device(s), "## Figures", ""]
    for kind in figures:
        out += [f"![{kind}: {s.model.name} on {s.hardware.name}, {s.dtype}]({kind}.png)", "",
                f"*{caption(kind, s)}*", ""]
        if kind == "time":  # the figure's tags keyed to their values, as plot time writes them
            from .plot.time import crossover_table, default_tokens

            xs = default_tokens([s])
            out += [render(*crossover_table(s, xs[0], xs[-1]), markdown=True), ""]
    out += [*_prefill(prefill, caught), *_crossovers(crossovers), *derivations(s)]
    return "\n".join(out).rstrip() + "\n"


def _levels(hw: Any) -> list[list[str]]:
    """The device's memory levels beyond HBM, as its file gives them."""
    rows = []
    for name, size, bw in (("L2 cache", hw.l2_bytes, hw.l2_bandwidth),
                           ("L3 cache", hw.l3_bytes, hw.l3_bandwidth)):
        if size is not None:
            rows.append([name, si(size, "B") + (f", {si(bw, 'B/s')}" if bw else "")])
    if hw.sram_bandwidth is not None:
        rows.append(["SRAM bandwidth (all SMs)", si(hw.sram_bandwidth, "B/s")])
    return rows


def _binding_text(s: Setting, prefill: PrefillTable,
                  values: dict[str, CrossoverValue]) -> str:
    """Which memory level binds attention at the table's prompt lengths, where the K and V the
    thread blocks in flight re-read outgrow the cache, and what the SRAM-only count (every
    re-read from HBM) would have said."""
    if not s.caches:
        return ""
    runs: list[tuple[str, int, int]] = []
    for p in prefill.points:
        level = _attention_level(s, p.prompt_tokens)
        if runs and runs[-1][0] == level:
            runs[-1] = (level, runs[-1][1], p.prompt_tokens)
        else:
            runs.append((level, p.prompt_tokens, p.prompt_tokens))
    spans = [f"{lv} at T = {a:,}" if a == b else f"{lv} at T = {a:,}–{b:,}" for lv, a, b in runs]
    parts = [f"Attention ({s.attention}) is bound by {', by '.join(spans)}."]
    spill = values.get(f"attention_cache_spill_tokens.{s.attention}")
    if spill is not None and spill.exists:
        last = s.caches[-1]
        size = s.hardware.l2_bytes if last == "l2" else s.hardware.l3_bytes
        parts.append(f"Its K and V outgrow the {si(size, 'B')} {last.upper()} at "
                     f"T = {spill.value:,.0f}; beyond, part of the re-reads reach HBM.")
    old = _uncached(s)
    v = old.get(f"prefill_compute_bound_tokens.{s.attention}")
    if v is not None and v.exists and v.ends_at:
        parts.append(f"Charging every re-read to HBM (no cache, the first release's model, "
                     f"which published kernels beat) would end the compute-bound regime at "
                     f"T = {v.ends_at:,.0f}.")
    return " ".join(parts)


def _attention_level(s: Setting, tokens: int) -> str:
    """What binds the prefill's attention at ``tokens``, named: compute, HBM, L2, L3 or SRAM."""
    return level_name(evaluate.attention_level(s, tokens))


def _uncached(s: Setting) -> dict[str, CrossoverValue]:
    """The crossovers of ``s`` on its device with no cache level: every re-read from HBM."""
    from dataclasses import replace

    from .evaluate import crossover_values

    hw = replace(s.hardware, l2_bytes=None, l3_bytes=None, l2_bandwidth=None, l3_bandwidth=None)
    return crossover_values(replace(s, hardware=hw))


def _summary_text(s: Setting, prefill: PrefillTable,
                  values: dict[str, CrossoverValue]) -> str:
    parts = [f"Ridge {grouped(s.ridge)} FLOP/byte."]
    v = values.get(f"prefill_compute_bound_tokens.{s.attention}")
    if v is not None and v.exists:
        again = f", memory-bound again from T = {v.ends_at:,.0f}" if v.ends_at else ""
        if v.ends_at and s.caches:
            level = _attention_level(s, math.ceil(v.ends_at))
            again += f" (attention's {level} traffic)" if level not in ("compute", "HBM") else ""
        parts.append(f"The prefill ({s.attention} attention) is compute-bound from "
                     f"T = {v.value:,.0f} tokens{again}.")
    v = values.get(f"attention_dominates_time_tokens.{s.attention}")
    if v is not None and v.exists:
        parts.append(f"Attention takes longer than the projections beyond T = {v.value:,.0f}.")
    v = values.get(f"overhead_dominates_below_tokens.{s.attention}")
    if v is not None and v.exists:
        parts.append(f"Launch and host overhead (the estimate's) outweigh the roofline time "
                     f"below T = {v.value:,.0f}.")
    d = prefill.decode
    v = values.get("decode_critical_batch")
    crit = f"; its projections reach the ridge at batch {v.value:,.0f}" if v and v.exists else ""
    binding = _binding_text(s, prefill, values)
    if binding:
        parts.append(binding)
    parts.append(f"A decode step at batch {d.batch} (context {d.context_tokens:,}) has "
                 f"{grouped(d.intensity) if d.intensity >= 1000 else f'{d.intensity:.3g}'} "
                 f"FLOP/byte ({d.bound}-bound){crit}.")
    return " ".join(parts)


def _temporary_folder(out: Path) -> Path:
    """A new temporary folder beside ``out``, named after this process; first the ones that
    killed runs left there (their process no longer exists) are removed."""
    prefix = f".{out.name}.tmp-"
    for old in out.parent.glob(f"{glob.escape(prefix)}*"):
        pid = old.name[len(prefix):].partition("-")[0]
        left = old.is_dir() and not old.is_symlink() and pid.isascii() and pid.isdigit()
        if left and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=out.parent))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except (OverflowError, ValueError):  # not a process id at all
        return False
    return True


def _cleanup(tmp: Path | None, made: Sequence[Path]) -> None:
    """Remove the temporary folder, then the folders that were made (deepest first), where
    they are still empty."""
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    remove_folders(made)


def build(hardware: str = DEFAULT["hardware"], model: str = DEFAULT["model"],
          dtype: str = DEFAULT["dtype"], output: str | Path = "report",
          prompts: Sequence[int] = PROMPTS, figures: Sequence[str] = tuple(FIGURES),
          **options: Any) -> Report:
    """Write ``output/report.md`` and its figures; return what was written. The folder is
    checked before any work (:func:`roofline.output.check_target`); an error names ``output``.

    ``options``: ``weight_dtype``, ``kv_dtype``, ``act_dtype``, ``attention``, ``batch``,
    ``kv_cache``, ``tp``, ``pp``, ``ep``, ``cp``, ``overlap``, ``network`` (as
    :func:`roofline.setting`).
    """
    from . import plot
    from .plot import _style
    from .plot._common import crossovers as cached_crossovers

    names = [f"{kind}.png" for kind in figures] + ["report.md"]
    # before any work: a clash fails at once, nothing written
    out = check_target(output, "folder", contents=names, argument="output")
    s = setting(hardware, model, dtype=dtype, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        points = evaluate.prefill(s, prompts)
        longest = max(p.prompt_tokens for p in points)
        notes = ([f"prompts beyond {s.model.name}'s context of {s.model.max_position:,} "
                  "tokens are evaluated all the same"] if longest > s.model.max_position else [])
        context = min(longest, s.model.max_position)
        for tokens, what, step in ((longest, "the prefill", "prefill"),
                                   (context, "the decode step", "decode")):
            message = evaluate.check_memory(s, tokens, what, step)
            if message:
                notes.append(message)
    notes += [str(w.message) for w in caught]
    table = PrefillTable(s, points, evaluate.decode(s, context))
    crossings = CrossoverTable(s, cached_crossovers(s))
    made = make_folders(out.parent)  # the folders this run creates: removed on any failure
    tmp = None
    try:
        with _signals_held():  # made and named in ``tmp`` at once: never made and lost
            tmp = _temporary_folder(out)

        def draw(kind: str) -> Path:
            fig = plot.figure(kind, [s], prompts=FIGURE_PROMPTS, batches=BATCHES, context=context)
            return _style.savefig(fig, tmp / f"{kind}.png", argument=None)

        written = dict(zip(figures, map_halves(draw, list(figures))))  # two at a time
        text = markdown(s, table, crossings, list(written), notes)
        (tmp / "report.md").write_text(text, encoding="utf-8")
        # again, after the work: nothing is replaced unless every target can be
        check_target(out, "folder", contents=names, argument="output")
        made = make_folders(out) + made
        final = {kind: out / path.name for kind, path in written.items()}
        with _signals_held():  # every file moved, or (an OSError) none after the failing one
            for kind, path in written.items():
                os.replace(path, final[kind])
            os.replace(tmp / "report.md", out / "report.md")  # last: it never links a missing file
    except OSError as err:
        _cleanup(tmp, made)
        raise InputError("output", f"cannot write the report: {err.strerror or err}",
                         str(out)) from None
    except BaseException:
        _cleanup(tmp, made)
        raise
    _cleanup(tmp, [])
    summary = "\n".join([
        f"Report: {out / 'report.md'}",
        f"  {s.model.name} on {s.hardware.name} ({s.precision_words}, {s.attention} "
        f"attention{s.parallel_words})",
        *textwrap.wrap(_summary_text(s, table, crossings.values), 96, initial_indent="  ",
                       subsequent_indent="  "),
        f"  figures: {', '.join(p.name for p in final.values())}"])
    return Report(out, out / "report.md", final, summary)
