"""``roofline docs [-o DIR] [--check]``: write the derivation documents, or check them."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "docs", help="write (or --check) the citable derivation documents",
        description="Write the derivation documents (one Markdown page per topic, an index "
        "and references.bib, the BibTeX of the works cited) generated from the catalogue, or "
        "with --check compare them with what the code "
        "generates. Exit status: 0 up to date (or written); 1 with --check when a page is "
        "stale, missing or no longer generated (each is named on stderr); 2 bad input.")
    p.add_argument("-o", "--output", default="derivations", metavar="DIR",
                   help="directory of the pages (default: derivations/ in the current "
                   "directory)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming the stale pages if DIR differs from the "
                   "generated text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .. import docs
    from ..errors import InputError
    from ..output import check_target

    out = Path(args.output)
    if args.check and out.exists() and not out.is_dir():
        raise InputError("output", "must be a folder, not a file", args.output)
    if not args.check:  # before the pages are generated: a folder that cannot be written fails
        check_target(out, "folder", contents=docs.page_names(), argument="output")
    pages = docs.generate()
    if args.check:
        found = docs.stale(out, pages)
        for name, why in found:
            print(f"roofline docs: stale: {out / name}: {why}", file=sys.stderr)
        if found:
            print(f"roofline docs: {len(found)} stale page(s); regenerate with "
                  f"`roofline docs -o {args.output}`", file=sys.stderr)
            return 1
        print(f"{out}: {len(pages)} pages up to date")
        return 0
    written, removed = docs.write(out, pages)
    for name in written:
        print(f"wrote {out / name}")
    for name in removed:
        print(f"removed {out / name} (no longer generated)")
    print(f"{out}: {len(pages)} pages, {len(written)} written, {len(removed)} removed")
    return 0
