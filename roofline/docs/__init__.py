"""Citable derivation documents: ``derivations/<topic>.md``, generated from the catalogue.

One Markdown file per topic of :data:`roofline.catalog.TOPICS` and a ``README.md`` index. Every
entry of the catalogue gets an anchor, its statement as ``sympy.latex`` typeset it, its symbols,
assumptions, the steps SymPy made, its source, a worked example (H100-SXM, Llama-3-8B, bf16,
B = 1, T = 2048) and its SymPy form. ``crossovers.md`` ends with the crossovers of every shipped
device × preset model; the index ends with the full references of the works the sources name.
The text is a pure function of the code and the shipped data files: no dates, sorted iteration,
fixed number formats, so ``roofline docs --check`` can compare it byte for byte.

Modules: :mod:`.pages` (the index and the topic pages), :mod:`.example` (the worked example),
:mod:`.crossover_table` (the closing table), :mod:`.references` (the works cited),
:mod:`.markdown` (escaping, math blocks, tables, numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..catalog import TOPICS, topic
from ..forked import map_halves
from ..specs.hardware import Hardware, list_hardware
from ..specs.model import ModelShape, list_models
from .crossover_table import TABLE_COLUMNS
from .example import EXAMPLE, build
from .markdown import md as _md  # noqa: F401  (docs._md, as before the split)
from .pages import HEADER, TITLES, anchor, bibliography, index, page

__all__ = ["TITLES", "HEADER", "EXAMPLE", "TABLE_COLUMNS", "anchor", "page_names", "generate",
           "write", "stale"]


def page_names() -> list[str]:
    """The file names :func:`generate` writes, known before any page is built (so that a
    target can be checked first)."""
    return ["README.md", *(f"{topic}.md" for topic in TOPICS), "references.bib"]


def generate(hardware: Sequence[Hardware] | None = None,
             models: Sequence[ModelShape] | None = None) -> dict[str, str]:
    """File name → text of every page (``README.md``, one per topic, and ``references.bib``,
    the BibTeX of the software and of every work cited).

    The closing crossover table covers ``hardware`` × ``models`` (default: everything shipped).
    The default pages are kept in the user's cache (:mod:`roofline.codegen.cache`) under a
    digest of everything they are made from (:func:`pages_key`): a second ``roofline docs`` or
    ``docs --check`` of the same installation reads them back instead of deriving again.
    """
    if hardware is None and models is None:
        return _kept_pages()
    return _generate(hardware, models)


def pages_key() -> str:
    """The digest of what the default pages are made from: every source file of the package,
    the shipped hardware, model and published files, and the SymPy version (the cache key)."""
    import hashlib

    from ..codegen.cache import key
    from ..specs._shipped import shipped_dir

    root = Path(__file__).parents[1]
    digest = hashlib.blake2b(key().encode(), digest_size=16)
    files = [*sorted(root.rglob("*.py")),
             *(f for kind in ("hardware", "models", "published")
               for f in sorted(shipped_dir(kind).rglob("*")) if f.is_file())]
    for file in files:
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def _kept_pages() -> dict[str, str]:
    import json

    from ..codegen import cache

    path = cache.directory() / f"pages-{pages_key()}.json"
    kept = cache.read_kept(path)
    if kept is not None:
        return json.loads(kept)
    pages = _generate(None, None)
    cache.keep(path, json.dumps(pages, sort_keys=True))
    return pages


def _generate(hardware: Sequence[Hardware] | None,
              models: Sequence[ModelShape] | None) -> dict[str, str]:
    hardware = list_hardware() if hardware is None else list(hardware)
    models = list_models() if models is None else list(models)
    example = build()

    def one(name: str) -> tuple[str, int]:  # a topic's page, and its number of formulas
        entries = list(topic(name).values())
        return page(name, entries, example, hardware, models), len(entries)

    # every other topic derived and written by a second process (roofline.forked): the
    # derivations take most of the time, and a topic's page needs only its own
    done = dict(zip(TOPICS, map_halves(one, list(TOPICS))))
    pages = {"README.md": index({name: count for name, (_, count) in done.items()})}
    pages.update((f"{name}.md", text) for name, (text, _) in done.items())
    pages["references.bib"] = bibliography()
    return pages


def write(output: str | Path,
          pages: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """Write the pages into the folder ``output`` (created if missing): (files written, files
    removed).

    Only files whose text changed are written; a generated page no longer produced (it starts with
    :data:`HEADER`) is removed. Other files are left alone. The target is checked before any work
    and the pages are written all or none (:func:`roofline.output.write_all`); a file system
    that refuses (read-only, full, a folder named like a page, a page that cannot be replaced)
    is one error naming ``output``, and the folder is left as it was.
    """
    from ..output import check_target, make_folders, remove_folders, write_all

    pages = generate() if pages is None else pages
    out = check_target(output, "folder", contents=pages, argument="output")
    changes: dict[Path, bytes | None] = {}
    for name, text in sorted(pages.items()):
        path, data = out / name, text.encode("utf-8")
        if not _holds(path, data):
            changes[path] = data
    removed = _leftovers(out, pages)
    changes.update(dict.fromkeys(removed))
    made = make_folders(out)
    try:
        write_all(changes)
    except BaseException:
        remove_folders(made)
        raise
    return [p.name for p, data in changes.items() if data is not None], [p.name for p in removed]


def stale(directory: str | Path, pages: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(file name, why) for every page in ``directory`` that differs from what the code
    generates, is missing, or is a generated page no longer produced; empty when up to date."""
    out = Path(directory)
    pages = generate() if pages is None else pages
    found = []
    for name, text in sorted(pages.items()):
        path = out / name
        if not path.is_file():
            found.append((name, "missing"))
        elif path.read_bytes() != text.encode("utf-8"):  # bytes: a non-UTF-8 page differs too
            found.append((name, "differs from the generated text"))
    found += [(p.name, "no longer generated") for p in _leftovers(out, pages)]
    return found


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file holds these bytes already (one that cannot be read does not)."""
    try:
        return path.is_file() and path.read_bytes() == data
    except OSError:
        return False


def _leftovers(out: Path, pages: dict[str, str]) -> list[Path]:
    if not out.is_dir():
        return []
    header = HEADER.encode("utf-8")  # bytes: a file of someone else's need not be UTF-8
    return [p for p in sorted(out.glob("*.md")) if p.name not in pages and p.is_file()
            and _starts_with(p, header)]


def _starts_with(path: Path, prefix: bytes) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(prefix)) == prefix
    except OSError:  # unreadable: not a page this wrote, left alone
        return False
