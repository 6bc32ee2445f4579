"""Work shared with one forked process: where a command's work falls into pieces that take a
second or more each (the closed forms of a crossover table solved by SymPy, the report's
figures drawn by matplotlib), a process forked from this one does every other piece meanwhile,
on a second core.

The forked process inherits this one's memory (what was derived, imported, or set up by a test),
so nothing but the pieces' results is sent between the two (pickled, through a pipe). It ignores
Ctrl-C, which is the parent's to report in one line, and it never outlives the call: where the
parent stops (an error, Ctrl-C), it is killed and waited for before the error goes on, so that
nothing it would write can land after the parent has cleaned up. Where it raises, the parent
raises the same; where it dies (killed), the parent does its pieces itself. Elsewhere than on
Linux, on one core, off the main thread, or for fewer than ``least`` pieces, every piece is done
here, in order.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["map_halves"]

Item = TypeVar("Item")


def map_halves(work: Callable[[Item], Any], items: Sequence[Item], least: int = 2) -> list[Any]:
    """``[work(item) for item in items]``, the odd-numbered items done by a forked process
    (interleaved: costly pieces tend to sit together) while this one does the others.

    >>> map_halves(lambda x: x * x, [1, 2, 3, 4, 5])
    [1, 4, 9, 16, 25]
    """
    if len(items) < least or sys.platform != "linux" or (os.cpu_count() or 1) < 2 \
            or not _on_the_main_thread():
        return [work(item) for item in items]
    import pickle
    import signal

    theirs = range(1, len(items), 2)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the forked process: its pieces, then their results (or its error), then out
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.close(read)
            try:
                message: tuple[str, Any] = ("done", [work(items[i]) for i in theirs])
            except BaseException as err:  # noqa: BLE001 - the parent raises it
                message = ("raised", err)
            with os.fdopen(write, "wb") as out:
                pickle.dump(message, out)
        finally:
            os._exit(0)  # no cleanup of the parent's (atexit, buffers) runs here
    os.close(write)
    received = os.fdopen(read, "rb")
    try:
        results = {i: work(items[i]) for i in range(0, len(items), 2)}
        data = received.read()
    except BaseException:
        os.kill(pid, signal.SIGKILL)  # nothing of its is wanted any more
        raise
    finally:
        received.close()
        os.waitpid(pid, 0)
    try:
        status, got = pickle.loads(data)
    except (EOFError, pickle.UnpicklingError):  # it died (killed): its pieces are done here
        status, got = "done", [work(items[i]) for i in theirs]
    if status == "raised":
        raise got
    results.update(zip(theirs, got))
    return [results[i] for i in range(len(items))]


def _on_the_main_thread() -> bool:
    """Whether this is the main thread (only it receives signals; ``threading`` is imported
    only where a fork is otherwise due)."""
    import threading

    return threading.current_thread() is threading.main_thread()
