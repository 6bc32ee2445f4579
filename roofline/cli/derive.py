"""``roofline derive [NAME ...] [--format text|latex|json]``: the derivation catalogue."""

from __future__ import annotations

import argparse
import json

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("derive", help="list the derivation catalogue or print named entries",
                       description="List the catalogue of exact derivations, or print the "
                       "named ones (a dotted prefix such as 'attention' selects a group).")
    p.add_argument("names", nargs="*", metavar="NAME", help="derivation names or prefixes")
    p.add_argument("--format", choices=("text", "latex", "json"), default="text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..catalog import index, record, select_names

    if not args.names and args.format != "json":  # the list: names, units, meanings (no SymPy)
        listing = index()
        width = max(map(len, listing))
        for name, e in listing.items():
            print(f"{name:<{width}}  [{e['unit']}]  {e['meaning']}")
        return 0
    records = [record(name) for name in (select_names(args.names) if args.names else index())]
    if args.format == "json":
        print(json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        for d in records:
            body = d["latex"] if args.format == "latex" else d["expr"]
            print(f"{d['name']}  [{d['unit']}]\n  {d['meaning']}\n  = {body}")
            for a in d["assumptions"]:
                print(f"  assumes: {a}")
            print(f"  source: {d['source']}\n")
    return 0
