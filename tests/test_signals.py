"""Signals during every command that writes files (the fuzz tests' faults, here in real
processes): SIGTERM and SIGHUP, what ``timeout``, ``kill``, a CI's cancel and a closed terminal
send, end a run as Ctrl-C does. Each test starts the command, waits until it is in the middle of
its work (``report``: drawing, its temporary folder made and its forked process at work; the
others: after some CPU seconds of work, halved whenever the run was done before the signal
came), sends the signal to it alone, and checks: status 128 + N, one line on stderr, nothing new
in the folder (no temporary file or folder, no file half-written), and no process it forked
still alive. A SIGKILL of ``report`` kills its forked process too (the temporary folder stays:
the next run into the same folder removes it, see tests/test_report.py).

The handlers are the executable's alone: ``import roofline`` and ``main()`` leave a user's as
they are.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

EXPECTED = {signal.SIGINT: (130, "roofline: interrupted\n"),
            signal.SIGTERM: (143, "roofline: terminated (SIGTERM)\n"),
            signal.SIGHUP: (129, "roofline: terminated (SIGHUP)\n")}
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` from its state on (field 3), or None where there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``: its start time (told apart from a later one given the
    same id)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                parents.setdefault(int(stat[1]), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            stat = _stat(child)
            if stat is not None and child not in found:
                found[child] = stat[19]
                todo.append(child)
    return found


def _alive(pid: int, started: str) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[19] == started and stat[0] not in "ZX"  # a zombie is dead


def _cpu_seconds(pid: int) -> float:
    stat = _stat(pid)
    return 0.0 if stat is None else (int(stat[11]) + int(stat[12])) / TICKS


def _handled(pid: int) -> bool:
    """Whether the run has set its handlers of the stop signals (``SigCgt`` in
    ``/proc/PID/status``): a signal before that ends it by the default action, as it would
    any program still loading."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines()
                      if line.startswith("SigCgt:")), 16)
    return all(caught >> (number - 1) & 1 for number in EXPECTED)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _stopped(tmp_path: Path, argv: list[str], ready: Callable[[int, int], bool],
             sent: int) -> tuple[subprocess.Popen, str, dict[int, str], list[str]]:
    """``roofline ARGV`` run in ``tmp_path``, sent ``sent`` once ``ready(pid, attempt)``; run
    again (the next attempt) where it was done before the signal came (a fast machine, or a
    loaded one that ran it between the look and the signal). The process, its stderr, the
    processes below it when the signal was sent (waited for, up to 20 s, to be gone), and the
    files in ``tmp_path`` when it had ended."""
    for attempt in range(6):
        run = subprocess.Popen([sys.executable, "-m", "roofline", *argv], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        below: dict[int, str] = {}
        try:
            deadline = time.monotonic() + 300
            while run.poll() is None and not ready(run.pid, attempt):
                assert time.monotonic() < deadline, "the run never got to the point"
                time.sleep(0.02)
            below = _descendants(run.pid)
            run.send_signal(sent)  # nothing, where it has ended already
            _, err = run.communicate(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        done = run.returncode == 0 or (  # or it had written its files and restored the
            run.returncode == -sent != -signal.SIGKILL  # signals' default action as it
            and not err and any(tmp_path.iterdir()))  # ended, and the signal ended it then
        if not done:
            break
        for path in tmp_path.iterdir():  # done before the signal came: again, from nothing
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    ended = _files(tmp_path)
    deadline = time.monotonic() + 20  # a process killed with its parent: gone at once, or
    while any(_alive(*p) for p in below.items()) and time.monotonic() < deadline:  # nearly
        time.sleep(0.05)
    return run, err, below, ended


def _after_cpu(seconds: float) -> Callable[[int, int], bool]:
    """Ready after ``seconds`` of CPU time in the run (the same work on a loaded machine as
    on an idle one), half as many at each attempt after the first, its handlers set."""
    return lambda pid, attempt: _cpu_seconds(pid) >= seconds / 2 ** attempt and _handled(pid)


def _drawing(tmp_path: Path) -> Callable[[int, int], bool]:
    """``report``: its temporary folder made and, where there are two cores, its forked
    process drawing half the figures."""
    def ready(pid: int, attempt: int) -> bool:
        if not list(tmp_path.glob(".r.tmp-*")):
            return False
        return (os.cpu_count() or 1) < 2 or bool(_descendants(pid))
    return ready


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_report_removes_its_temporary_folder_and_its_forked_process(
        tmp_path, sent):
    run, err, below, _ = _stopped(tmp_path, ["report", "-o", "r"], _drawing(tmp_path), sent)
    assert (run.returncode, err) == EXPECTED[sent]
    assert _files(tmp_path) == []
    assert (os.cpu_count() or 1) < 2 or below, "no forked process was drawing"
    assert not [pid for pid, started in below.items() if _alive(pid, started)]


def test_a_sigkill_of_report_kills_its_forked_process_too(tmp_path):
    """Nothing can run in a process killed outright: the kernel kills its forked process with
    it (``PR_SET_PDEATHSIG``), so that no figure is drawn into the folder it left."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: report forks no process")
    run, err, below, ended = _stopped(tmp_path, ["report", "-o", "r"], _drawing(tmp_path),
                               signal.SIGKILL)
    assert (run.returncode, err) == (-signal.SIGKILL, "")
    assert below
    assert not [pid for pid, started in below.items() if _alive(pid, started)]
    assert _files(tmp_path) == ended  # nothing drawn once the run was killed
    assert [p.name[:7] for p in tmp_path.iterdir()] == [".r.tmp-"]  # left to the next run


WORKER = """
import os, signal, sys, time
from pathlib import Path
from roofline import forked

os.cpu_count = lambda: 2
out = Path(sys.argv[1])

def work(i):
    if i == 1:  # in the forked process: a tick every 20 ms for 10 s
        (out / "pid").write_text(str(os.getpid()))
        for k in range(500):
            (out / f"tick-{k}").touch()
            time.sleep(0.02)
    else:  # here: killed (the signal's default action) once the forked process is at work
        while not (out / "tick-0").exists():
            time.sleep(0.01)
        os.kill(os.getpid(), int(sys.argv[2]))

forked.map_halves(work, [0, 1])
"""


@pytest.mark.parametrize("sent", [signal.SIGKILL, signal.SIGTERM])
def test_a_forked_process_dies_with_its_parent(tmp_path, sent):
    """However the parent ends (here killed outright, or by a SIGTERM no handler takes, as
    where the library is used with Python's defaults), the forked process ends with it and
    does nothing more."""
    run = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path), str(int(sent))],
                         timeout=120)
    assert run.returncode == -sent
    pid = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 20
    while (stat := _stat(pid)) is not None and stat[0] not in "ZX":
        assert time.monotonic() < deadline, "the forked process outlived its parent"
        time.sleep(0.05)
    ticks = len(list(tmp_path.glob("tick-*")))
    time.sleep(0.3)
    assert 0 < len(list(tmp_path.glob("tick-*"))) == ticks < 400  # stopped, long before its end


@pytest.mark.parametrize("argv, seconds, sent", [
    # well inside the run: a warm plot of one device is done after about 1.7 CPU seconds, and
    # a signal after the work meets the default action the run restores as it ends
    (["plot", "time", "--hardware", "H100-SXM,A100-80GB-SXM,L4", "--model", "Llama-3-8B",
      "-o", "p.png"], 1.0, signal.SIGTERM),
    (["plot", "roofline", "--hardware", "H100-SXM,A100-80GB-SXM,L4", "--model", "Llama-3-8B",
      "-o", "out/p.svg"], 1.0, signal.SIGHUP),
    (["docs", "-o", "d"], 2.0, signal.SIGTERM),
    (["measure", "--quick", "-o", "m.toml"], 2.0, signal.SIGTERM),
    (["validate", "--quick", "-o", "v"], 2.0, signal.SIGTERM),
], ids=["plot", "plot-into-a-new-folder", "docs", "measure", "validate"])
def test_a_signal_during_a_command_that_writes_leaves_nothing(tmp_path, argv, seconds, sent):
    run, err, below, _ = _stopped(tmp_path, argv, _after_cpu(seconds), sent)
    assert (run.returncode, err) == EXPECTED[sent]
    left = _files(tmp_path)
    if argv[0] == "validate" and left:  # stopped after the measuring: that file is whole
        assert left == ["v", "v/hardware.toml"]
        tomllib.loads((tmp_path / "v" / "hardware.toml").read_text(encoding="utf-8"))
    else:
        assert left == []
    assert not [pid for pid, started in below.items() if _alive(pid, started)]


def test_a_second_signal_while_stopping_is_ignored(tmp_path):
    """The first signal ends the run; one that follows at once (``kill`` twice, SIGTERM then
    SIGHUP) does not break the clean-up it started."""
    def twice(pid: int, attempt: int) -> bool:
        if _drawing(tmp_path)(pid, attempt):
            os.kill(pid, signal.SIGTERM)
            return True
        return False

    run, err, below, _ = _stopped(tmp_path, ["report", "-o", "r"], twice, signal.SIGHUP)
    # both may be pending when the interpreter looks: it handles the lower number first
    assert (run.returncode, err) in (EXPECTED[signal.SIGTERM], EXPECTED[signal.SIGHUP])
    assert _files(tmp_path) == []
    assert not [pid for pid, started in below.items() if _alive(pid, started)]


def test_the_library_leaves_the_handlers_alone(capsys):
    from roofline.cli import main

    before = {s: signal.getsignal(s) for s in EXPECTED}
    assert main(["hardware", "show", "H100-SXM"]) == 0
    assert {s: signal.getsignal(s) for s in EXPECTED} == before


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_forked_process_alone_ends_it(monkeypatch, sent):
    """Sent to the forked process alone, SIGTERM or SIGHUP ends it whatever handler the parent
    has (the parent's would raise there): the parent does its pieces."""
    from roofline.forked import map_halves

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    here = os.getpid()
    came: list[int] = []
    previous = signal.signal(sent, lambda n, _: came.append(n))
    try:
        def work(x):
            if os.getpid() != here:
                os.kill(os.getpid(), sent)
            return 10 * x, os.getpid() == here

        assert map_halves(work, [1, 2, 3, 4]) == [(10, True), (20, True), (30, True),
                                                   (40, True)]
    finally:
        signal.signal(sent, previous)
    assert came == []


def test_a_signal_held_while_forking_is_delivered_after(monkeypatch):
    """A SIGTERM that comes while the process is forked is held back, then handled as it
    would have been: here, in the parent, once."""
    from roofline import forked

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    came: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda n, _: came.append(n))
    real_fork = os.fork

    def fork():
        os.kill(os.getpid(), signal.SIGTERM)  # held: recorded, not handled, during the fork
        assert came == []
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)
    try:
        assert forked.map_halves(lambda x: x + 1, [1, 2, 3]) == [2, 3, 4]
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert came == [signal.SIGTERM]
