"""One house style for every figure: sizes, fonts, colours per operation class, and a
deterministic ``savefig`` (fixed metadata and SVG hash salt: the same inputs give the same bytes
of SVG and PDF, so a figure in a paper can be regenerated exactly).

Only the plotting package imports matplotlib, and only when a figure is asked for.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..output import check_target, make_folders, remove_folders, write_atomic

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["RC", "SIZE", "KIND", "MODE", "LEVEL", "DEVICE", "LABEL", "style", "figure", "axes",
           "formats", "check_output", "savefig", "render", "width", "narrow", "wrap", "WIDTHS",
           "wrap_fitted",
           "MIN_POINTS", "tokens_label", "headless", "device_color",
           "device_dashes", "device_marker", "nested", "DEVICE_DASHES", "DEVICE_MARKERS",
           "short_log_ticks"]

# The palette of every figure: Okabe & Ito's eight colours ("Color Universal Design", 2002,
# jfly.uni-koeln.de/color), told apart under protanopia and deuteranopia (every pair at least
# 17 ΔE apart in Machado et al.'s 2009 simulation: tests/test_plot_colours.py); yellow, which
# white paper washes out, is left out of the lines.
OKABE_ITO = {"black": "#000000", "blue": "#0072B2", "orange": "#E69F00",
             "bluish green": "#009E73", "vermillion": "#D55E00", "reddish purple": "#CC79A7",
             "sky blue": "#56B4E9"}
INDIGO = "#332288"  # Paul Tol's muted "indigo" (personal.sron.nl/~pault): a ninth colour, at
# least 24 ΔE from each of the eight and from the greys of ceilings under both simulations
# The printed widths, inches: a column and the text width of the two-column ACM (acmart
# "sigconf": 241.14 pt column, 506.295 pt text) and IEEE (IEEEtran: 3.5 in column, 7.16 in
# text) templates, rounded to what fits both. A figure is drawn at its printed size, so its
# points are the paper's points: no text under MIN_POINTS.
WIDTHS = {"column": 3.33, "page": 7.0}
WIDTH_RANGE = (3.25, 20.0)  # inches a figure may be asked for (--width): from the narrowest
# two-column paper's column (3.25 in) up
MIN_POINTS = 7.0  # the smallest text at the printed size (most venues ask for 7 to 8 pt)
NARROW = 5.0  # inches: narrower figures stack their panels and put legends under the plot
SIZE = (WIDTHS["page"], 4.8)  # inches: one figure of a page's width (the default)
RC: dict[str, Any] = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "figure.titlesize": 8.5,
    "legend.title_fontsize": 7, "legend.handlelength": 1.8, "legend.borderaxespad": 0.3,
    "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5, "axes.axisbelow": True,
    "axes.spines.top": False, "axes.spines.right": False, "lines.linewidth": 1.6,
    "legend.framealpha": 0.9, "savefig.dpi": 150, "figure.dpi": 100,
    "svg.hashsalt": "roofline", "svg.fonttype": "path", "pdf.fonttype": 42,
    "axes.prop_cycle": "cycler('color', " + repr(list(OKABE_ITO.values())) + ")",
}
# Colour of each operation class (roofline.derive.transformer.KINDS), the whole prefill, decode.
KIND = {"projection": OKABE_ITO["blue"], "attention": OKABE_ITO["vermillion"],
        "elementwise": OKABE_ITO["bluish green"], "embedding": OKABE_ITO["reddish purple"],
        "lm_head": OKABE_ITO["sky blue"], "total": "#000000", "prefill": "#000000",
        "decode": OKABE_ITO["orange"], "decode.naive": INDIGO,
        "communication": OKABE_ITO["orange"]}
LABEL = {"projection": "projections", "attention": "attention",
         "elementwise": "element-wise (norms, RoPE, adds)", "embedding": "embedding",
         "lm_head": "LM head", "total": "whole prefill", "prefill": "whole prefill",
         "decode": "decode step", "decode.naive": "decode step, naive MLA",
         "communication": "communication"}
# Colour of each attention mode (roofline.derive.attention.MODES).
MODE = {"naive": OKABE_ITO["vermillion"], "tiled": OKABE_ITO["reddish purple"],
        "tiled_fa2": OKABE_ITO["sky blue"], "kernel": OKABE_ITO["blue"],
        "ideal": OKABE_ITO["bluish green"]}
# Each memory level beyond HBM: its ceiling's line style, and the marker of an operation placed
# at its intensity there (the hierarchical roofline of Yang, Kurth & Williams, arXiv 2009.05257).
LEVEL = {"l2": ("--", "P", "L2"), "l3": ("-.", "8", "L3"), "sram": (":", "h", "SRAM")}
# Colours of devices overlaid on one figure, in the order given: the first three are none of
# the footprint curves' (projection blue, naive vermillion) nor the ideal mode's, so a device's
# lines do not read as an operation's; each device's reference lines also have a dash pattern
# of their own (DEVICE_DASHES).
DEVICE = tuple(OKABE_ITO[c] for c in ("black", "orange", "sky blue", "reddish purple",
                                      "bluish green", "blue"))
# Marker of each operation class when several devices colour the points.
MARKER = {"projection": "s", "attention.naive": "v", "attention.tiled": "D",
          "attention.tiled_fa2": "d", "attention.kernel": "p", "attention.ideal": "^", "prefill": "o",
          "decode": "*", "decode.naive": "X"}


# Dash patterns of overlaid devices' reference lines (ridges, memory limits): two devices whose
# lines nearly coincide still show both colours, alternating along the line.
# Every one has a dot, so that none reads as a plain dashed line ("does not fit in memory").
DEVICE_DASHES = ((0, (6, 2, 1, 2)), (3, (3, 1.5, 1, 1.5)), (0, (8, 2, 1, 2, 1, 2)),
                 (1, (4, 1, 1, 1, 1, 1, 1, 1)), (2, (10, 2, 1, 2)), (0, (2, 1, 1, 1)))


def device_color(i: int) -> str:
    """The colour of the i-th device overlaid (the palette repeats past six)."""
    return DEVICE[i % len(DEVICE)]


def device_dashes(i: int) -> tuple:
    """The dash pattern of the i-th device's reference lines (repeats past six)."""
    return DEVICE_DASHES[i % len(DEVICE_DASHES)]


