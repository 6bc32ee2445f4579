"""The command line: wiring only. ``main(argv) -> int``; a RooflineError is one line on stderr
and exit status 2. Each sub-command lives in its own module with ``register(subparsers)``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from ..errors import InputError, RooflineError

__all__ = ["main", "console"]

# Sub-command modules, in the order ``roofline --help`` lists them.
_COMMANDS = ("report", "derive", "hardware", "model", "prefill", "crossover", "plot", "ttft",
             "docs", "measure", "validate")
# Commands that share a module with another.
_MODULES = {"hardware": "specs", "model": "specs", "prefill": "analyze", "crossover": "analyze",
            "validate": "measure"}


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line on stderr and exit status 2 (no usage block);
    sub-command parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]  # "plot time" of "roofline plot time"
        self.exit(2, f"roofline: error: {command + ': ' if command else ''}{message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="roofline",
        description="A symbolic roofline of LLM prefill and its contrast with decode.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the installed version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in dict.fromkeys(_MODULES.get(name, name) for name in _COMMANDS):
        importlib.import_module(f"roofline.cli.{module}").register(sub)
    return parser


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (package metadata costs an import)."""

    def __call__(self, parser, namespace, values, option_string=None) -> NoReturn:  # type: ignore[override]
        parser.exit(0, f"roofline {_version()}\n")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("roofline")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a newcomer typing `roofline`: the overview, not an error
        _parser().print_help()
        return 0
    args = _parser().parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            code = int(args.run(args) or 0)
        except RooflineError as err:
            print(f"roofline: error: {_in_flags(err, args)}", file=sys.stderr)
            code = 2
    for w in caught:  # after the output, one line each
        print(f"roofline: warning: {w.message}", file=sys.stderr)
    return code


def _in_flags(err: RooflineError, args: argparse.Namespace) -> str:
    """The library names its arguments (``weight_dtype``); the command line, its flags
    (``--weight-dtype``): an InputError about an argument this command has is said in flags."""
    if isinstance(err, InputError) and hasattr(args, err.option):
        flag = "--" + err.option.replace("_", "-")
        got = "" if err.value is None else f" (got {err.value!r})"
        return f"{flag}: {err.rule}{got}"
    return str(err)


def console() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (``roofline ... | head``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
