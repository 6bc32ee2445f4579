"""Work shared with one forked process: where a command's work falls into pieces that take a
second or more each (the closed forms of a crossover table solved by SymPy, the report's
figures drawn by matplotlib), a process forked from this one does every other piece meanwhile,
on a second core.

The forked process inherits this one's memory (what was derived, imported, or set up by a test),
so nothing but the pieces' results and the warnings they gave is sent back (pickled, through a
pipe); the warnings are given again here, in the pieces' order, as if every piece had run here.
Where it fails (an error, a result that cannot be sent, killed), its pieces are done here, so
that an error is raised here as it would be without it, with its own traceback. It ignores
Ctrl-C, which is the parent's to report in one line, and it never outlives the call: where the
parent stops, it is killed and waited for before the error goes on, so that nothing it would
write can land after the parent has cleaned up. A Ctrl-C that comes while the process is being
forked, or killed and waited for, is held back and delivered just after. Elsewhere than on
Linux, on one core, off the main thread, or for fewer than ``least`` pieces, every piece is done
here, in order.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["map_halves"]

Item = TypeVar("Item")
Caught = list[tuple[str, type, str, int]]  # a piece's warnings: text, category, file, line

_GIVEN: dict[Any, Any] = {}  # the registry of the warnings given again ("default": once each)


def map_halves(work: Callable[[Item], Any], items: Sequence[Item], least: int = 2) -> list[Any]:
    """``[work(item) for item in items]``, the odd-numbered items done by a forked process
    (interleaved: costly pieces tend to sit together) while this one does the others.

    >>> map_halves(lambda x: x * x, [1, 2, 3, 4, 5])
    [1, 4, 9, 16, 25]
    """
    if len(items) < least or sys.platform != "linux" or (os.cpu_count() or 1) < 2 \
            or not _signals_are_ours():
        return [work(item) for item in items]
    import pickle
    import signal

    mine, theirs = range(0, len(items), 2), range(1, len(items), 2)
    pid, received, finished = 0, None, False
    try:
        with _ctrl_c_held():
            read, write = os.pipe()
            try:
                pid = os.fork()
            except OSError:  # no process to be had (a limit): every piece here
                os.close(read)
                os.close(write)
                return [work(item) for item in items]
            if pid == 0:  # the forked process: its pieces, then what they gave, then out
                try:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                    os.close(read)
                    done = [_recorded(work, items[i]) for i in theirs]
                    with os.fdopen(write, "wb") as out:
                        pickle.dump(done, out)
                finally:
                    os._exit(0)  # nothing of the parent's (atexit, buffers) runs here
            os.close(write)
            received = os.fdopen(read, "rb")
        results = {i: _recorded(work, items[i]) for i in mine}
        data = received.read()
        finished = True
    finally:
        if received is not None:
            received.close()
        if pid:
            with _ctrl_c_held():
                if not finished:
                    os.kill(pid, signal.SIGKILL)  # nothing of its is wanted any more
                os.waitpid(pid, 0)
    try:
        results.update(zip(theirs, pickle.loads(data)))
    except Exception:  # noqa: BLE001 - it failed or was killed: its pieces are done here
        results.update((i, _recorded(work, items[i])) for i in theirs)
    out = []
    for i in range(len(items)):
        value, caught = results[i]
        _give(caught)
        out.append(value)
    return out


def _recorded(work: Callable[[Item], Any], item: Item) -> tuple[Any, Caught]:
    """``work(item)`` and the warnings it gave (under the filters in force), to give again;
    where it raises, they are given at once and the error goes on."""
    import warnings

    caught: list[Any] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            value = work(item)
    except BaseException:
        _give(_texts(caught))
        raise
    return value, _texts(caught)


def _texts(caught: list[Any]) -> Caught:
    return [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


def _give(caught: Caught) -> None:
    import warnings

    for text, category, filename, lineno in caught:
        warnings.warn_explicit(text, category, filename, lineno, registry=_GIVEN)


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Ctrl-C recorded, not raised, for the duration; then delivered as it would have been."""
    import signal

    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda *_: came.append(1))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if came:
            signal.raise_signal(signal.SIGINT)


def _signals_are_ours() -> bool:
    """Whether Ctrl-C can be held back here: on the main thread (only it receives signals),
    with a handler set from Python (``threading`` and ``signal`` are imported only where a
    fork is otherwise due)."""
    import signal
    import threading

    return threading.current_thread() is threading.main_thread() \
        and signal.getsignal(signal.SIGINT) is not None
