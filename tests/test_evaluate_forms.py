"""The derived forms: shipped fresh (by fingerprint), the same as deriving now, never served
stale; and the safe arithmetic reader they are evaluated with."""

import functools
import gc
import json
import warnings
from importlib import resources

import pytest

from roofline.derive.architecture import Architecture
from roofline.evaluate import arith, compiler, forms
from roofline.evaluate.sharing import unpack


def _lines() -> list[bytes]:
    """The shipped JSON Lines as bytes: a header, the catalogue's entries, then two lines an
    architecture (its forms, its crossovers)."""
    return (resources.files("roofline") / forms.SHIPPED).read_bytes().split(b"\n")[:-1]


def _header() -> dict:
    with (resources.files("roofline") / forms.SHIPPED).open("rb") as f:
        return json.loads(f.readline())


def _architecture(key: str) -> dict:
    """The shipped forms of one architecture, its crossovers among them, read afresh (a test
    may change them), found by its key in the lines as the file splits them (not by the index
    that another test checks)."""
    prefix = b'{"key":' + json.dumps(key).encode()
    parts = [json.loads(ln) for ln in _lines()[2:] if ln.startswith(prefix)]
    assert len(parts) == 2
    out = {}
    for part in parts:
        out.update(unpack(part["forms"]) if "forms" in part else {})
        out.update({"crossovers": unpack(part["crossovers"])} if "crossovers" in part else {})
    return out


def test_shipped_forms_carry_the_fingerprint_of_todays_sources():
    assert _header()["fingerprint"] == forms.fingerprint(), "run: python -m roofline.evaluate"


def test_the_index_points_at_each_line():
    """The header's index gives each line's byte offset after the header and its length, per
    architecture and part (its forms, its crossovers): a second count, over the lines as the
    file splits them; each line is JSON, names its key first and holds that part alone."""
    head, entries, *lines = _lines()
    assert json.loads(head)["entries"] == [0, len(entries)]
    index = json.loads(head)["index"]
    offset = len(entries) + 1
    gc.disable()  # tens of thousands of small lists a line: no collection while they are read
    try:
        parsed = [json.loads(line) for line in lines]
    finally:
        gc.enable()
    for line, data in zip(lines, parsed):
        key = data.pop("key")
        (part,) = data  # the one part the line holds
        assert line.startswith(b'{"key":' + json.dumps(key).encode())
        assert index[key][part] == [offset, len(line)]
        offset += len(line) + 1
    assert sum(map(len, index.values())) == len(lines) == 2 * len(index)
    arch = Architecture()
    assert forms._shipped_part(arch, ("l2",), "forms") is None \
        or forms.arch_key(arch, ("l2",)) in index


def test_shipped_entries_equal_building_them_now():
    """Each catalogue entry's shipped JSON form (what ``roofline derive NAME`` and the report
    print without SymPy) equals the entry built now: the report's derivations and the first
    entry of every topic."""
    from roofline.catalog import TOPICS, get, index
    from roofline.report import DERIVATIONS

    shipped = json.loads(_lines()[1])["entries"]
    assert list(shipped) == list(index())
    first = [next(n for n, e in index().items() if e["topic"] == t) for t in TOPICS]
    for name in {*DERIVATIONS, *first}:
        assert shipped[name] == get(name).as_dict(), name


@pytest.mark.parametrize("caches", [(), ("l2",)])
def test_shipped_forms_equal_deriving_now(caches):
    from roofline.specs.model import load_model

    from roofline.evaluate.solved import branch_root

    arch = load_model("Llama-3-8B").architecture
    key = forms.arch_key(arch, caches)
    shipped, now = _architecture(key), forms.derive_forms(arch, caches)
    # deriving now solves no closed form (each is solved when first asked for); the shipped
    # crossovers carry the main branch's and those of the branches that hold at shipped
    # devices: each as SymPy solves it now
    extra = {}
    for name, c in shipped["crossovers"].items():
        roots = dict(c["roots"])
        assert roots.pop(c["main"]) == branch_root(arch, caches, name, c["main"])
        extra[name] = roots
        c["roots"] = {}
    assert shipped == now
    assert any(extra.values())  # some shipped setting holds on another branch than the main
    for name, roots in extra.items():
        for branch, form in list(roots.items())[:2]:
            assert form == branch_root(arch, caches, name, branch)


