"""Helpers shared by the figures: settings as a list, titles, log axes, the outside legend."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import InputError
from ..evaluate import CrossoverValue, Setting, crossover_values

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["as_list", "title", "side_legend", "device_label", "crossovers"]


def as_list(settings: Setting | Sequence[Setting]) -> list[Setting]:
    """One setting or several (devices overlaid), as a non-empty list."""
    out = [settings] if isinstance(settings, Setting) else list(settings)
    if not out:
        raise InputError("--hardware", "needs at least one device")
    return out


def device_label(s: Setting) -> str:
    return s.hardware.name


def title(what: str, settings: list[Setting], attention: bool = True) -> str:
    """'<what>: <model> on <devices> (<dtype>, <mode> attention)'."""
    first = settings[0]
    devices = ", ".join(dict.fromkeys(s.hardware.name for s in settings))
    models = ", ".join(dict.fromkeys(s.model.name for s in settings))
    dtypes = ", ".join(dict.fromkeys(s.dtype for s in settings))
    parts = [dtypes]
    if first.precision["weights"] != first.dtype:
        parts.append(f"{first.precision['weights']} weights")
    if attention:
        parts.append(f"{first.attention} attention")
    if first.batch != 1:
        parts.append(f"batch {first.batch}")
    return f"{what}: {models} on {devices} ({', '.join(parts)})"


def side_legend(ax: Axes, **kwargs) -> None:
    """A legend outside the plotting area, to the right: it covers no data."""
    handles, labels = kwargs.pop("handles", None), kwargs.pop("labels", None)
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              **kwargs)


@lru_cache(maxsize=32)
def crossovers(s: Setting) -> dict[str, CrossoverValue]:
    """:func:`roofline.evaluate.crossover_values`, computed once per setting for all figures."""
    return crossover_values(s)
