"""roofline.forked.map_halves: every other piece of work in a forked process, the results in
order; what it raises is raised here; where it is killed, its pieces are done here; it ignores
Ctrl-C; on one core, or off the main thread, everything is done here."""

import os
import signal
import sys

import pytest

from roofline.forked import map_halves

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the helper forks on Linux only")


def test_results_in_order_and_half_of_them_done_elsewhere(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    here = os.getpid()
    done = map_halves(lambda x: (x * x, os.getpid() == here), list(range(7)))
    assert [v for v, _ in done] == [0, 1, 4, 9, 16, 25, 36]
    assert [mine for _, mine in done] == [True, False] * 3 + [True]  # every other, interleaved


def test_one_core_or_few_items_all_here(monkeypatch):
    here = os.getpid()
    assert map_halves(lambda x: os.getpid() == here, [1, 2, 3], least=4) == [True] * 3
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert map_halves(lambda x: os.getpid() == here, [1, 2, 3, 4]) == [True] * 4


def test_what_the_forked_process_raises_is_raised_here(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    here = os.getpid()

    def work(x):
        if os.getpid() != here:
            raise ValueError(f"piece {x} failed")
        return x

    with pytest.raises(ValueError, match="^piece 1 failed$"):
        map_halves(work, [0, 1, 2, 3])


@pytest.mark.parametrize("sent, here_pattern", [
    (signal.SIGKILL, [True, True, True, True]),  # killed: its pieces are done here
    (signal.SIGINT, [True, False, True, False]),  # Ctrl-C: ignored, it goes on
])
def test_a_signal_to_the_forked_process(monkeypatch, sent, here_pattern):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    here = os.getpid()

    def work(x):
        if os.getpid() != here:
            os.kill(os.getpid(), sent)
        return 10 * x, os.getpid() == here

    assert map_halves(work, [1, 2, 3, 4]) == list(zip([10, 20, 30, 40], here_pattern))


def test_off_the_main_thread_all_here(monkeypatch):
    import threading

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    here, got = os.getpid(), []
    thread = threading.Thread(target=lambda: got.extend(
        map_halves(lambda x: os.getpid() == here, [1, 2, 3, 4])))
    thread.start()
    thread.join()
    assert got == [True] * 4