def test_an_architecture_not_shipped_is_derived_on_first_use():
    arch = Architecture(gated_mlp=False, activation="relu", norm="rms")  # no shipped model
    assert forms.arch_key(arch) not in _header()["index"]
    derived = forms.derive_forms(arch)
    assert forms.forms(arch) == {k: v for k, v in derived.items() if k != "crossovers"}
    assert forms.crossover_forms(arch) == derived["crossovers"]


def test_every_shipped_model_has_its_forms_shipped():
    """Every preset's architecture (a windowed one also with its KV cache kept whole, each also
    with its element-wise work fused) behind every set of cache levels of a shipped device."""
    import dataclasses
    import itertools

    from roofline.evaluate.setting import device_caches
    from roofline.specs.hardware import list_hardware
    from roofline.specs.model import list_models

    keys = set(forms.shipped_architectures())
    archs = {m.architecture for m in list_models()}
    archs |= {dataclasses.replace(a, kv_cache="full") for a in archs if a.window != "none"}
    archs |= {dataclasses.replace(a, fusion="elementwise") for a in archs}
    # and a latent-attention model's with its naive decode step (the figures draw both)
    archs |= {dataclasses.replace(a, mla_decode="naive") for a in archs if a.mla}
    caches = {device_caches(hw) for hw in list_hardware()}
    assert {forms.arch_key(a, c) for a, c in itertools.product(archs, caches)} == keys


def test_a_stale_file_is_never_served(monkeypatch):
    """A fingerprint that differs (a derivation changed after the file was written): the shipped
    forms are dropped with a warning and the architecture is derived afresh."""
    forms._shipped.cache_clear()
    monkeypatch.setattr(forms, "fingerprint", lambda: "0" * 64)
    try:
        with pytest.warns(UserWarning, match="stale"):
            assert forms._shipped() == {}
        assert forms.catalogue_topics() is None
    finally:
        forms._shipped.cache_clear()


def test_the_fingerprint_follows_the_sources(tmp_path, monkeypatch):
    """Changing one byte of a derivation source changes the fingerprint."""
    import shutil
    from pathlib import Path

    root = Path(forms.__file__).parents[1]
    copy = tmp_path / "roofline"
    copy.mkdir()
    for name in ("symbols.py", "catalog.py", "derive", "evaluate"):
        src = root / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, copy / name)
    before = forms.fingerprint()
    monkeypatch.setattr(forms, "__file__", str(copy / "evaluate" / "forms.py"))
    forms.fingerprint.cache_clear()
    try:
        assert forms.fingerprint() == before
        page = copy / "derive" / "attention.py"
        page.write_text(page.read_text() + "\n# changed\n")
        forms.fingerprint.cache_clear()
        assert forms.fingerprint() != before
    finally:
        forms.fingerprint.cache_clear()


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "x.real", "[1][0]",
                                  "f(1)", "'a'", "lambda: 1", "Max(x, key=1)", "True + x"])
def test_arithmetic_rejects_anything_but_arithmetic(text):
    with pytest.raises(ValueError, match="^not a"):
        arith.value(text, {"x": 1.0})


@pytest.mark.parametrize("tree", [["__import__", "os"], ["eval", "x"], [], [True], True, None,
                                  {"x": 1}, "", ["+", 1], ["-", 1, 2, 3], ["neg"], ["Max"],
                                  ["sqrt", 1, 2], ["+", 1, None], ["*", "x", [1]], 1j])
@pytest.mark.parametrize("use", [lambda t: arith.value(t, {"x": 1.0}), arith.names,
                                 lambda t: compiler.compile(t, {}, ("x",)),
                                 lambda t: compiler.compile_each(t, {}, "x")])
def test_trees_reject_anything_but_arithmetic(tree, use):
    """A shipped tree is data: an operator outside the whitelist, a wrong number of operands
    or a leaf that is neither a number nor a name is refused wherever it is read."""
    with pytest.raises(ValueError, match="^not a"):
        use(tree)


