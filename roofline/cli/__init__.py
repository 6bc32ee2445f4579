"""The command line: wiring only. ``main(argv) -> int``; a RooflineError is one line on stderr
and exit status 2. Each sub-command lives in its own module with ``register(subparsers)``.

Exit statuses: 0 done; 1 a check that found something (``docs --check``, ``validate``);
2 bad input, or output that cannot be written (a file, or the standard output itself, e.g.
``> /dev/full``), one line ``roofline: error: ...`` on stderr; 130 interrupted (Ctrl-C), one line
``roofline: interrupted``, temporary files removed; SIGTERM and SIGHUP end a run as Ctrl-C does
(:func:`console`): 143 and ``roofline: terminated (SIGTERM)``, 129 and ``roofline: terminated
(SIGHUP)``. ``--json`` output is strict JSON
(:func:`print_json`): a number that is not finite, such as the FLOP/byte of an operation that
moves no bytes, is ``null``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import warnings
from collections.abc import Sequence
from functools import cache
from typing import NoReturn

from ..errors import InputError, RooflineError

__all__ = ["main", "console", "print_json", "print_csv", "INTERRUPTED"]

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
# The signals that end a run as Ctrl-C does, by number (exit status 128 + it): the line said.
_STOPPED = {2: "interrupted", 15: "terminated (SIGTERM)", 1: "terminated (SIGHUP)"}

# Sub-command modules, in the order ``roofline --help`` lists them.
_COMMANDS = ("report", "derive", "hardware", "model", "prefill", "crossover", "plot", "ttft",
             "hybrid", "request", "goodput", "docs", "measure", "validate")
# Commands that share a module with another.
_MODULES = {"hardware": "specs", "model": "specs", "prefill": "analyze", "crossover": "analyze",
            "validate": "measure", "hybrid": "serve", "request": "serve",
            "goodput": "serve"}


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout at the terminal's width read once (:func:`_columns`): argparse
    asks ``shutil`` for it again for every argument added, and importing ``shutil`` alone
    costs a few milliseconds of every start."""

    def __init__(self, prog: str, **kwargs) -> None:
        kwargs.setdefault("width", _columns() - 2)  # argparse's own margin
        super().__init__(prog, **kwargs)


