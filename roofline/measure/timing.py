"""Timing: repeated wall-clock runs, their minimum, median and maximum, and a progress bar.

Every measurement of :mod:`roofline.measure` is a kernel run after a warm-up, repeatedly; the
median is its value, the minimum and maximum its range. No dependency beyond the standard library.
"""

from __future__ import annotations

import math
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Stats", "summarize", "time_call", "Timer", "Progress"]

Timer = Callable[[Callable[[], Any], int], list[float]]  # (kernel, repeats) → seconds per run


@dataclass(frozen=True)
class Stats:
    """Minimum, median and maximum of repeated timings, in seconds."""

    min: float
    median: float
    max: float
    runs: int

    def rate(self, work: float) -> Stats:
        """``work`` per second: the median rate, the slowest rate as ``min``, fastest as ``max``.

        >>> Stats(1.0, 2.0, 4.0, 3).rate(8.0)
        Stats(min=2.0, median=4.0, max=8.0, runs=3)
        """
        return Stats(work / self.max, work / self.median, work / self.min, self.runs)


def summarize(times: Sequence[float]) -> Stats:
    """Min, median, max of ``times`` (at least one, each positive and finite).

    >>> summarize([3.0, 1.0, 2.0])
    Stats(min=1.0, median=2.0, max=3.0, runs=3)
    """
    if not times or not all(math.isfinite(t) and t > 0 for t in times):
        raise ValueError(f"timings must be positive and finite, got {list(times)!r}")
    return Stats(min(times), statistics.median(times), max(times), len(times))


def time_call(fn: Callable[[], Any], repeats: int, warmup: int = 1,
              budget_s: float | None = None) -> list[float]:
    """Wall times of ``fn()`` (``time.perf_counter``) after ``warmup`` untimed calls.

    With ``budget_s``, stops early once that much time was spent, but keeps at least three runs
    (or ``repeats``, if fewer)."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    spent = 0.0
    for i in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        spent += times[-1]
        if budget_s is not None and spent > budget_s and i + 1 >= min(3, repeats):
            break
    return times


class Progress:
    """A text progress bar on stderr: ``[#####.....]  50%  triad 3/7``. No dependency.

    Drawn only on a terminal (``tty``: default ``stream.isatty()``); redirected to a file or a
    pipe it writes nothing, so a log does not get one very long line of carriage returns."""

    def __init__(self, total: int, enabled: bool = True, width: int = 30, stream: Any = None,
                 tty: bool | None = None):
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.enabled = enabled and tty
        self._lock = threading.Lock()

    def step(self, label: str = "", n: int = 1) -> None:
        with self._lock:
            self.done = min(self.done + n, self.total)
            if self.enabled:
                filled = round(self.width * self.done / self.total)
                bar = "#" * filled + "." * (self.width - filled)
                pct = 100 * self.done / self.total
                self.stream.write(f"\r[{bar}] {pct:3.0f}%  {label:<40.40}")
                self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