def test_a_tree_is_the_text_read():
    """A text and its tree (written by hand) give the same numbers; sums and products are
    n-ary, still evaluated left to right."""
    text = "2*T*d - Max(x, 1)/(3 + T + x) + -(x**2)"
    assert arith.parse(text) == ["+", ["-", ["*", 2, "T", "d"],
                                      ["/", ["Max", "x", 1], ["+", 3, "T", "x"]]],
                                 ["neg", ["**", "x", 2]]]
    env = {"T": 5.0, "d": 7.0, "x": 4.0}
    want = 2 * 5 * 7 - 4 / (3 + 5 + 4) - 16
    assert arith.value(text, env) == arith.value(arith.parse(text), env) == want
    assert compiler.compile(arith.parse(text), {"d": 7.0, "x": 4.0}, ("T",))(5.0) == want


def test_arithmetic_matches_sympy():
    from sympy import Max, ceiling, sqrt, sstr, symbols

    a, b, t = symbols("P_peak beta_hbm T", positive=True)
    expr = Max(a / b, 3) + sqrt(a) / 7 - b**2 / 3 + ceiling(t / 3)
    env = {"P_peak": 2.5, "beta_hbm": 0.5, "T": 7.0}
    want = float(expr.subs({a: 2.5, b: 0.5, t: 7}))
    assert arith.value(sstr(expr), env) == pytest.approx(want)
    # compiled, with P_peak and beta_hbm folded and T free: scalar and array forms agree
    f = compiler.compile(sstr(expr), {"P_peak": 2.5, "beta_hbm": 0.5}, ("T",))
    g = compiler.compile(sstr(expr), {"P_peak": 2.5, "beta_hbm": 0.5}, ("T",), array=True)
    assert f(7.0) == pytest.approx(want)
    import numpy as np

    xs = np.array([1.0, 7.0, 10.0])
    assert g(xs) == pytest.approx([float(expr.subs({a: 2.5, b: 0.5, t: x})) for x in xs])


def test_compiling_folds_the_bound_names():
    """Everything bound is folded at compile time: a text with no free name is a constant,
    and a missing name is an error then, not at evaluation."""
    f = compiler.compile("2*d_in*d_out + Max(3, d_in)", {"d_in": 5, "d_out": 7})
    assert f() == 75
    with pytest.raises(KeyError):
        compiler.compile("x + y", {"x": 1}, ())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert arith.value("Min(1, 2, 3)", {}) == 1.0


def test_compiled_and_mapped_forms_equal_reading_the_text_point_by_point():
    """Every shipped form of a windowed model behind an L2 (each attention mode's operations,
    their cache levels; the memory in use), compiled with its polynomials collected
    (``compile``) and mapped over many prompt lengths at once (``compile_each``), equals the
    text read node by node at each point (``value``: no folding, no collecting)."""
    from roofline.api import setting

    s = setting("H100-SXM", "Gemma-2-9B")
    numbers = s.numbers()
    prompts = [1.0, 7.0, 128.0, 129.0, 4095.0, 4097.0, 300_000.0]
    texts = [s.forms[k] for k in ("weights", "kv_cache", "scores")]
    for ops in s.forms["prefill"].values():
        texts += [t for op in ops
                  for t in (op["flops"], op["bytes"], *op.get("levels", {}).values())]
    for text in texts:
        by_node = [arith.value(text, {**numbers, "T": t}) for t in prompts]
        mapped = compiler.compile_each(text, numbers, "T")(prompts)
        assert mapped == pytest.approx(by_node, rel=1e-12)
        one = compiler.compile(text, numbers, ("T",))
        assert [one(t) for t in prompts] == pytest.approx(by_node, rel=1e-12)


@pytest.mark.parametrize("text, at, expected", [
    ("3 + 0*T", 2.0, 3.0),  # a polynomial that collects to a constant
    ("(2*T + Max(T, 3)) + 1 - 2*T", 5.0, 6.0),  # collected across a term that is not one
    ("(T + 1)**3 / 2", 1.0, 4.0), ("-(T**2) + T", 3.0, -6.0)])
def test_collected_polynomials_by_hand(text, at, expected):
    assert compiler.compile(text, {}, ("T",))(at) == expected
    assert compiler.compile_each(text, {}, "T")([at, at]) == [expected, expected]