@cache
def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` reads it: ``COLUMNS``, else the
    standard output's terminal, else 80."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line on stderr and exit status 2 (no usage block),
    and help at the terminal's width (:class:`_Formatter`); sub-command parsers are of the same
    class."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def _print_message(self, message: str, file=None) -> None:
        """argparse's, less its silence: help that cannot be written (``--help > /dev/full``)
        is an output error like any other, not an exit status of 0."""
        if message:
            (file or sys.stderr).write(message)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        """argparse's, with an option given twice refused (argparse keeps the last silently:
        ``--prompt 128 --prompt 4096`` would run one length of two meant)."""
        if args is not None:
            self._refuse_repeats(list(args))
        return super().parse_known_args(args, namespace)

    def _refuse_repeats(self, args: list[str]) -> None:
        """Each option of this parser at most once, up to its sub-command (which checks its
        own); an abbreviation counts as the option it stands for, -o as --output."""
        commands = {name for a in self._actions if isinstance(a, argparse._SubParsersAction)
                    for name in a.choices}
        seen: dict[str, str] = {}
        for token in args:
            if token == "--" or token in commands:
                return
            name = token.split("=", 1)[0]
            if not name.startswith("-") or len(name) < 2:
                continue
            options = self._option_string_actions
            if not name.startswith("--") and name[:2] in options:  # -oFILE: -o and its value
                name = name[:2]
            if name not in options and name.startswith("--"):
                matches = {options[o] for o in options if o.startswith(name)}
                action = matches.pop() if len(matches) == 1 else None
            else:
                action = options.get(name)
            if action is None or isinstance(action, (argparse._AppendAction,
                                                     argparse._CountAction)):
                continue
            if action.dest in seen:
                first, full = seen[action.dest], max(action.option_strings, key=len)
                also = f" (as {first} and {name})" if first != name else ""
                self.error(f"{full}: given twice{also}; give each option once")
            seen[action.dest] = name

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]  # "plot time" of "roofline plot time"
        where = f"{command}: " if command else ""
        self.exit(2, f"roofline: error: {where}{_one_line(message)}\n")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``command`` (a known sub-command) just that one's: a run needs
    only its own sub-command's options, and building every one costs a start-up's worth."""
    parser = _Parser(
        prog="roofline",
        description="A symbolic roofline of LLM prefill and its contrast with decode.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the installed version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = [command] if command in _COMMANDS else _COMMANDS
    for module in dict.fromkeys(_MODULES.get(name, name) for name in names):
        importlib.import_module(f"roofline.cli.{module}").register(sub)
    return parser


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (package metadata costs an import)."""

    def __call__(self, parser, namespace, values, option_string=None) -> NoReturn:  # type: ignore[override]
        parser._print_message(f"roofline {_version()}\n", sys.stdout)
        parser.exit(0)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("roofline")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if not argv:  # a newcomer typing `roofline`: the overview, not an error
            _parser().print_help()
            return 0
        args = _parser(argv[0]).parse_args(argv)
        args.argv = argv  # as given: a figure's provenance quotes it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                code = int(args.run(args) or 0)
            except RooflineError as err:
                print(f"roofline: error: {_one_line(_in_flags(err, args))}", file=sys.stderr)
                return 2  # the error alone: the warnings of the work it stopped are not shown
        for message in dict.fromkeys(_one_line(str(w.message)) for w in caught):
            print(f"roofline: warning: {message}", file=sys.stderr)  # after the output, once each
        return code
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM, SIGHUP: whatever was being written
        return _stopped(stop)  # has cleaned up after itself


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (or Ctrl-C) raised as Ctrl-C is, so that whatever cleans up after
    Ctrl-C (temporary files, a forked process) cleans up after it too; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stopped(stop: KeyboardInterrupt) -> int:
    """The one line for the signal that ended the run (Ctrl-C where none is named); its exit
    status, 128 + its number."""
    signum = getattr(stop, "signum", 2)
    try:
        print(f"roofline: {_STOPPED[signum]}", file=sys.stderr)
    except (OSError, ValueError):  # a terminal that hung up: the status alone
        pass
    return 128 + signum


def _handle_signals() -> None:
    """Ctrl-C, SIGTERM and SIGHUP (what ``timeout``, ``kill``, CI cancellation and a closed
    terminal send) each raised as a :class:`_Stopped`: the first one only, a later one is
    ignored while the run cleans up. A signal ignored when the run began (``nohup``), or
    handled otherwise, is left as it was. Set by the executable alone: ``import roofline``
    leaves its user's handlers as they are."""
    import signal

    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if not stopping:
            stopping.append(signum)
            raise _Stopped(signum)

    for number in _STOPPED:
        try:
            if signal.getsignal(number) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(number, stop)
        except (ValueError, OSError):  # no such signal here (SIGHUP on Windows)
            pass


def _set_signals(action: str) -> None:
    """The stop signals' default action again (``default``: the process ends at once, by the
    signal; one that lands while the interpreter shuts down must not raise in its clean-up
    code), or ignored (``ignore``: a stopped run leaving with its own status)."""
    import signal

    handler = signal.SIG_DFL if action == "default" else signal.SIG_IGN
    for number in _STOPPED:
        try:
            signal.signal(number, handler)
        except (ValueError, OSError):  # no such signal here
            pass


def print_json(data: object) -> None:
    """The command line's one JSON printer: indented, keys sorted, strict JSON. A float that is
    not finite (an intensity with no bytes moved is ``inf``) is printed as ``null``, never as
    the ``Infinity`` or ``NaN`` that JSON does not have."""
    print(json.dumps(_finite(data), allow_nan=False, indent=2, sort_keys=True))


def print_csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """The command line's one CSV printer (RFC 4180, as Python's ``csv`` writes it): numbers
    as Python prints them (full precision), a number that is not finite and None as an empty
    cell."""
    import csv

    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow("" if v is None or (isinstance(v, float) and not math.isfinite(v))
                        else v for v in row)


def _finite(data: object) -> object:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


_LONGEST = 2000  # characters of an error or warning line: a 1 MiB value quoted is cut


def _one_line(text: str) -> str:
    """``text`` on one line whatever it quotes: a line break or other control character (a
    ``--dtype`` of ``"\\n"``, a key of a hostile file) is written as its escape, ``\\n``; past
    2,000 characters (a huge value quoted) the line is cut, saying how much was left out."""
    pieces, width, used = [], 0, 0
    for c in text:
        if width >= _LONGEST:
            break
        piece = c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        pieces.append(piece)
        width, used = width + len(piece), used + 1
    rest = len(text) - used
    return "".join(pieces) + (f"... ({rest:,} more characters)" if rest else "")


def _in_flags(err: RooflineError, args: argparse.Namespace) -> str:
    """The library names its arguments (``weight_dtype``); the command line, its flags
    (``--weight-dtype``): an InputError about an argument this command has is said in flags."""
    if isinstance(err, InputError) and hasattr(args, err.option):
        flag = "--" + err.option.replace("_", "-")
        got = "" if err.value is None else f" (got {err.value!r})"
        return f"{flag}: {err.rule}{got}"
    return str(err)


def console() -> None:
    """The ``roofline`` executable: :func:`main`, then the standard output flushed. A reader
    that went away (``roofline ... | head``) is not an error; a standard output that cannot be
    written (``> /dev/full``, a closed descriptor) is one line and exit status 2."""
    if sys.stdout is None:  # the descriptor was closed (``roofline ... >&-``)
        print("roofline: error: standard output: cannot write: it is closed", file=sys.stderr)
        sys.exit(2)
    _handle_signals()
    try:
        try:
            code = main()
        except SystemExit as done:  # argparse's --help, --version or usage error: the help
            code = done.code if isinstance(done.code, int) else 0  # must reach its reader too
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (``roofline ... | head``): not an error
        _drop_stdout()
        code = 0
    except OSError as err:  # the standard output cannot be written, or a file the same way
        _drop_stdout()
        where = err.filename if err.filename is not None else "standard output"
        reason = " ".join(str(err.strerror or err).split())
        print(f"roofline: error: {where}: cannot write: {reason}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt as stop:  # between main's return and the flush
        _drop_stdout()
        code = _stopped(stop)
    if code - 128 in _STOPPED:  # once stopped, leave at once with status 128 + N, as a shell
        _set_signals("ignore")  # reports it: a second signal now would end it by its number
        for stream in (sys.stdout, sys.stderr):  # (and never by the signal that the
            try:  # interpreter may re-raise at shutdown after a KeyboardInterrupt)
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)  # (temporary files are removed already, by whoever made them)
    _set_signals("default")  # the run is over: a signal now ends the process as any other's
    sys.exit(code)


def _drop_stdout() -> None:
    """Point the standard output at the null device, so that the interpreter's last flush of
    what is still buffered fails no more."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
