"""One exception tree. A message says where (file, key), which rule broke, and the value.

The command line turns any :class:`RooflineError` into one line on stderr and exit status 2. A
library caller may also catch them as Python's own kinds: a bad file or value is a
``ValueError``, an unknown name a ``LookupError``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "RooflineError",
    "SpecError",
    "UnknownNameError",
    "InputError",
    "NoSteadyStateError",
]


class RooflineError(Exception):
    """Base class of every error this package raises on purpose."""


class SpecError(RooflineError, ValueError):
    """A hardware or model file breaks a rule: ``where: rule (got value)``."""

    def __init__(self, where: str, rule: str, value: object = None) -> None:
        self.where, self.rule, self.value = where, rule, value
        got = "" if value is None else f" (got {value!r})"
        super().__init__(f"{where}: {rule}{got}")


class UnknownNameError(RooflineError, LookupError):
    """A name that is not in a catalogue; the message lists the close (or all) valid names."""

    def __init__(self, kind: str, name: str, valid: Iterable[str], listing: str = "") -> None:
        import difflib  # only when a name is unknown

        valid = sorted(valid)
        close = difflib.get_close_matches(name, valid, n=5, cutoff=0.5)
        self.kind, self.name, self.valid = kind, name, valid
        if close:
            options = f"close matches: {', '.join(close)}"
        elif len(valid) > 20 and listing:
            options = f"no close match among {len(valid)} names; `{listing}` lists them"
        else:
            options = f"valid names: {', '.join(valid)}"
        super().__init__(f"unknown {kind} {name!r}; {options}")


class InputError(RooflineError, ValueError):
    """An option or argument out of its range: ``option: rule (got value)``."""

    def __init__(self, option: str, rule: str, value: object = None) -> None:
        self.option, self.rule, self.value = option, rule, value
        got = "" if value is None else f" (got {value!r})"
        super().__init__(f"{option}: {rule}{got}")


class NoSteadyStateError(InputError):
    """A queue whose load R·t is at least 1: it grows without bound."""