def test_a_shipped_line_is_its_data_with_repeated_subtrees_written_once():
    """Packing a line's data and reading it back gives the same data, each repeated subtree one
    object (folded once); the line is smaller than the data written out in full; a subtree
    that occurs once stays in place."""
    from roofline.evaluate.sharing import pack

    key = forms.arch_key(Architecture(), ("l2",))
    prefix = b'{"key":' + json.dumps(key).encode()
    line, = [ln for ln in _lines()[2:] if ln.startswith(prefix + b',"crossovers"')]
    packed = json.loads(line)["crossovers"]
    data = unpack(packed)
    assert unpack(json.loads(json.dumps(pack(data)))) == data
    assert len(line) < len(json.dumps(data, separators=(",", ":"))) * 3 // 4
    # the same subtree, by value, is the same object wherever it is met
    seen: dict[str, list] = {}
    repeated = 0

    def walk(node):
        nonlocal repeated
        if type(node) is list:
            text = json.dumps(node)
            if text in seen:
                repeated += 1
                assert seen[text] is node
            seen[text] = node
            for child in node:
                walk(child)
    for c in data.values():
        walk(c["grows"])
        walk(c["other"])
    assert repeated > 100
    once = {"a": ["+", 1, "x"], "b": [["Max", 1, 2.0], ["Max", 1, 2]],  # 2 and 2.0 told apart
            "c": [["*", 0.0, "x"], ["*", -0.0, "x"]]}  # and 0.0 and -0.0
    assert pack(once) == {"shared": [], "data": once}
    assert str(unpack(pack(once))["c"][1][1]) == "-0.0"


@pytest.mark.parametrize("bad", [{"@": 0}, {"@": -1}, {"@": "0"}, {"@": True}, {"@": 1.0},
                                 {"@": 0, "x": 1}])
def test_a_reference_to_no_earlier_subtree_is_refused(bad):
    """A shipped line whose reference points at no earlier table entry (a tampered file)."""
    with pytest.raises(ValueError, match="^not a reference"):
        unpack({"shared": [["+", 1, bad]], "data": {"x": {"@": 0}}})


def _doubling(depth: int) -> dict:
    """A line of 2 + 3·depth entries whose last entry expands to 2^depth nodes and more."""
    shared = [["+", "x", 1]] + [["+", {"@": k}, {"@": k}] for k in range(depth)]
    return {"shared": shared, "data": {"x": {"@": depth}}}


@pytest.mark.parametrize("bad", [
    None, [], {"data": 1}, {"shared": "ab", "data": {"@": 1}}, {"shared": [1], "data": 1},
    {"shared": [], "data": functools.reduce(lambda tree, _: [tree], range(5000), 1)},
    _doubling(60)])
def test_a_malformed_line_is_refused(bad):
    """No table, a table that is not a list of lists, a line nested past the interpreter's
    depth, references to references that would expand to 2^60 nodes: one ValueError each, at
    once (the doubling line is refused after 24 of its entries)."""
    with pytest.raises(ValueError, match="^not a"):
        unpack(bad)


def test_packing_writes_tuples_as_lists_and_keeps_the_references_key():
    """A tuple is written as JSON writes it, a list; a mapping may not use the key "@"."""
    from roofline.evaluate.sharing import pack

    assert unpack(json.loads(json.dumps(pack({"a": (0, 0), "b": [5], "c": [5]})))) == \
        {"a": [0, 0], "b": [5], "c": [5]}
    with pytest.raises(ValueError, match="the key '@'"):
        pack({"x": [1, 2], "y": {"@": 0}})


def test_a_shared_subtree_is_folded_once():
    """One Folding folds a subtree met in several trees once (the same folded node), and what
    it gives equals compiling each tree on its own."""
    shared = ["*", 2, "a", "T"]
    grows, other = ["+", shared, ["**", shared, 2]], ["Max", shared, "b"]
    folding = compiler.Folding({"a": 3.0, "b": 40.0}, ("T",))
    assert folding.fold(["sqrt", shared])[2][0] is folding.fold(other)[2][0]
    for tree in (grows, other):
        alone = compiler.compile(tree, {"a": 3.0, "b": 40.0}, ("T",))
        assert [folding.one(tree)(t) for t in (1.0, 5.0)] == [alone(t) for t in (1.0, 5.0)]
        assert folding.each(tree)([1.0, 5.0]) == [alone(1.0), alone(5.0)]
    assert folding.one(grows)(5.0) == 30.0 + 900.0  # 2·3·5 + (2·3·5)²