DEVICE_MARKERS = ("o", "s", "^", "D", "v", "P")  # the i-th device's curves' second cue


def device_marker(i: int) -> str:
    """The marker of the i-th device's curves, beside its colour (repeats past six)."""
    return DEVICE_MARKERS[i % len(DEVICE_MARKERS)]


def nested(i: int, n: int, big: float, small: float) -> float:
    """A size for the i-th of n overlaid devices, from ``big`` (the first, drawn first) down
    to ``small`` (the last, drawn on top): markers that coincide show as concentric rings,
    lines that coincide as nested stripes."""
    return big if n <= 1 else big - (big - small) * i / (n - 1)


_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None},
             "png": {"Software": None}}


def headless() -> None:
    """Use the Agg backend (no display); the command line calls this before drawing."""
    import matplotlib

    matplotlib.use("Agg")


@contextmanager
def style() -> Iterator[None]:
    """The house rcParams, for drawing and for saving."""
    import matplotlib

    with matplotlib.rc_context(RC):
        yield


def figure(size: tuple[float, float] = SIZE) -> Figure:
    """A new Figure with constrained layout, outside pyplot (no global state, no GUI)."""
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained")


def width(size: str | float = "page") -> float:
    """A figure's printed width in inches: ``"column"`` (3.33) or ``"page"`` (7.0,
    :data:`WIDTHS`), or a number of inches from 3.25 to 20.

    >>> width("column"), width(5)
    (3.33, 5.0)
    """
    if isinstance(size, str):
        if size not in WIDTHS:
            raise InputError("size", f"must be one of {', '.join(WIDTHS)}, or a width in "
                             "inches", size)
        return WIDTHS[size]
    if isinstance(size, bool) or not isinstance(size, (int, float)) \
            or not WIDTH_RANGE[0] <= size <= WIDTH_RANGE[1]:
        raise InputError("width", f"must be from {WIDTH_RANGE[0]:g} to {WIDTH_RANGE[1]:g} "
                         "inches", size)
    return float(size)


def narrow(size: str | float) -> bool:
    """Whether a figure of this size stacks its panels and keeps its legends under the plot
    (narrower than :data:`NARROW` inches: a column)."""
    return width(size) < NARROW


def wrap(text: str, inches: float, points: float) -> str:
    """``text`` broken into lines that fit ``inches`` at ``points`` (a title on a narrow figure:
    matplotlib clips a line wider than the figure). An average glyph of DejaVu Sans is about
    0.55 of its size wide.

    >>> print(wrap("Prefill time: Llama-3-8B on H100-SXM (bf16, kernel attention)", 3.33, 8.5))
    Prefill time: Llama-3-8B on H100-SXM (bf16, kernel
    attention)
    """
    import textwrap

    chars = max(int(inches * 72 / (0.55 * points)), 20)
    return "\n".join(textwrap.wrap(text, chars, break_on_hyphens=False)) or text


def wrap_fitted(text: str, inches: float, points: float) -> str:
    """``text`` broken at spaces into lines each at most ``inches`` wide at ``points``, the
    widths measured on the font's glyphs (:class:`matplotlib.textpath.TextToPath`), not
    estimated as :func:`wrap` does: a title of capitals and digits ("A100-80GB-SXM, L4") is
    wider than the average glyph, and a line wider than the figure is clipped. A word wider
    than ``inches`` keeps a line of its own.

    >>> print(wrap_fitted("Attention: Gemma-2-9B on H100-SXM, A100-80GB-SXM, L4 (bf16)", 3.2,
    ...                   8.5))
    Attention: Gemma-2-9B on H100-SXM,
    A100-80GB-SXM, L4 (bf16)
    """
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    measure = TextToPath().get_text_width_height_descent
    prop = FontProperties(size=points)

    def fits(line: str) -> bool:
        return measure(line, prop, ismath=False)[0] <= inches * 72

    lines: list[str] = []
    for word in text.split(" "):
        if lines and fits(f"{lines[-1]} {word}"):
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "\n".join(lines)


