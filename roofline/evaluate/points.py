"""The prefill at many prompt lengths: one pass per operation over every length, the numbers
held as columns, each point's record made when it is read.

Every operation's FLOPs and bytes (and the bytes each further memory level serves) are
evaluated at all the prompt lengths at once (:meth:`.compiled.CompiledOp.flops_each`), its
time is max(F/P, Q/β, Q_level/β_level, ...) column by column (the one roofline time of
:func:`.phases.roofline_time` and :func:`.phases.level_time`, written out over columns), and
the prefill's totals are sums across the operations' columns. The records a user reads, a
:class:`.phases.PrefillPoint` and the :class:`.phases.OpResult` of each operation, are
built from those columns by :func:`.phases.timed` when a point is read: a caller that wants
the totals at 10⁵ lengths does not pay for 10⁶ records.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import repeat
from typing import Any, overload

from ..errors import InputError
from .compiled import CompiledOp
from .links import LEVELS as LINK_LEVELS
from .phases import (OpResult, PrefillPoint, check_prompts, exposed_fraction, operations,
                     timed)
from .setting import Setting

__all__ = ["prefill", "PrefillPoints", "attention_level"]

_INF = float("inf")
_COMPUTE, _MEMORY = "compute", "memory"
_new_result = partial(tuple.__new__, OpResult)  # an OpResult from a tuple of all its fields


class _Column:
    """One operation at every prompt length: its FLOPs, HBM bytes, the bytes each further
    level serves (``served``: name, bandwidth, column) and its time."""

    __slots__ = ("op", "flops", "bytes", "served", "time")

    def __init__(self, op: CompiledOp, tokens: list[int], peak: float, bw: float):
        self.op = op
        self.flops = _scaled(op.flops_each(tokens), op.count)
        self.bytes = _scaled(op.bytes_each(tokens), op.count)
        self.served = [(name, b, _scaled(q_each(tokens), op.count))
                       for (name, b), q_each in zip(op.level_names, op.levels_each)]
        # max(F/P, Q/β, Q_level/β_level, ...): divisions as timed() makes them, so that the
        # record read later has this very time
        self.time = list(map(max, map(operator.truediv, self.flops, repeat(peak)),
                             map(operator.truediv, self.bytes, repeat(bw)),
                             *(map(operator.truediv, s, repeat(b)) for _, b, s in self.served)))

    def result(self, i: int, peak: float, bw: float) -> OpResult:
        """The record at the ``i``-th length (:func:`.phases.timed`)."""
        r = timed(self.op, self.flops[i], self.bytes[i],
                  [(name, b, s[i]) for name, b, s in self.served], peak, bw)
        t = self.time[i]  # a communication's time cut to its exposed share: that share
        return r if r.time_s == t else r._replace(time_s=t)

    def results(self, peak: float, bw: float) -> list[OpResult]:
        """The records at every length: those of an operation timed at HBM alone built column
        by column (what :func:`.phases.timed` gives, without a Python call per record)."""
        if self.served:
            return [self.result(i, peak, bw) for i in range(len(self.time))]
        op = self.op
        compute = list(map(operator.ge, map(operator.truediv, self.flops, repeat(peak)),
                           map(operator.truediv, self.bytes, repeat(bw))))
        return list(map(_new_result, zip(
            repeat(op.name), repeat(op.kind), repeat(op.count), self.flops, self.bytes,
            [f / q if q else _INF for f, q in zip(self.flops, self.bytes)], self.time,
            [_COMPUTE if c else _MEMORY for c in compute],
            [_COMPUTE if c else "hbm" for c in compute], repeat(()))))


def _scaled(values: list[Any], count: int) -> list[float]:
    """float(v) · count for each value (a C loop: no Python call per value)."""
    return list(map(operator.mul, map(float, values), repeat(count)))


class PrefillPoints(Sequence[PrefillPoint]):
    """The prefill at each prompt length (a sequence of :class:`.phases.PrefillPoint`, in the
    order asked), held as columns: ``prompt_tokens``, ``time_s``, ``flops``, ``bytes``,
    ``intensity`` and ``bound`` are lists over the prompt lengths, the fields of the points;
    a point is built when read, its operations with it."""

    def __init__(self, setting: Setting, tokens: list[int], columns: list[_Column]):
        self._setting, self.prompt_tokens, self._columns = setting, tokens, columns
        self._peak, self._bw = setting.peak, setting.bandwidth
        n = len(tokens)
        self.time_s = list(map(sum, zip(*(c.time for c in columns)))) if columns else [0.0] * n
        self.flops = list(map(sum, zip(*(c.flops for c in columns)))) if columns else [0.0] * n
        self.bytes = list(map(sum, zip(*(c.bytes for c in columns)))) if columns else [0.0] * n
        # per further level, what it serves beyond the HBM bytes (operations whose traffic
        # there is derived; any other moves its HBM bytes through every level)
        self._beyond: dict[str, list[float]] = {}
        for c in columns:
            for level, _, served in c.served:
                if level not in LINK_LEVELS:  # a link's bytes are not memory traffic
                    extra = self._beyond.setdefault(level, [0.0] * n)
                    extra[:] = map(operator.add, extra, map(operator.sub, served, c.bytes))

    @property
    def intensity(self) -> list[float]:
        return list(map(operator.truediv, self.flops, self.bytes))

    @property
    def bound(self) -> list[str]:
        return [self._bound(i) for i in range(len(self))]

    def _bound(self, i: int) -> str:
        """"compute" where the prefill's FLOPs take longer than its traffic at the slowest
        memory level at the ``i``-th length, else "memory"."""
        q, bw, bandwidths = self.bytes[i], self._bw, self._setting.level_bandwidths
        t_memory = max([q / bw, *((q + extra[i]) / bandwidths[level]
                                  for level, extra in self._beyond.items())])
        return "compute" if self.flops[i] / self._peak >= t_memory else "memory"

    def __len__(self) -> int:
        return len(self.prompt_tokens)

    @overload
    def __getitem__(self, i: int) -> PrefillPoint: ...

    @overload
    def __getitem__(self, i: slice) -> list[PrefillPoint]: ...

    def __getitem__(self, i: int | slice) -> PrefillPoint | list[PrefillPoint]:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        i = range(len(self))[i]  # a negative index counted from the end; IndexError past it
        f, q = self.flops[i], self.bytes[i]
        return PrefillPoint(self.prompt_tokens[i], self.time_s[i], f, q, f / q, self._bound(i),
                            [c.result(i, self._peak, self._bw) for c in self._columns])

    def __iter__(self) -> Iterator[PrefillPoint]:
        """Every point, its operations' records built column by column."""
        results = zip(*(c.results(self._peak, self._bw) for c in self._columns))
        return map(PrefillPoint, self.prompt_tokens, self.time_s, self.flops, self.bytes,
                   self.intensity, self.bound, map(list, results))

    def __eq__(self, other: object) -> bool:  # as the list of its points
        if isinstance(other, PrefillPoints | list):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple[type, tuple[list[PrefillPoint]]]:
        """Pickled and copied as the list of its points (the setting and its compiled forms
        stay behind)."""
        return list, (list(self),)


