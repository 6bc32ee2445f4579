"""``roofline plot KIND``: one figure to a file (PNG, SVG, PDF, ... by the file's extension).

Kinds: ``roofline``, ``time``, ``attention``, ``phases`` (``--hardware`` takes several devices,
comma-separated, overlaid on one figure) and ``ttft`` (the options of ``roofline ttft``).
Wiring only: the figures are drawn by :mod:`roofline.plot`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from .analyze import add_setting_arguments, parse_ints

if TYPE_CHECKING:
    from ..specs.model import ModelShape

__all__ = ["register", "run"]

KINDS = ("roofline", "time", "attention", "phases", "ttft", "tpot", "goodput", "scaling",
         "shapes")
_HELP = {
    "roofline": "the roofline: ceilings per data type, a prefill's operations and decode steps",
    "time": "prefill time against prompt length, per operation class, each crossover a "
            "tagged line; the crossovers' values (tagged) also go beside the figure, to "
            "FILE.crossovers.csv and FILE.crossovers.tex (a LaTeX tabular)",
    "attention": "attention's HBM traffic against prompt length T (naive, tiled, kernel, "
                 "ideal) and the memory footprint",
    "phases": "intensity of prefill against prompt length T (and at the L2, where it binds) "
              "and of decode against batch B, with the ridge",
    "scaling": "prefill time (communication shaded) and parallel efficiency against the "
               "tensor-parallel degree 1, 2, 4, 8, one line per prompt length",
    "shapes": "the fraction of peak work a model's GEMMs and attention can use against prompt "
              "length T: tile and wave quantization (the estimate's, never the bound's), from "
              "the device file's [estimate] tiles; --max-prompt sets the axis (default 2,048)",
    "ttft": "time to first token against arrival rate (execution and queueing); the options of "
            "roofline ttft, --rate optional",
    "tpot": "the decodes' TPOT against the prefill chunk beside them in one step (Sarathi-Serve's "
            "hybrid batch), a curve per count of decodes, the TPOT objective and each curve's "
            "chunk budget marked; one device, or its share under --tp",
    "goodput": "requests meeting both objectives against the request rate per device, for a "
               "disaggregated prefill-decode pair and a colocated instance, each goodput marked; "
               "the options of roofline goodput",
}

# The figures with a prompt-length axis: what --max-prompt's default is on each.
_MAX_PROMPT = {
    "time": "twice the model's context limit, the part past the context shaded; crossovers "
            "past the axis are listed in FILE.crossovers.csv without a line",
    "attention": "1,048,576; the part past the model's context shaded",
    "shapes": "2,048, every token drawn; at most 65,536",
    "phases": "131,072, or further where a cache level's traffic ends the prefill's "
              "compute-bound regime; the prefill panel's axis, prompts past it not marked",
}


def _figure_arguments(p: argparse.ArgumentParser, kind: str) -> None:
    add_setting_arguments(p)
    p.add_argument("--hardware", required=True,
                   help="device name(s) or .toml path(s), comma-separated to overlay devices")
    p.add_argument("--prompt", default="128,2048,8192",
                   help="prompt lengths placed on the figure, comma-separated "
                        "(default 128,2048,8192)")
    p.add_argument("--batch",
                   help="roofline and phases: the decode batches, comma-separated (default "
                        "1,64; the prefill is of one sequence); time, attention and scaling: "
                        "the sequences prefilled together, one number (default 1), as report "
                        "takes it")
    p.add_argument("--context",
                   help="the decode step's cached tokens (default: the longest prompt)")
    if kind in _MAX_PROMPT:
        p.add_argument("--max-prompt", metavar="N",
                       help="the longest prompt on the x-axis, in tokens, more than 16 "
                            f"(default: {_MAX_PROMPT[kind]})")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="output file; its extension names the format (png, svg, pdf, ...); a "
                        "missing folder is created")
    _dpi_argument(p)


def _dpi_argument(p: argparse.ArgumentParser) -> None:
    from .ttft_options import _real

    size = p.add_mutually_exclusive_group()
    size.add_argument("--size", choices=("column", "page"), default="page",
                      help="the printed width: a column (3.33 in) or a page's text width (7 in) "
                           "of a two-column paper (default page); the height follows; no text "
                           "under 7 pt at that size")
    size.add_argument("--width", type=_real, metavar="IN",
                      help="the printed width in inches, 3.25 to 20 (instead of --size)")
    p.add_argument("--data", metavar="FILE",
                   help="also write every series drawn to FILE (.csv or .json) with the "
                        "command, the version and the SHA-256 of each device and model file "
                        "(also in the figure file's metadata)")
    p.add_argument("--dpi", metavar="N",
                   help=f"dots per inch of a raster file, PNG (default {DPI}; 300 for print); "
                        "SVG and PDF are vector drawings")


DPI = 150  # the house style's savefig.dpi (roofline.plot._style.RC)
_DPI_RANGE = (50, 1200)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="draw one figure to a file",
                       description="Draw one figure of a device (or several) and a model to a "
                       "file: PNG, SVG or PDF by the file's extension.")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    for kind in KINDS:
        text = _HELP[kind]
        k = kinds.add_parser(kind, help=text, description=text[0].upper() + text[1:] + ".",
                             conflict_handler="resolve")
        if kind == "ttft":
            from .ttft_options import add_ttft_arguments

            add_ttft_arguments(k, rate_required=False)
            k.add_argument("--compare", action="store_true",
                           help="add two-way inter-op against intra-op (needs --speedup)")
            k.add_argument("-o", "--output", required=True, metavar="FILE",
                           help="output file; its extension names the format; a missing folder "
                                "is created")
            _dpi_argument(k)
        elif kind == "tpot":
            _tpot_arguments(k)
        elif kind == "goodput":
            from .serve import add_goodput_arguments

            add_goodput_arguments(k)
            k.add_argument("-o", "--output-file", dest="figure", required=True, metavar="FILE",
                           help="output file; its extension names the format; a missing folder "
                                "is created")
            _dpi_argument(k)
        else:
            _figure_arguments(k, kind)
        k.set_defaults(run=run)


def _tpot_arguments(p: argparse.ArgumentParser) -> None:
    from .serve import add_step_arguments
    from .ttft_options import _count

    add_step_arguments(p, curves=True)
    p.add_argument("--max-chunk", type=_count, metavar="N",
                   help="the longest chunk on the axis (default: 1.5 times the largest budget)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="output file; its extension names the format; a missing folder is "
                        "created")
    _dpi_argument(p)


def _tpot_figure(args: argparse.Namespace, size: str | float):
    import warnings
    from dataclasses import replace

    from ..api import hybrid
    from ..evaluate.memory import check_memory
    from ..plot.tpot import tpot_figure
    from .analyze import _options, model_of

    decodes = parse_ints(args.decodes, "--decodes")
    first = hybrid(args.hardware, model_of(args), decodes=decodes[0], context=args.context,
                   tpot=args.tpot, done=args.done, **_options(args))  # roofline hybrid's checks
    s = first.setting
    for count in decodes[1:]:  # the first's warning is hybrid's
        message = check_memory(replace(s, batch=count), args.context + 1, "the decodes' step",
                               "decode")
        if message:
            warnings.warn(message, stacklevel=2)
    return tpot_figure(s, decodes, args.context, args.tpot, args.done, args.max_chunk,
                       size), [s]


def _settings(args: argparse.Namespace, batch: int = 1) -> list:
    from ..api import setting
    from ..errors import InputError
    from .analyze import model_of, parallel_options

    names = [h.strip() for h in args.hardware.split(",")]
    if not any(names):
        raise InputError("--hardware", "needs at least one device", args.hardware)
    if not all(names):  # as --prompt refuses 128,,256
        raise InputError("--hardware", "a device name is empty between commas", args.hardware)
    model = model_of(args)
    return [setting(h, model, dtype=args.dtype, weight_dtype=args.weight_dtype,
                    kv_dtype=args.kv_dtype, act_dtype=args.act_dtype, attention=args.attention,
                    kv_cache=args.kv_cache, fusion=args.fusion,
                    mla_decode=args.mla_decode, batch=batch, **parallel_options(args))
            for h in names]


def _beyond_context(model: ModelShape, kind: str, prompts: list[int],
                    context: int | None) -> None:
    """A warning where the roofline or phases figure places a prompt, or the decode step's
    context, beyond the model's context (evaluated all the same, as ``prefill`` does; the time
    figure runs past it on purpose)."""
    import warnings

    if kind not in ("roofline", "phases"):
        return
    for flag, tokens in (("prompt", max(prompts)), ("context", context)):
        message = tokens and model.beyond_context(tokens, f"{flag}: {tokens} tokens")
        if message:
            warnings.warn(message, stacklevel=2)


def _ttft_figure(args: argparse.Namespace, size: str | float):
    from ..api import ttft
    from ..plot import ttft_figure
    from .ttft_options import ttft_options

    result = ttft(**ttft_options(args))
    return ttft_figure(result, compare=args.compare, size=size), [result.setting]


def _crossover_files(out: Path) -> list[Path]:
    """The time figure's crossover tables beside it: F.crossovers.csv and F.crossovers.tex for
    F.png, checked writable before any work (:func:`roofline.output.check_target`)."""
    from ..output import check_target

    return [check_target(out.with_name(f"{out.stem}.crossovers{ext}"), suffix=ext)
            for ext in (".csv", ".tex")]


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..plot import _style

    from ..plot import data

    target = args.figure if args.kind == "goodput" else args.output
    out = _style.check_output(target)  # before any work: a bad extension fails at once
    tables = _crossover_files(out) if args.kind == "time" else []
    size = args.size if args.width is None else args.width
    try:
        _style.width(size)
    except InputError as err:
        raise InputError("--width", err.rule, args.width) from None
    table = None if args.data is None else data.check_data(args.data)
    dpi = None if args.dpi is None else parse_ints(args.dpi, "--dpi", single=True)[0]
    if dpi is not None and not _DPI_RANGE[0] <= dpi <= _DPI_RANGE[1]:
        raise InputError("--dpi", f"must be from {_DPI_RANGE[0]} to {_DPI_RANGE[1]}", dpi)
    _style.headless()
    if args.kind == "ttft":
        if "," in args.hardware:
            raise InputError("--hardware", "the ttft figure takes one device", args.hardware)
        fig, settings = _ttft_figure(args, size)
        what = f"ttft: {args.model} on {args.hardware}"
    elif args.kind == "tpot":
        fig, settings = _tpot_figure(args, size)
        what = f"tpot: {settings[0].model.name} on {settings[0].hardware.name}"
    elif args.kind == "goodput":
        from ..api import goodput
        from ..plot.goodput import goodput_figure
        from .serve import goodput_options

        result = goodput(**goodput_options(args))
        fig, settings = goodput_figure(result, size), [result.setting]
        what = f"goodput: {result.setting.model.name} on {result.setting.hardware.name}"
    else:
        from .. import plot

        prompts = parse_ints(args.prompt, "--prompt")
        decode = args.kind in ("roofline", "phases")  # figures with a decode batch axis
        batches = parse_ints(args.batch or ("1,64" if decode else "1"), "--batch",
                             single=not decode)
        context = None if args.context is None else \
            parse_ints(args.context, "--context", single=True)[0]
        max_prompt = getattr(args, "max_prompt", None)
        if max_prompt is not None:
            max_prompt = parse_ints(max_prompt, "--max-prompt", single=True)[0]
        if max_prompt is not None and max_prompt <= 16:
            raise InputError("--max-prompt", "must be more than 16 tokens", max_prompt)
        settings = _settings(args, 1 if decode else batches[0])
        if args.kind == "shapes":
            return _shapes(args, settings, out, max_prompt, size, dpi, table)
        if args.kind == "scaling" and settings[0].tp > 1:
            raise InputError("--tp", "the scaling figure runs its own tensor-parallel degrees "
                             "(1 to 8): give the other splits only", settings[0].tp)
        _beyond_context(settings[0].model, args.kind, prompts, context)
        if args.kind == "time":  # the note says the table is beside the figure
            fig = plot.time_figure(settings, max_prompt=max_prompt, size=size,
                                   table=tables[0].name)
        else:
            fig = plot.figure(args.kind, settings, prompts=prompts, batches=batches,
                              context=context, max_prompt=max_prompt, size=size)
        from ..plot._common import splits

        devices = ", ".join(s.hardware.name for s in settings)
        detail = ", ".join([args.dtype, *splits(settings[0])])
        what = f"{args.kind}: {settings[0].model.name} on {devices} ({detail})"
    origin = data.provenance(getattr(args, "argv", []), settings)
    files = {out: (_style.render(fig, out, dpi, data.metadata(origin)), what)}
    if tables:
        from ..plot.time import crossover_table, crossover_table_csv, crossover_table_latex
        from ..plot.time import default_tokens

        xs = default_tokens(settings, max_prompt)  # the figure's axis: the same tags
        headers, rows = crossover_table(settings, xs[0], xs[-1])
        for path, text in zip(tables, (crossover_table_csv, crossover_table_latex)):
            files[path] = (text(headers, rows).encode(),
                           "every crossover's value; [n]: its tag on the figure")
    if table is not None:
        files[table] = (data.data_text(table, fig, origin).encode(),
                        "every series drawn, and where it came from")
    return _write(files)


def _shapes(args: argparse.Namespace, settings: list, out: Path, max_prompt: int | None,
            size: str | float, dpi: int | None, table: Path | None) -> int:
    """``plot shapes``: one device and model, the setting's splits refused (the figure is of one
    device's whole GEMMs)."""
    from ..errors import InputError
    from ..plot import _style, data, shapes

    if len(settings) > 1:
        raise InputError("--hardware", "the shapes figure takes one device", args.hardware)
    s = settings[0]
    if s.parallel:
        raise InputError("--tp", "the shapes figure draws one device's whole GEMMs: give no "
                         "--tp, --pp, --ep or --cp", s.parallel_words.removeprefix(", "))
    if max_prompt is not None and max_prompt > 65536:
        raise InputError("--max-prompt", "must be at most 65,536 for the shapes figure (every "
                         "token is drawn)", max_prompt)
    fig = shapes.figure(s.hardware, s.model, range(1, (max_prompt or 2048) + 1), size=size)
    origin = data.provenance(getattr(args, "argv", []), settings)
    what = f"shapes: {s.model.name} on {s.hardware.name}"
    files = {out: (_style.render(fig, out, dpi, data.metadata(origin)), what)}
    if table is not None:
        files[table] = (data.data_text(table, fig, origin).encode(),
                        "every series drawn, and where it came from")
    return _write(files)


def _write(files: dict[Path, tuple[bytes, str]]) -> int:
    """The figure and the files beside it, all or none (:func:`roofline.output.write_all`),
    their missing folders created (and removed again where the writing fails), each named
    with what it holds; exit status 0."""
    from ..output import make_folders, remove_folders, write_all

    made: list[Path] = []
    try:
        for folder in dict.fromkeys(path.parent for path in files):
            made += make_folders(folder)
        write_all({path: data for path, (data, _) in files.items()})
    except BaseException:
        remove_folders(made)
        raise
    for path, (_, about) in files.items():
        print(f"wrote {path} ({about})")
    return 0
