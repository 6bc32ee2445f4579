"""Work shared with one forked process: where a command's work falls into pieces that take a
second or more each (the closed forms of a crossover table solved by SymPy, the report's
figures drawn by matplotlib), a process forked from this one does every other piece meanwhile,
on a second core.

What the caller sees is what running the pieces here, in order, would give: the results in
order; the warnings each piece gave, shown in the pieces' order once all are done (a warning
that the filters show once per place may show once in each process); and the first error in
that order, raised here with its own traceback: a piece that failed there, or whose result
could not be sent back, is done again here, in its turn. The forked process inherits this
one's memory (what was derived, imported, or set up by a test), so only results and warnings
cross back, pickled through a pipe.

It ignores Ctrl-C, which is the parent's to report in one line, and it never outlives the call:
where the parent stops (an error, or a signal its handler turns into an exception: Ctrl-C, and the
command line's SIGTERM and SIGHUP), it is killed and waited for before the error goes on, so that
nothing it would write lands after the parent has cleaned up; such a signal that comes while it is
being forked, or killed and waited for, is held back and delivered just after. Where the parent
ends without a word (SIGKILL, or a SIGTERM with no handler), the kernel kills it with its parent
(``PR_SET_PDEATHSIG``; it also stops at the next piece once its parent is gone): it writes
nothing more, though what the parent left (a temporary folder) stays. A SIGTERM or SIGHUP sent to
it alone ends it (the default action): the parent does its pieces. The work is done here alone,
in order, elsewhere than on Linux, on one core, where other threads run (one could hold a lock
that the forked copy would wait on forever), inside a forked process itself, or for fewer than
``least`` pieces.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    Item = TypeVar("Item")
    Done = tuple[Any, list[tuple[Any, ...]]]  # a piece's result and its warnings' showwarning args

__all__ = ["map_halves"]

_FORKED = False  # True in a forked process: it forks no further (a kill would not reach it)


def map_halves(work: Callable[[Item], Any], items: Sequence[Item], least: int = 2) -> list[Any]:
    """``[work(item) for item in items]``, the odd-numbered items done by a forked process
    (interleaved: costly pieces tend to sit together) while this one does the others.

    >>> map_halves(lambda x: x * x, [1, 2, 3, 4, 5])
    [1, 4, 9, 16, 25]
    """
    if len(items) < least or sys.platform != "linux" or (os.cpu_count() or 1) < 2 \
            or _FORKED or not _alone_on_the_main_thread():
        return [work(item) for item in items]
    theirs = range(1, len(items), 2)
    pid, finished = -1, False
    mine: dict[int, Done] = {}
    sent: dict[int, Done] = {}
    try:
        with _signals_held():  # delivered within the try: the process is then killed
            read, write = os.pipe()
            parent = os.getpid()
            try:
                pid = os.fork()
            except OSError:  # no process to be had (a limit): all done here, below
                os.close(read)
            if pid == 0:
                _serve(work, [items[i] for i in theirs], read, write, parent)  # never returns
            os.close(write)
        if pid < 0:
            return [work(item) for item in items]
        for i in range(0, len(items), 2):
            done = _recorded(work, items[i])
            if done is None:  # failed: it and the pieces before it are done in order below
                break
            mine[i] = done
        else:
            with os.fdopen(read, "rb", closefd=False) as received:
                sent = dict(zip(theirs, _received(received.read())))
            finished = True
    finally:
        if pid > 0:
            _end(pid, read, killed=not finished)
    out = []
    for i, item in enumerate(items):
        done = mine.get(i) or sent.get(i)
        if done is None:
            out.append(work(item))  # here, in its turn: its warnings now, its error raised
            continue
        value, caught = done
        _show(caught)
        out.append(value)
    return out


def _serve(work: Callable[[Item], Any], items: list[Item], read: int, write: int,
           parent: int) -> None:
    """In the forked process: its pieces up to the first that fails, their results and
    warnings sent back, then out, whatever happens (nothing of the parent's, atexit handlers
    or buffers, runs here). Killed with its parent; a SIGTERM or SIGHUP ends it."""
    global _FORKED
    try:
        import pickle
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's to report
        for name in _ENDING[1:]:  # SIGTERM, SIGHUP: the default action, whatever the parent's
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        _FORKED = True
        _die_with_parent()
        os.close(read)
        done = []
        for item in items:
            if os.getppid() != parent:  # the parent is gone (and the kill did not come)
                return
            piece = _recorded(work, item)
            if piece is None:
                break
            done.append(piece)
        with os.fdopen(write, "wb") as out:
            pickle.dump(done, out)
    finally:
        os._exit(0)


def _die_with_parent() -> None:
    """Have the kernel send SIGKILL to this process when its parent ends, however it ends
    (Linux's ``prctl(PR_SET_PDEATHSIG)``); a parent already gone (before the call) is seen by
    the caller's ``os.getppid()`` check."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PDEATHSIG
    except (OSError, AttributeError):  # no prctl: the getppid checks alone
        pass


def _received(data: bytes) -> list[Done]:
    """What the forked process sent; nothing where it sent nothing whole (it was killed, or a
    result or warning did not survive pickling): its pieces are then done here."""
    import pickle

    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 - whatever it is, those pieces are done here instead
        return []


def _end(pid: int, read: int, killed: bool) -> None:
    """The forked process killed (where its results are not wanted) and waited for, the
    signals that end a run held back meanwhile; the pipe closed."""
    import signal

    with _signals_held():
        if killed:
            os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # already waited for (SIGCHLD ignored, or by the work)
            pass
        os.close(read)


def _recorded(work: Callable[[Item], Any], item: Item) -> Done | None:
    """``work(item)`` and the warnings it showed, held to be shown later (the filters as they
    are: none is changed); None where it raised an Exception (it is done again in its turn)."""
    import warnings

    caught: list[tuple[Any, ...]] = []
    shown = warnings.showwarning
    warnings.showwarning = lambda *args: caught.append(args)
    try:
        value = work(item)
    except Exception:  # noqa: BLE001 - raised again when the piece is done again here
        return None
    finally:
        warnings.showwarning = shown
    return value, caught


def _show(caught: list[tuple[Any, ...]]) -> None:
    import warnings

    for args in caught:
        warnings.showwarning(*args)


_ENDING = ("SIGINT", "SIGTERM", "SIGHUP")  # the signals that end a run (Windows: no SIGHUP)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP, where a Python handler takes them (Ctrl-C's by default; the
    command line's for all three), recorded, not handled, for the duration; then delivered, in
    the order they came, as they would have been. Off the main thread (where no handler can be
    set, and none runs) nothing is held. A signal with no Python handler keeps its action:
    the default one ends the process at once (the forked one is killed with it)."""
    import signal

    came: list[int] = []
    previous: dict[int, Any] = {}
    try:
        for name in _ENDING:
            number = getattr(signal, name, None)
            if number is not None and callable(signal.getsignal(number)):
                previous[number] = signal.signal(number, lambda n, _: came.append(n))
    except ValueError:  # not the main thread: nothing to hold
        pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(came):
            signal.raise_signal(number)


def _alone_on_the_main_thread() -> bool:
    """Whether this is the main thread (only it receives signals), with no other thread, and
    Ctrl-C handled from Python (``threading`` and ``signal`` imported only where a fork is
    otherwise due)."""
    import signal
    import threading

    return threading.current_thread() is threading.main_thread() \
        and threading.active_count() == 1 and signal.getsignal(signal.SIGINT) is not None
