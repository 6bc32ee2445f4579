"""roofline.forked.map_halves: every other piece of work in a forked process, the results and
the warnings in order; where it fails or is killed, its pieces are done here (so an error is
raised here); it ignores Ctrl-C; on one core, or off the main thread, everything is done here."""

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


def test_an_error_is_raised_here_as_without_the_fork(monkeypatch):
    """Where a piece fails in the forked process, its pieces are done here: the error is this
    process's own (an error that pickle cannot rebuild, such as an InputError, included)."""
    from roofline.errors import InputError

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    here = os.getpid()

    def work(x):
        if x == 1:
            raise InputError("piece", "must not be 1", x)
        return x

    with pytest.raises(InputError, match=r"^piece: must not be 1 \(got 1\)$"):
        map_halves(work, [0, 1, 2, 3])
    # a failure of the forked process alone: done here instead
    assert map_halves(lambda x: x if os.getpid() == here else 1 / 0, [0, 1, 2, 3]) == [0, 1, 2, 3]


def test_warnings_given_here_in_order(monkeypatch):
    import warnings

    monkeypatch.setattr(os, "cpu_count", lambda: 2)

    def work(x):
        warnings.warn(f"piece {x}", UserWarning)
        return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert map_halves(work, [0, 1, 2, 3]) == [0, 1, 2, 3]
    assert [str(w.message) for w in caught] == ["piece 0", "piece 1", "piece 2", "piece 3"]


def test_the_first_error_in_order_after_the_earlier_warnings(monkeypatch):
    """Pieces 1 (done there) and 2 (done here) both fail: as in order, piece 0's warning is
    shown, then piece 1's error is raised; piece 2's is never reached."""
    import warnings

    monkeypatch.setattr(os, "cpu_count", lambda: 2)

    def work(x):
        warnings.warn(f"piece {x}", UserWarning)
        if x in (1, 2):
            raise ValueError(f"piece {x} failed")
        return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="^piece 1 failed$"):
            map_halves(work, [0, 1, 2, 3])
    assert [str(w.message) for w in caught] == ["piece 0", "piece 1"]


def test_a_warning_that_pickle_cannot_carry(monkeypatch):
    """A warning whose class pickle cannot rebuild (SymPy's deprecation warning takes keyword
    arguments only): the piece that gave it is done here, the warning shown as it is."""
    import warnings

    class Picky(UserWarning):
        def __init__(self, *, text):
            super().__init__(text)

    monkeypatch.setattr(os, "cpu_count", lambda: 2)

    def work(x):
        warnings.warn(Picky(text=f"piece {x}"))
        return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert map_halves(work, [0, 1, 2, 3]) == [0, 1, 2, 3]
    assert [str(w.message) for w in caught] == ["piece 0", "piece 1", "piece 2", "piece 3"]
    assert all(w.category is Picky for w in caught)


def test_no_fork_within_the_forked_process_or_beside_other_threads(monkeypatch):
    import threading

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    here = os.getpid()

    def nested(x):  # the processes that did a second call's pieces
        return len(set(map_halves(lambda y: os.getpid(), [1, 2, 3, 4])))

    assert map_halves(nested, [0, 1]) == [2, 1]  # here two; in the forked process, itself
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert map_halves(lambda x: os.getpid() == here, [1, 2, 3, 4]) == [True] * 4
    finally:
        stop.set()
        other.join()


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
