"""Every worked example in ``derivations/`` reproduces by substitution, read as a reader reads
it: each section's SymPy form (the formula printed), the example column of its symbol table (the
numbers printed, to their four significant digits) and the bold worked example (the value
printed). Substituting the table's numbers into the form gives the value to within the
rounding of the numbers shown. Every worked example of a count of tokens, sequences or devices
is positive, and an entry that says where its form holds (``Entry.holds``) holds at its
example's numbers."""

import re
from pathlib import Path

import pytest
from sympy import Float, Integer, Symbol, oo, parse_expr

from roofline.catalog import catalogue
from roofline.docs.sections import _example_values
from roofline.docs.example import build
from roofline.symbols import local_dict

PAGES = Path(__file__).parents[1] / "derivations"
_PREFIX = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_SI = ("FLOP", "FLOP/s", "B", "B/s")
_TIME = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
TOLERANCE = 5e-3  # four significant digits in each number of the table, several numbers a form


def number(text: str) -> float | None:
    """A number as the pages print it ("4,096", "989.4 TFLOP/s", "35.81 ms", "2 bytes",
    "411 tokens (the crossover)", "∞ (...)"); None where it is no number."""
    text = text.strip().strip("*")
    if text.startswith("∞"):
        return float("inf")
    m = re.match(r"^(-?[\d,]*\.?\d+(?:e[-+]?\d+)?)\s*([^\s(]*)", text)
    if not m:
        return None
    value, unit = float(m.group(1).replace(",", "")), m.group(2)
    if unit in _TIME:
        return value * _TIME[unit]
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1:] in _SI:
        return value * _PREFIX[unit[0]]
    return value


def test_the_reader_of_numbers():
    assert number("4,096 (D: the MLP's gate (or up) projection)") == 4096
    assert number("989.4 TFLOP/s") == pytest.approx(989.4e12)
    assert number("35.81 ms") == pytest.approx(0.03581)
    assert number("**240,518,168,576 FLOP (240.5 GFLOP)**") == 240_518_168_576
    assert number("-1,118 tokens") == -1118 and number("never: the intensity") is None


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r'<a id="([^"]+)"></a>', page)
    return dict(zip(parts[1::2], parts[2::2]))


def _examples():
    for path in sorted(PAGES.glob("*.md")):
        for anchor, section in _sections(path.read_text(encoding="utf-8")).items():
            if "**Worked example**" in section and "```python" in section:
                yield pytest.param(section, id=f"{path.stem}:{anchor}")


def _printed_value(section: str) -> float | None:
    line = next(ln for ln in section.splitlines() if ln.startswith("**Worked example**"))
    bold = re.findall(r"\*\*((?:\\\*|[^*])+)\*\*", line)  # the first bold: the heading
    return number(bold[1].split(" = ", 1)[-1]) if len(bold) > 1 else None  # none: "never"


def _table(section: str) -> dict[str, float]:
    out = {}
    for row in section.split("**Symbols.**", 1)[1].split("\n\n", 2)[1].splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        name = cells[0].strip("`")
        out[name] = number(cells[-1].replace("\\", ""))
    return out


@pytest.mark.parametrize("section", list(_examples()))
def test_a_worked_example_reproduces_from_its_page(section):
    printed = _printed_value(section)
    if printed is None:  # "never": no formula is given a value
        return
    form = section.split("```python", 1)[1].split("```", 1)[0].strip()
    expr = parse_expr(form, local_dict=local_dict())
    table = _table(section)
    def exact(s: Symbol, v: float):
        if v == float("inf"):
            return oo
        return Integer(int(v)) if s.is_integer and v == int(v) else Float(v)

    at = {s: exact(s, table[s.name]) for s in expr.free_symbols if s.name in table}
    assert len(at) == len(expr.free_symbols), sorted(s.name for s in expr.free_symbols)
    value = expr.xreplace(at)
    if value.has(Symbol):  # a sum's index
        value = value.doit()
    assert float(value) == pytest.approx(printed, rel=TOLERANCE), form


def test_every_count_example_is_positive():
    example = build()
    for name, entry in catalogue().items():
        if entry.unit in ("tokens", "sequences", "devices") and not name.startswith("crossover"):
            values, _ = _example_values(entry, example)
            value = entry.expr.xreplace(values)
            assert float(value) > 0, (name, value)


def test_an_entry_holds_where_its_example_is():
    example = build()
    held = [(name, entry) for name, entry in catalogue().items() if entry.holds]
    assert {"projection.intensity.small_T", "mla.absorb.crossover_context"} <= dict(held).keys()
    for name, entry in held:
        values, _ = _example_values(entry, example)
        for condition in entry.holds:
            assert bool(condition.xreplace(values)), (name, condition)
        common = {**example.values}
        assert not all(bool(c.xreplace(common)) for c in entry.holds) or name, name


def test_a_form_evaluated_outside_its_range_is_caught():
    """A negative control: the small-T limit at the documents' common T = 2048 does not hold
    (its activations' bytes are not under a tenth of its weights')."""
    example = build()
    entry = catalogue()["projection.intensity.small_T"]
    assert not all(bool(c.xreplace(example.values)) for c in entry.holds)
    assert Integer(16) in [v for _, v, _ in entry.example]
