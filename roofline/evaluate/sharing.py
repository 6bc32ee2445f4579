"""Repeated subtrees written once: the shipped forms as a graph, not a tree.

A crossover's equality repeats the same subtrees many times over (the prefill's time is in
several equalities, an attention operation's bytes in its time and in its Max over the memory
levels): of the 2,460 nodes of the crossover equalities of Llama-2-7B behind an L2, 345 are
distinct. :func:`pack` writes a line's data with every list that occurs more than once stored
once, in a table, and referred to as ``{"@": k}`` (a JSON object: a tree never holds one);
:func:`unpack` reads it back into lists in which a repeated subtree is *one* Python object, so
that :mod:`.compiler` folds it once (it memoises by identity) and the line is a fraction of the
size. The table is in post-order: an entry refers only to entries before it.

>>> packed = pack({"a": ["+", ["*", 2, "T"], ["*", 2, "T"]], "b": ["*", 2, "T"]})
>>> packed
{'shared': [['*', 2, 'T']], 'data': {'a': ['+', {'@': 0}, {'@': 0}], 'b': {'@': 0}}}
>>> data = unpack(packed)
>>> data["a"][1] is data["a"][2] is data["b"]
True
"""

from __future__ import annotations

from typing import Any

__all__ = ["pack", "unpack"]


def pack(value: Any) -> dict[str, Any]:
    """``value`` (JSON data) with each list that occurs more than once, by value, written once
    in ``shared`` and referred to by its index there. Leaves are told apart by type and as
    written (``1`` is not ``1.0``, nor ``0.0`` ``-0.0``), as JSON writes them."""
    ids: dict[tuple, int] = {}  # a distinct list's key (lists by their id) → its id
    items: list[tuple] = []  # by id, children first: the key
    nodes: list[list] = []  # by id: the list first met (its leaves as they are)
    uses: list[int] = []  # by id: in how many distinct lists, or places outside lists, it is

    def intern(node: list) -> int:
        key = tuple(("@", intern(v)) if type(v) is list else (type(v).__name__, repr(v))
                    for v in node)
        k = ids.get(key)
        if k is None:
            k = ids[key] = len(items)
            items.append(key)
            nodes.append(node)
            uses.append(0)
            for kind, child in key:
                if kind == "@":
                    uses[child] += 1
        return k

    def lists(v: Any) -> Any:  # each list of numbers, names and such lists interned, as
        # ("@", its id); a list that holds a mapping is a container, walked
        if type(v) is dict:
            return {key: lists(x) for key, x in v.items()}
        if type(v) is list:
            if any(type(x) is dict for x in v):
                return [lists(x) for x in v]
            k = intern(v)
            uses[k] += 1
            return ("@", k)
        return v

    table: list[list] = []
    place: dict[int, int] = {}  # a repeated list's id → its index in the table

    def written(k: int) -> Any:
        if k in place:
            return {"@": place[k]}
        node = [written(x) if kind == "@" else leaf
                for (kind, x), leaf in zip(items[k], nodes[k])]
        if uses[k] < 2:
            return node
        place[k] = len(table)
        table.append(node)
        return {"@": place[k]}

    def out(v: Any) -> Any:
        if type(v) is dict:
            return {key: out(x) for key, x in v.items()}
        if type(v) is list:
            return [out(x) for x in v]
        return written(v[1]) if type(v) is tuple else v

    data = out(lists(value))
    return {"shared": table, "data": data}


def unpack(packed: dict[str, Any]) -> Any:
    """The data that :func:`pack` wrote, each shared list one object wherever it is used (the
    references replaced in place: the data is JSON just read). A reference to no earlier entry
    is a ValueError (a tampered file)."""
    table: list[list] = []

    def ref(v: dict) -> list:
        k = v["@"]
        if len(v) != 1 or type(k) is not int or not 0 <= k < len(table):
            raise ValueError(f"not a reference to an earlier shared subtree: {v!r}")
        return table[k]

    def read(v: Any) -> Any:
        if type(v) is list:
            for i, x in enumerate(v):
                kind = type(x)
                if kind is dict:
                    v[i] = ref(x) if "@" in x else read(x)
                elif kind is list:
                    read(x)
            return v
        if type(v) is dict:
            if "@" in v:
                return ref(v)
            for key, x in v.items():
                if type(x) is dict or type(x) is list:
                    v[key] = read(x)
        return v

    for entry in packed["shared"]:
        table.append(read(entry))
    return read(packed["data"])
