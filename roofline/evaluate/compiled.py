"""Generated functions with a setting's numbers bound: functions of the free symbols alone.

:func:`bind` gives a derived form (a function that :mod:`roofline.codegen` wrote, or a number)
as a function of its free symbols (the prompt length T; a decode step's context and T), every
other symbol from the setting's numbers; it takes numbers or numpy arrays. A
:class:`CompiledOp` is one operation so bound.

>>> from roofline.codegen.runtime import Max
>>> def flops(T, a, b):
...     return Max(a * T, b) + 1
>>> f = bind(flops, {"a": 2, "b": 5}, ("T",))
>>> f(1), f(4), each(f, [1, 4])
(6, 9, [6, 9])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..codegen import call, names

__all__ = ["CompiledOp", "compile_ops", "bind", "each"]


def bind(form: Callable[..., Any] | int | float, numbers: Mapping[str, Any],
         free: Sequence[str] = ()) -> Callable[..., Any]:
    """``form`` as a function of the ``free`` symbols (positional, in that order), every other
    symbol's value from ``numbers``; a symbol in neither is a KeyError, raised now."""
    if not callable(form):
        return lambda *xs: form
    args = names(form)
    slots = [free.index(n) if n in free else None for n in args]
    fixed = [None if n in free else numbers[n] for n in args]
    used = [s for s in slots if s is not None]
    if not used:
        value = form(*fixed)
        return lambda *xs: value
    if len(used) == 1 and len(free) == 1:
        i = slots.index(0)
        before, after = tuple(fixed[:i]), tuple(fixed[i + 1:])
        return lambda x: form(*before, x, *after)
    return lambda *xs: form(*[v if s is None else xs[s] for s, v in zip(slots, fixed)])


def each(f: Callable[[Any], Any], points: Sequence[Any]) -> list[Any]:
    """``f`` at each of ``points`` (a function of one free symbol, from :func:`bind`)."""
    return list(map(f, points))


@dataclass(frozen=True, eq=False)
class CompiledOp:
    """An operation with the setting's numbers bound: ``flops(x)``, ``bytes(x)`` of its free
    symbols (the prompt length, or the decode context), ``count`` times; ``levels``: (name,
    bandwidth, bytes(x)) of each further memory level whose traffic is derived and whose
    bandwidth the device gives; ``flops_each(xs)``, ``bytes_each(xs)``, ``levels_each``: the
    same at many points of one free symbol."""

    name: str
    kind: str
    count: int | float  # L layers; a stage's mean share L/N_pp under a chunked pipeline
    form: Mapping[str, Any]  # the operation's generated functions: flops, bytes, levels
    numbers: Mapping[str, Any] = field(repr=False)
    free: tuple[str, ...] = ("T",)
    bandwidths: Mapping[str, float] = field(default_factory=dict, repr=False)

    def _bound(self, form: Any) -> Callable[..., Any]:
        return bind(form, self.numbers, self.free)

    def _level_forms(self) -> list[tuple[str, Any]]:
        return [(level, q) for level, q in self.form.get("levels", {}).items()
                if level in self.bandwidths]

    @cached_property
    def flops(self) -> Callable[..., Any]:
        return self._bound(self.form["flops"])

    @cached_property
    def bytes(self) -> Callable[..., Any]:
        return self._bound(self.form["bytes"])

    @cached_property
    def shape(self) -> Callable[..., Any]:
        """The fraction of the peak its kernel's whole tiles and waves let it use (the
        estimate's: :mod:`.estimate`)."""
        return self._bound(self.form.get("shape", 1))

    @cached_property
    def levels(self) -> tuple[tuple[str, float, Callable[..., Any]], ...]:
        return tuple((level, self.bandwidths[level], self._bound(q))
                     for level, q in self._level_forms())

    def flops_each(self, points: Sequence[Any]) -> list[Any]:
        return each(self.flops, points)

    def bytes_each(self, points: Sequence[Any]) -> list[Any]:
        return each(self.bytes, points)

    @property
    def levels_each(self) -> tuple[Callable[[Sequence[Any]], list[Any]], ...]:
        return tuple((lambda points, q=q: each(q, points)) for _, _, q in self.levels)

    @property
    def level_names(self) -> tuple[tuple[str, float], ...]:
        """(name, bandwidth) of each further level timed."""
        return tuple((level, self.bandwidths[level]) for level, _ in self._level_forms())


def _count(value: float) -> int | float:
    """An operation's count as a number: an integer where it is one (L layers), else the
    fraction a stage's mean share gives (L/N_pp layers, :func:`roofline.derive.pipeline.
    stage_share`)."""
    return int(value) if float(value).is_integer() else float(value)


def compile_ops(ops: list[dict[str, Any]], numbers: dict[str, Any], free: tuple[str, ...],
                bandwidths: dict[str, float]) -> list[CompiledOp]:
    """The derived operations ``ops`` with ``numbers`` bound, but those that occur zero times
    (one pipeline stage sends nothing)."""
    counted = [(op, _count(call(op["count"], numbers))) for op in ops]
    return [CompiledOp(op["name"], op["kind"], count, op, numbers, free, bandwidths)
            for op, count in counted if count != 0]  # pp.send on one stage: none