def axes(ax: Axes | None) -> Axes:
    """``ax``, or the current Axes of pyplot when None (the seaborn convention)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.gca()


def formats() -> dict[str, str]:
    """File extensions matplotlib can write, with their descriptions; not PGF, which runs a
    TeX installation (``xelatex``) to lay out its text, where SVG and PDF need none."""
    from matplotlib.backend_bases import FigureCanvasBase

    return {ext: what for ext, what in FigureCanvasBase.get_supported_filetypes().items()
            if ext != "pgf"}


def check_output(path: str | Path, argument: str = "output") -> Path:
    """The output path, if matplotlib can write its extension and the file can be written
    (:func:`roofline.output.check_target`). A missing folder is created when the figure is
    written (as ``roofline report -o`` and ``roofline measure -o`` do)."""
    path = Path(path)
    valid = formats()
    if path.suffix.lower().lstrip(".") not in valid:
        raise InputError(argument, "the file's extension names the format; matplotlib writes "
                         f"{', '.join(sorted(valid))}", str(path))
    return check_target(path, "file", argument=argument)


def savefig(fig: Figure, path: str | Path, argument: str | None = "output",
            dpi: int | None = None, note: str | None = None) -> Path:
    """Write ``fig`` in the format of the extension, with fixed metadata (no dates, a fixed SVG
    hash salt) so that the same figure gives the same bytes; a raster format at ``dpi`` dots
    per inch (default: the house style's 150); ``note`` (where it came from,
    :func:`.data.metadata`) in the file's description (PNG and SVG) or subject (PDF). The
    figure is rendered in memory
    and written atomically (:func:`roofline.output.write_atomic`): a failure leaves no
    half-written file and no new folder. An error names ``argument`` (None: an ``OSError`` is
    left as it is, for a caller that writes into its own temporary folder and words its own)."""
    path = check_output(path, argument or "output")
    made: list[Path] = []
    try:
        data = render(fig, path, dpi, note)
        made = make_folders(path.parent, argument or "output")
        if argument is None:  # the caller's own temporary folder, and its own words for errors
            path.write_bytes(data)
        else:
            write_atomic(path, data, argument=argument)
    except BaseException as err:
        remove_folders(made)
        if isinstance(err, OSError) and argument is not None:
            raise InputError(argument, f"cannot write the file: {err.strerror or err}",
                             str(path)) from None
        raise
    return path


def render(fig: Figure, path: Path, dpi: int | None = None, note: str | None = None) -> bytes:
    """The bytes :func:`savefig` writes to ``path`` (its extension names the format), rendered
    in memory: a caller that writes several files writes them all or none."""
    ext = path.suffix.lower().lstrip(".")
    buffer = io.BytesIO()
    with style():
        fig.savefig(buffer, format=ext, metadata=_metadata(ext, note), dpi=dpi)
    return buffer.getvalue()


def _metadata(ext: str, note: str | None) -> dict[str, Any] | None:
    fixed = _METADATA.get(ext)
    key = {"png": "Description", "svg": "Description", "pdf": "Subject"}.get(ext)
    if note is None or key is None:
        return fixed
    return {**(fixed or {}), key: note}


def plain_ticks(axis: Any, unit: str = "") -> None:
    """The axis's major ticks as plain numbers with an SI prefix (2k, 32k tokens; 1 ms; 10 GB:
    matplotlib's ``EngFormatter``), its minor ticks unlabelled: no "10⁴" or "5.23e+03" for a
    reader to decode."""
    from matplotlib.ticker import EngFormatter, NullFormatter

    axis.set_major_formatter(EngFormatter(unit=unit, sep=" " if unit else ""))
    axis.set_minor_formatter(NullFormatter())


def short_log_ticks(axis: Any) -> None:
    """Major ticks a log axis too short for its decades to label (16 to 100 tokens: 20, 50,
    100), or, on one shorter still (16 to 17), its two ends: no axis left unlabelled."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, LogLocator

    low, high = sorted(axis.get_view_interval())
    inside = [t for t in LogLocator().tick_values(low, high) if low <= t <= high]
    if len(inside) >= 2:
        return
    locator = LogLocator(subs=(1.0, 2.0, 5.0))
    if len([t for t in locator.tick_values(low, high) if low <= t <= high]) < 2:
        locator = FixedLocator([float(np.ceil(low)), float(np.floor(high))])
    axis.set_major_locator(locator)


def tokens_label(t: float) -> str:
    """A token count for a label: 2048 → '2,048'.

    >>> tokens_label(2048), tokens_label(326.4)
    ('2,048', '326')
    """
    return f"{t:,.0f}"
