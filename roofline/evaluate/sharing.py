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

from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["pack", "unpack"]


_MAX_NODES = 10_000_000  # the nodes a line may expand to (the largest shipped: 66,000)


class _Ref(int):
    """A list's id in :func:`pack`'s table of distinct lists (not a number of the data)."""


def pack(value: Any) -> dict[str, Any]:
    """``value`` (JSON data: mappings, lists or tuples, and leaves) with each list that occurs
    more than once, by value, written once in ``shared`` and referred to by its index there.
    Leaves are told apart by type and as written (``1`` is not ``1.0``, nor ``0.0`` ``-0.0``);
    a tuple is written as a list, as JSON writes it. A mapping with the key ``"@"`` is a
    ValueError: that key is the references'."""
    ids: dict[tuple, int] = {}  # a distinct list's key (lists by their id) → its id
    items: list[tuple] = []  # by id, children first: the key
    nodes: list[Sequence] = []  # by id: the list first met (its leaves as they are)
    uses: list[int] = []  # by id: in how many distinct lists, or places outside lists, it is

    def intern(node: Sequence) -> int | None:
        """The id of a list of leaves and such lists; None for one that holds a mapping."""
        key = []
        for v in node:
            if type(v) is list or type(v) is tuple:
                k = intern(v)
                if k is None:
                    return None
                key.append(("@", k))
            elif type(v) is dict:
                return None
            else:
                key.append((type(v).__name__, repr(v)))
        k = ids.get(tuple(key))
        if k is None:
            k = ids[tuple(key)] = len(items)
            items.append(tuple(key))
            nodes.append(node)
            uses.append(0)
            for kind, child in key:
                if kind == "@":
                    uses[child] += 1
        return k

    def lists(v: Any) -> Any:  # each list of leaves and such lists interned (as its _Ref); a
        if type(v) is dict:  # list that holds a mapping is a container, walked
            if "@" in v:
                raise ValueError(f"a mapping with the key '@' (the references'): {v!r}")
            return {key: lists(x) for key, x in v.items()}
        if type(v) is list or type(v) is tuple:
            k = intern(v)
            if k is None:
                return [lists(x) for x in v]
            uses[k] += 1
            return _Ref(k)
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
        return written(v) if type(v) is _Ref else v

    data = out(lists(value))
    return {"shared": table, "data": data}


def unpack(packed: Any) -> Any:
    """The data that :func:`pack` wrote, each shared list one object wherever it is used (the
    references replaced in place: the data is JSON just read). Anything else is a ValueError
    (a tampered file): a reference to no earlier entry, a table that is not a list of lists,
    a line nested past the interpreter's depth, or one that would expand to more than
    ten million nodes (references to references can double a tree's size at every step)."""
    if type(packed) is not dict or type(packed.get("shared")) is not list or "data" not in packed:
        raise ValueError(f"not a packed line: {str(packed)[:80]!r}")
    table: list[list] = []
    sizes: list[int] = []  # the nodes each table entry expands to

    def read(v: Any) -> tuple[Any, int]:
        """``v`` with its references replaced in place, and the nodes it expands to."""
        if type(v) is dict:
            if "@" in v:
                k = v["@"]
                if len(v) != 1 or type(k) is not int or not 0 <= k < len(table):
                    raise ValueError(f"not a reference to an earlier shared subtree: {v!r}")
                return table[k], sizes[k]
            n = 1
            for key, x in v.items():
                v[key], m = read(x)
                n += m
            return v, n
        if type(v) is not list:
            return v, 1
        n = 1
        for i, x in enumerate(v):
            if type(x) is list or type(x) is dict:
                v[i], m = read(x)
                n += m
            else:
                n += 1
        if n > _MAX_NODES:
            raise ValueError(f"not a packed line: it expands to more than {_MAX_NODES:,} nodes")
        return v, n

    try:
        for entry in packed["shared"]:
            if type(entry) is not list:
                raise ValueError(f"not a shared subtree: {str(entry)[:80]!r}")
            node, n = read(entry)
            table.append(node)
            sizes.append(n)
        data, n = read(packed["data"])
    except RecursionError:
        raise ValueError("not a packed line: nested too deeply") from None
    if n > _MAX_NODES:
        raise ValueError(f"not a packed line: it expands to more than {_MAX_NODES:,} nodes")
    return data
