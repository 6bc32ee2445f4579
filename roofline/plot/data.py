"""What a figure draws, as data, and where it comes from: ``roofline plot ... --data FILE``.

Every series is read back from the figure itself (each labelled line, each labelled set of
points, in each panel), so the file holds exactly what was drawn, whatever the figure kind. The
provenance (the command, the package version, the SHA-256 of every device, model and network
file used) goes into the data file and into the figure's own metadata (PNG text, PDF subject,
SVG description), so that a figure can be regenerated and checked.

Each series (in CSV, one row a point) has its panel (number, title, axis labels), its ``label``
(its legend entry, else its id), ``coordinates``, ``x`` and ``y`` (empty, or JSON null, where the
curve has a gap: a stretch drawn in another style), its ``id`` (the artist's ``gid``, also in an
SVG's ``id``) and ``fits``: ``false`` for a stretch drawn pale because it does not fit in the
device's memory (an id with a ``no-fit`` part: the time figure's, whose values are written as
the others'), ``true`` for the stretch of the same curve that fits (an id with a ``fits``
part), and empty (JSON null) for a series not split by memory (the full-colour stretches of
the time figure's operation classes and collectives, every other figure's series). The time
figure's ids are ``time:DEVICE:KIND:fits:BOUND`` and ``time:DEVICE:KIND:no-fit:BOUND`` (BOUND
``compute``: drawn solid, ``memory``: dashed) for the whole prefill (KIND ``total``: the
weights, the KV cache and the live activations in memory) and naive attention (its
scores); every other operation class, and the collectives (``time:DEVICE:communication``),
turn pale over the whole prefill's stretch that does not fit (``time:DEVICE:KIND:no-fit:BOUND``,
``time:DEVICE:communication:no-fit``), so that a curve can be drawn again whole, in its styles. A line with no point drawn (a stretch of a curve that
lies wholly in another style) is left out.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..output import check_target, write_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..evaluate import Setting

__all__ = ["SUFFIXES", "check_data", "provenance", "series", "write_data", "metadata"]

SUFFIXES = (".csv", ".json")


def check_data(path: str | Path) -> Path:
    """The data file's path, a ``.csv`` or ``.json`` that can be written (before any work)."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InputError("data", "must name a .csv or .json file", str(path))
    return check_target(path, "file", argument="data")


def provenance(argv: Sequence[str], settings: Sequence[Setting]) -> dict[str, Any]:
    """The command, the package version and the SHA-256 of every file the settings read."""
    from importlib.metadata import PackageNotFoundError, version

    files: dict[str, str] = {}
    for s in settings:
        for spec in (s.hardware, s.model, s.network):
            path = getattr(spec, "path", None)
            if path is not None and Path(path).is_file():
                files[str(path)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    try:
        installed = version("roofline")
    except PackageNotFoundError:  # a source checkout that was never installed
        installed = "(not installed)"
    return {"command": shlex.join(["roofline", *argv]), "version": installed,
            "sha256": dict(sorted(files.items()))}


def series(fig: Figure) -> list[dict[str, Any]]:
    """Every labelled line and set of points of every panel: its panel (number, title, axis
    labels), label, coordinates, id and whether it fits in memory, as drawn (a curve drawn in
    several styles, such as compute-bound and memory-bound stretches, is one series per style;
    ``coordinates`` says ``"data"``, ``"x"`` for a vertical marker whose y runs over the panel's
    height, or ``"outline"`` for a shaded area's boundary, in data coordinates; ``fits``: see
    the module's docstring). A line none of whose points is drawn is left out."""
    from matplotlib.collections import PathCollection

    out = []
    for n, ax in enumerate(fig.axes):
        panel = {"panel": n, "title": ax.get_title(), "x_label": ax.get_xlabel(),
                 "y_label": ax.get_ylabel()}
        for line in ax.get_lines():
            label = _label(line)
            xs, ys = _floats(line.get_xdata()), _floats(line.get_ydata())
            if label and any(x is not None and y is not None for x, y in zip(xs, ys)):
                data = line.get_transform() == ax.transData
                out.append({**panel, "label": label, "coordinates": "data" if data else "x",
                            "x": xs, "y": ys, **_id(line)})
        for shape in ax.collections:
            label = _label(shape)
            if not label:
                continue
            if isinstance(shape, PathCollection):  # points (a scatter)
                xy, coordinates = shape.get_offsets(), "data"
            else:  # an area (fill_between): its outline
                paths = shape.get_paths()
                xy, coordinates = (paths[0].vertices if paths else []), "outline"
            if len(xy):
                out.append({**panel, "label": label, "coordinates": coordinates,
                            "x": _floats(xy[:, 0]), "y": _floats(xy[:, 1]), **_id(shape)})
    return out


def _id(artist: Any) -> dict[str, Any]:
    """The artist's id (``gid``, or empty) and whether it fits in memory: False for an id
    with a ``no-fit`` part, True for one with a ``fits`` part, else None (not said)."""
    gid = artist.get_gid() or ""
    parts = gid.split(":")
    return {"id": gid, "fits": False if "no-fit" in parts else True if "fits" in parts
            else None}


def _label(artist: Any) -> str:
    """The artist's legend label, else its id (``gid``); empty for an unlabelled artist."""
    label = artist.get_label() or ""
    if label.startswith("_"):  # matplotlib's "no label" (_child0, _nolegend_)
        label = ""
    return label or artist.get_gid() or ""


def _floats(values: Any) -> list[float | None]:
    import numpy as np

    array = np.ma.filled(np.ma.asarray(values, dtype=float), np.nan).ravel()
    return [float(v) if np.isfinite(v) else None for v in array]


def write_data(path: Path, fig: Figure, origin: dict[str, Any]) -> Path:
    """:func:`data_text` written to ``path``."""
    return write_atomic(path, data_text(path, fig, origin), argument="data")


def data_text(path: Path, fig: Figure, origin: dict[str, Any]) -> str:
    """The figure's series and provenance as JSON (``path`` ending in ``.json``), or as CSV
    (one row a point: panel, label, x, y, id, fits; the provenance in ``#`` comment lines
    first)."""
    drawn = series(fig)
    if path.suffix.lower() == ".json":
        return json.dumps({"provenance": origin, "series": drawn}, indent=1,
                          allow_nan=False) + "\n"
    import csv
    import io

    buffer = io.StringIO()
    for key in ("command", "version"):
        buffer.write(f"# {key}: {origin[key]}\n")
    for file, digest in origin["sha256"].items():
        buffer.write(f"# sha256 {digest} {file}\n")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["panel", "title", "x_label", "y_label", "label", "coordinates", "x", "y",
                     "id", "fits"])
    for s in drawn:
        fits = "" if s["fits"] is None else str(s["fits"]).lower()
        for x, y in zip(s["x"], s["y"]):
            writer.writerow([s["panel"], s["title"], s["x_label"], s["y_label"], s["label"],
                             s["coordinates"], "" if x is None else repr(x),
                             "" if y is None else repr(y), s["id"], fits])
    return buffer.getvalue()


def metadata(origin: dict[str, Any]) -> str:
    """The provenance as one line of text for the figure file's metadata."""
    files = "; ".join(f"{Path(f).name} sha256 {d}" for f, d in origin["sha256"].items())
    return f"{origin['command']} (roofline {origin['version']}; {files})"