def prefill(setting: Setting, prompts: Sequence[int]) -> PrefillPoints:
    """Time, FLOPs, bytes, intensity and bound of the prefill at each prompt length, with the
    per-operation breakdown: one pass per operation over every prompt length (the API's hot
    path), each point's records built when read."""
    peak, bw = setting.peak, setting.bandwidth
    tokens = check_prompts(prompts)
    if setting.cp > 1 and min(tokens) < 2 * setting.cp:  # the ring's 2·N_cp chunks
        raise InputError("prompt", f"must be at least 2·cp = {2 * setting.cp} tokens under "
                         f"context parallelism over {setting.cp} (each device holds two chunks "
                         "of the prompt)", min(tokens))
    columns = [_Column(op, tokens, peak, bw) for op in operations(setting)]
    if setting.cp > 1:  # ring attention: the K/V passes overlap the attention
        _overlap(columns, within=("attention",), hidden="cp.")
    if setting.overlap:
        _overlap(columns)
    return PrefillPoints(setting, tokens, columns)


_LEVEL_ORDER = ("compute", "hbm", "l2", "l3", "sram")  # which one is named where several bind


def attention_level(setting: Setting, tokens: int) -> str:
    """What binds the prefill's attention at ``tokens``: "compute", "hbm", "l2", "l3" or "sram"
    (the last of these that binds one of its operations)."""
    (point,) = prefill(setting, [tokens])
    return max((o.level for o in point.operations if o.kind == "attention"),
               key=_LEVEL_ORDER.index)


def _overlap(columns: list[_Column], within: tuple[str, ...] | None = None,
             hidden: str = "") -> None:
    """Each communication operation's time (those named ``hidden``…) cut to its exposed share
    under the compute (of the kinds ``within``; all by default), in place."""
    comm = [c for c in columns if c.op.kind == "communication" and c.op.name.startswith(hidden)]
    under = [c for c in columns if c.op.kind != "communication"
             and (within is None or c.op.kind in within)]
    for i in range(len(columns[0].time) if comm else 0):
        t = sum(c.time[i] for c in comm)
        share = exposed_fraction(sum(c.time[i] for c in under), t)
        for c in comm:
            c.time[i] *= share
