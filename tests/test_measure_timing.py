"""roofline.measure.timing: statistics of repeated timings, the timer, the progress bar."""

from __future__ import annotations

import io
import math

import pytest

from roofline.measure import timing


def test_summarize_and_rate() -> None:
    s = timing.summarize([0.4, 0.1, 0.2, 0.3])
    assert (s.min, s.median, s.max, s.runs) == (0.1, 0.25, 0.4, 4)
    r = s.rate(2.0)  # 2 units of work: slowest run 5/s, median 8/s, fastest 20/s
    assert (r.min, r.median, r.max) == pytest.approx((5.0, 8.0, 20.0))


@pytest.mark.parametrize("bad", [[], [0.0], [1.0, -1.0], [math.inf]])
def test_summarize_rejects(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="timings must be positive and finite"):
        timing.summarize(bad)


def test_time_call_counts_warmup_and_budget() -> None:
    calls = []
    times = timing.time_call(lambda: calls.append(1), repeats=4, warmup=2)
    assert len(calls) == 6 and len(times) == 4 and all(t >= 0 for t in times)
    calls.clear()
    times = timing.time_call(lambda: calls.append(1), repeats=10, warmup=0, budget_s=0.0)
    assert len(times) == 3  # the budget is spent at once, but three runs are kept


def test_progress_bar() -> None:
    out = io.StringIO()
    bar = timing.Progress(4, stream=out, width=8, tty=True)
    bar.step("one")
    bar.step("two", n=3)
    bar.close()
    text = out.getvalue()
    assert "[##......]  25%  one" in text and "[########] 100%  two" in text
    assert text.endswith("\n")
    silent = io.StringIO()
    timing.Progress(2, enabled=False, stream=silent, tty=True).step("x")
    assert silent.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal() -> None:
    redirected = io.StringIO()  # a file or a pipe: isatty() is False
    bar = timing.Progress(2, stream=redirected)
    bar.step("x", n=2)
    bar.close()
    assert redirected.getvalue() == "" and not bar.enabled
    terminal = _Terminal()
    bar = timing.Progress(2, stream=terminal, width=4)
    bar.step("x", n=2)
    bar.close()
    assert terminal.getvalue() == "\r[####] 100%  x" + " " * 39 + "\n"
