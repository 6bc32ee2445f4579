"""An operation's derived forms with a setting's numbers folded in, compiled when first used:
as functions of one point or of many (:mod:`.compiler`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from . import arith, compiler

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CompiledOp", "compile_ops"]


@dataclass(frozen=True, eq=False)
class CompiledOp:
    """An operation with the setting's numbers folded in: ``flops(x)``, ``bytes(x)`` of its
    free variable (the prompt length, or the decode context), ``count`` times; ``levels``:
    (name, bandwidth, bytes(x)) of each further memory level whose traffic is derived and whose
    bandwidth the device gives; ``flops_each(xs)``, ``bytes_each(xs)``, ``levels_each``: the
    same at many points at once (:meth:`.compiler.Folding.each`, one free variable). Each is
    compiled when first used: a caller that evaluates one way does not pay for the other."""

    name: str
    kind: str
    count: int
    form: Mapping[str, Any]  # the operation's derived trees: flops, bytes, levels
    numbers: Mapping[str, Any] = field(repr=False)
    free: tuple[str, ...] = ("T",)
    array: bool = False
    bandwidths: Mapping[str, float] = field(default_factory=dict, repr=False)
    # the folding of the operations compiled together (:func:`compile_ops`): a subtree they
    # share is folded once; None: one of its own
    folding: compiler.Folding | None = field(default=None, repr=False, compare=False)

    @cached_property
    def _folded(self) -> compiler.Folding:
        return self.folding or compiler.Folding(self.numbers, self.free)

    def _one(self, expr: arith.Tree) -> Callable[..., Any]:
        return self._folded.one(expr, self.array)

    def _each(self, expr: arith.Tree) -> Callable[[Sequence[Any]], list[Any]]:
        return self._folded.each(expr)

    def _level_forms(self) -> list[tuple[str, arith.Tree]]:
        return [(level, q) for level, q in self.form.get("levels", {}).items()
                if level in self.bandwidths]

    @cached_property
    def flops(self) -> Callable[..., Any]:
        return self._one(self.form["flops"])

    @cached_property
    def bytes(self) -> Callable[..., Any]:
        return self._one(self.form["bytes"])

    @cached_property
    def levels(self) -> tuple[tuple[str, float, Callable[..., Any]], ...]:
        return tuple((level, self.bandwidths[level], self._one(q))
                     for level, q in self._level_forms())

    @cached_property
    def flops_each(self) -> Callable[[Sequence[Any]], list[Any]]:
        return self._each(self.form["flops"])

    @cached_property
    def bytes_each(self) -> Callable[[Sequence[Any]], list[Any]]:
        return self._each(self.form["bytes"])

    @cached_property
    def levels_each(self) -> tuple[Callable[[Sequence[Any]], list[Any]], ...]:
        return tuple(self._each(q) for _, q in self._level_forms())

    @property
    def level_names(self) -> tuple[tuple[str, float], ...]:
        """(name, bandwidth) of each further level timed (without compiling its bytes)."""
        return tuple((level, self.bandwidths[level]) for level, _ in self._level_forms())


def compile_ops(ops: list[dict[str, Any]], numbers: dict[str, Any], free: tuple[str, ...],
                array: bool, bandwidths: dict[str, float]) -> list[CompiledOp]:
    """The derived operations ``ops`` with ``numbers`` folded in, but those that occur zero
    times (one pipeline stage sends nothing)."""
    counted = [(op, int(arith.value(op["count"], numbers))) for op in ops]
    folding = compiler.Folding(numbers, free)
    return [CompiledOp(op["name"], op["kind"], count, op, numbers, free, array, bandwidths,
                       folding)
            for op, count in counted if count != 0]  # pp.send on one stage: none
