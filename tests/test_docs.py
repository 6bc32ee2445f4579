"""roofline.docs: the generated Markdown parses, cites the catalogue's own expressions, and its
worked examples agree with hand-expanded numbers.

The pages are generated once per module over a small grid (three devices, two models) to keep
the file fast; ``roofline docs --check`` in CI covers the full grid.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import sympy
from sympy import Symbol, cancel, factor_terms, parse_expr, simplify

from roofline import docs
from roofline.catalog import TOPICS, catalogue
from roofline.derive.architecture import Architecture
from roofline.derive.crossovers import crossovers
from roofline.errors import InputError
from roofline.specs.hardware import load_hardware
from roofline.specs.model import load_model
from roofline.symbols import d_in, d_out, latex, local_dict

GRID = (["H100-SXM", "Gaudi2", "A100-80GB-SXM"], ["Llama-3-8B", "Llama-2-70B"])


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    hardware = [load_hardware(n) for n in GRID[0]]
    models = [load_model(n) for n in GRID[1]]
    return docs.generate(hardware, models)


# --- a small Markdown reader (independent of the generator) -------------------------------------
def _slug(heading: str) -> str:
    """GitHub's heading id: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(text: str) -> list[str]:
    explicit = re.findall(r'<a id="([^"]+)"></a>', text)
    headings = [_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)]
    return explicit + headings


def _math_blocks(text: str) -> list[str]:
    return re.findall(r"^\$\$\n(.+)\n\$\$$", text, flags=re.M)


def _sections(text: str) -> dict[str, str]:
    """Explicit anchor → the text up to the next explicit anchor."""
    parts = re.split(r'^<a id="([^"]+)"></a>$', text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def _cells(line: str) -> list[str]:
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def _tables(text: str) -> list[list[list[str]]]:
    out, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append(_cells(line))
        elif current:
            out.append(current)
            current = []
    return out


def _sympy_form(section: str) -> str:
    (code,) = re.findall(r"```python\n(.+?)\n```", section, flags=re.S)
    return code


# --- structure -----------------------------------------------------------------------------------
def test_one_page_per_topic_and_an_index(pages: dict[str, str]) -> None:
    assert sorted(pages) == sorted(["README.md", *(f"{t}.md" for t in TOPICS), "references.bib"])
    assert sorted(pages) == sorted(docs.page_names())  # what docs checks before any work
    for name, text in pages.items():
        if name.endswith(".bib"):  # BibTeX: tests/test_references.py
            continue
        assert text.startswith(docs.HEADER + "\n"), name
        assert text.endswith("\n") and not text.endswith("\n\n"), name
        assert "\n\n\n" not in text, name
    for topic in TOPICS:
        assert f"]({topic}.md)" in pages["README.md"]


def test_every_math_block_is_closed_and_stands_alone(pages: dict[str, str]) -> None:
    for name, text in pages.items():
        lines = text.splitlines()
        marks = [i for i, line in enumerate(lines) if line == "$$"]
        assert len(marks) % 2 == 0, name
        for start, end in zip(marks[::2], marks[1::2]):
            assert end == start + 2, (name, start)  # one line of LaTeX inside
            assert lines[start - 1] == "" and lines[end + 1] == "", (name, start)
            assert lines[start + 1].strip() and "$$" not in lines[start + 1]
        outside = [line for i, line in enumerate(lines) if i not in marks]
        assert not any("$$" in line for line in outside), name
        assert len(_math_blocks(text)) == len(marks) // 2


def test_every_anchor_is_unique_and_every_link_lands(pages: dict[str, str]) -> None:
    for name, text in pages.items():
        anchors = _anchors(text)
        assert len(anchors) == len(set(anchors)), [a for a in anchors if anchors.count(a) > 1]
        for target in re.findall(r"\]\(#([^)]+)\)", text):
            assert target in anchors, (name, target)
        for page, target in re.findall(r"\]\(([\w]+\.md)#([^)]+)\)", text):
            assert target in _anchors(pages[page]), (name, page, target)


def test_every_table_is_rectangular(pages: dict[str, str]) -> None:
    count = 0
    for name, text in pages.items():
        for table in _tables(text):
            widths = {len(row) for row in table}
            assert len(widths) == 1, (name, table[0])
            assert all(re.fullmatch(r"-+", c) for c in table[1]), (name, table[1])
            count += 1
    assert count > len(catalogue())  # a symbol table per entry, the index, the crossover tables


def test_every_entry_has_its_anchor_in_its_topic_page(pages: dict[str, str]) -> None:
    for name, entry in catalogue().items():
        assert f'<a id="{docs.anchor(name)}"></a>' in pages[f"{entry.topic}.md"], name
    assert docs.anchor("crossover.decode_critical_batch") == "decode_critical_batch"
    assert docs.anchor("attention.tiled.bytes") == "attention.tiled.bytes"


# --- the LaTeX is sympy.latex of the catalogue's expression --------------------------------------
def test_a_formula_reads_back_and_typesets_as_sympy_does(pages: dict[str, str]) -> None:
    section = _sections(pages["projection.md"])["projection.flops"]
    expr = parse_expr(_sympy_form(section), local_dict=local_dict())
    assert expr == catalogue()["projection.flops"].expr
    names = {d_in: r"d_{\mathrm{in}}", d_out: r"d_{\mathrm{out}}"}
    assert _math_blocks(section)[0] == sympy.latex(expr, symbol_names=names)
    assert _math_blocks(section)[0] == r"2 T d_{\mathrm{in}} d_{\mathrm{out}}"


def _page_branches() -> dict[str, object]:
    """The branch each crossover's section shows: the one whose choices hold at the worked
    example where there is a crossover there, else the catalogue's main one."""
    from roofline.docs.crossover_section import _crossover_value
    from roofline.docs.example import build

    example = build()
    from roofline.derive.crossovers import catalogued

    found = catalogued()
    out = {}
    for name, c in found.items():
        v, _ = _crossover_value(c, example)
        choice = tuple(int(i) for i in v.branch.split(",")) if v.branch else ()
        out[name] = c.branch(choice) if v.exists and v.expr else c.main_branch
    return out


def test_every_statement_is_the_latex_of_the_catalogue_expression(pages: dict[str, str]) -> None:
    """Each formula's section states the catalogue's expression; a crossover's, the closed form
    of the branch that holds at the worked example (the catalogue's where it is the main one)."""
    branches = _page_branches()
    for name, entry in catalogue().items():
        section = _sections(pages[f"{entry.topic}.md"])[docs.anchor(name)]
        parsed = parse_expr(_sympy_form(section), local_dict=local_dict())
        expr = branches[docs.anchor(name)].root if entry.topic == "crossovers" else entry.expr
        assert parsed == expr or simplify(parsed - expr) == 0, name
        blocks = _math_blocks(section)
        assert latex(expr) in blocks or any(latex(expr) in b for b in blocks), name


def test_a_crossover_is_its_root_formula_with_the_coefficients_put_in(
        pages: dict[str, str]) -> None:
    sections = _sections(pages["crossovers.md"])
    branches = _page_branches()
    a2, a1, a0 = (Symbol(n) for n in ("a_2", "a_1", "a_0"))
    for name, c in crossovers(Architecture(), ("l2",)).items():  # the catalogue's
        blocks = _math_blocks(sections[name])
        x = c.unknown
        formula = parse_expr(blocks[0].split(" = ", 1)[1]
                             .replace(r"\frac{- a_{1} + \sqrt{- 4 a_{0} a_{2} + a_{1}^{2}}}"
                                      r"{2 a_{2}}", "(-a_1 + sqrt(a_1**2 - 4*a_0*a_2))/(2*a_2)")
                             .replace(r"- \frac{a_{0}}{a_{1}}", "-a_0/a_1"),
                             local_dict={"a_2": a2, "a_1": a1, "a_0": a0})
        star = Symbol(f"{x}^*")  # T^{*}; a subscripted name as SymPy sets it, N^{*}_{tp}
        assert blocks[0].startswith(f"{latex(star)} = ")
        branch = branches[name]
        coeffs = [factor_terms(k) for k in branch.coefficients]
        for symbol, k in zip((a2, a1, a0), coeffs):
            line = f"{latex(symbol)} = {latex(k)}"
            assert (line in blocks) == (k != 0 or symbol != a2), (name, symbol)
        root = formula.subs(dict(zip((a2, a1, a0), coeffs)), simultaneous=True)
        expected = branch.root  # a latency that may be 0: the quadratic case of its Piecewise
        if isinstance(expected, sympy.Piecewise):
            expected = expected.args[-1][0]
        assert cancel(root - expected) == 0, name


# --- the worked examples, against hand-expanded numbers -----------------------------------------
def _example(section: str) -> str:
    (line,) = [ln for ln in section.splitlines() if ln.startswith("**Worked example**")]
    return line


def test_worked_examples_match_hand_expanded_numbers(pages: dict[str, str]) -> None:
    proj = _sections(pages["projection.md"])
    # 2·T·d_in·d_out with T = 2048, d_in = D = 4096, d_out = F = 14336
    assert "**240,518,168,576 FLOP (240.5 GFLOP)**" in _example(proj["projection.flops"])
    assert "4,096 (D" in proj["projection.flops"] and "14,336 (F)" in proj["projection.flops"]
    # KV cache 2·B·L·n_kv·H·T·b_kv = 2·1·32·8·128·2048·2
    kv = _sections(pages["decode.md"])["kv_cache.bytes"]
    assert f"**{2 * 32 * 8 * 128 * 2048 * 2:,} bytes" in _example(kv)
    # ridge 989.4e12 / 3.35e12
    ridge = _sections(pages["bounds.md"])["roofline.ridge"]
    assert f"**{989.4e12 / 3.35e12:.4g} FLOP/byte**" in _example(ridge)


def test_projection_crossover_matches_a_hand_solution(pages: dict[str, str]) -> None:
    # Llama-3-8B, one layer: W weight elements, A = Σ (d_in + d_out); 2TW = r(2W + 2TA)
    D, F, n_q, n_kv, H = 4096, 14336, 32, 8, 128
    widths = [(D, (n_q + 2 * n_kv) * H), (n_q * H, D), (D, 2 * F), (F, D)]
    W = sum(i * o for i, o in widths)
    A = sum(i + o for i, o in widths)
    r = 989.4e12 / 3.35e12
    tokens = r * W / (W - r * A)
    section = _sections(pages["crossovers.md"])["projection_compute_bound_tokens"]
    assert f"**T\\* = {tokens:,.0f} tokens**" in _example(section)
    table = pages["crossovers.md"].split('<a id="crossover-table"></a>')[1]
    llama = table.split("### Llama-3-8B")[1]
    row = next(r for r in _tables(llama)[0]
               if r[0].strip() == "H100-SXM" and r[1].strip() == "bf16")
    assert row[3].strip() == f"{tokens:,.0f}"


def test_queueing_example_is_one_and_a_half_prefill_times_at_load_one_half(
        pages: dict[str, str]) -> None:
    section = _sections(pages["service.md"])["service.ttft.md1"]
    t_pre = float(re.search(r"\| `t_pre` .*\| ([\d.]+) ms", section).group(1))
    ttft = float(re.search(r"\*\*([\d.]+) ms\*\*", _example(section)).group(1))
    assert ttft == pytest.approx(1.5 * t_pre, rel=1e-3)  # D + R·D²/(2(1 − R·D)) at R·D = 1/2


# --- the crossover table -------------------------------------------------------------------------
def test_crossover_table_covers_the_grid_and_marks_missing_numbers(
        pages: dict[str, str]) -> None:
    table = pages["crossovers.md"].split('<a id="crossover-table"></a>')[1]
    assert "roofline crossover --hardware DEVICE --model MODEL" in table
    for model in GRID[1]:
        (rows,) = _tables(table.split(f"### {model}\n")[1].split("###")[0])
        keys = [(r[0].strip(), r[1].strip()) for r in rows[2:]]
        # bf16 everywhere, fp8 where the device has it (the A100 has none)
        assert keys == [("A100-80GB-SXM", "bf16"), ("Gaudi2", "bf16"), ("Gaudi2", "fp8"),
                        ("H100-SXM", "bf16"), ("H100-SXM", "fp8")]
        header = [h.strip() for h in rows[0]]
        kernel = [i for i, h in enumerate(header) if "(kernel)" in h]
        assert len(kernel) == 3
        cache = next(i for i in kernel if "cache" in header[i])
        gaudi = rows[3]  # no SRAM per SM and no SM count in Gaudi2's file: its 48 MB of on-die
        # SRAM is an L2 without the thread blocks in flight, so no cache level is modelled
        assert gaudi[cache].strip() == "–"
        assert all(gaudi[i].strip() != "–" for i in kernel if i != cache)  # kernel needs no M
        assert all(rows[5][i].strip() not in ("–", "never") for i in kernel)  # H100-SXM bf16
    seventy = table.split("### Llama-2-70B\n")[1]
    h100 = next(r for r in _tables(seventy)[0] if r[0].strip() == "H100-SXM" and
                r[1].strip() == "bf16")
    assert h100[-2].strip() == "weights alone exceed memory"  # 2 bytes × 69 B parameters > 80 GB
    assert "–: not evaluated" in table


# --- sources: public works only ------------------------------------------------------------------
def test_pages_cite_nothing_outside_the_repository(pages: dict[str, str]) -> None:
    # a user's clone has only the repository: no team notes, reference tables or seed documents
    for name, text in pages.items():
        for word in ("DOMAIN", "shared/", "seed", ".csv", "reference/"):
            assert word not in text, (name, word)


def test_every_source_names_a_work_of_the_references(pages: dict[str, str]) -> None:
    from roofline.docs.references import REFERENCES

    for name, entry in catalogue().items():
        assert any(work in entry.source for work, _ in REFERENCES), (name, entry.source)
    listed = pages["README.md"].split("## References")[1]
    for work, text in REFERENCES:
        assert docs._md(text) in listed, work


# --- determinism, writing and checking -----------------------------------------------------------
def test_generation_is_deterministic(pages: dict[str, str]) -> None:
    again = docs.generate([load_hardware(n) for n in GRID[0]], [load_model(n) for n in GRID[1]])
    assert again == pages
    # no date of generation (a cited page's address may hold its own publication date)
    text = re.sub(r"https?://\S+", "", "".join(pages.values()))
    assert not re.search(r"20\d\d-\d\d-\d\d", text)


def test_write_then_stale_reports_each_kind_of_difference(pages: dict[str, str],
                                                         tmp_path: Path) -> None:
    out = tmp_path / "derivations"
    written, removed = docs.write(out, pages)
    assert written == sorted(pages) and removed == []
    assert docs.stale(out, pages) == []
    assert docs.write(out, pages) == ([], [])

    edited = out / "crossovers.md"
    edited.write_text(edited.read_text(encoding="utf-8").replace("326", "327", 1),
                      encoding="utf-8")
    (out / "decode.md").unlink()
    (out / "old.md").write_text(docs.HEADER + "\n# gone\n", encoding="utf-8")
    (out / "notes.md").write_text("# mine\n", encoding="utf-8")
    assert docs.stale(out, pages) == [("crossovers.md", "differs from the generated text"),
                                      ("decode.md", "missing"),
                                      ("old.md", "no longer generated")]
    written, removed = docs.write(out, pages)
    assert written == ["crossovers.md", "decode.md"] and removed == ["old.md"]
    assert (out / "notes.md").exists() and docs.stale(out, pages) == []


def test_write_refuses_a_file_as_directory(pages: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "file.md"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match=r"^output: must be a folder, not a file \(got '.*file\.md'\)$"):
        docs.write(target, pages)


def test_markdown_escaping() -> None:
    assert docs._md("F = 2*T*d_in | <x>") == r"F = 2\*T\*d\_in \| \<x\>"


def test_citation_file_names_the_package_version() -> None:
    import tomllib

    root = Path(__file__).resolve().parents[1]
    cff = (root / "CITATION.cff").read_text(encoding="utf-8")
    version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"]
    assert re.search(rf"^version: {re.escape(version)}$", cff, flags=re.M)
    assert re.search(r"^title: roofline$", cff, flags=re.M)
    assert re.search(r'^date-released: "\d{4}-\d\d-\d\d"$', cff, flags=re.M)
    assert "  - name: The roofline developers" in cff and "license: MIT" in cff
    assert "If you use these formulas or figures, please cite" in " ".join(cff.split())


def test_the_default_pages_are_kept_and_read_back(tmp_path, monkeypatch):
    """A second ``roofline docs`` reads the pages kept in the user's cache instead of deriving
    them again; a page made from other sources (another key) or a kept file altered by hand is
    made afresh."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    made = []

    def fake(hardware, models):
        made.append((hardware, models))
        return {"README.md": f"pages {len(made)}\n"}

    monkeypatch.setattr(docs, "_generate", fake)
    monkeypatch.setattr(docs, "pages_key", lambda: "one")
    assert docs.generate() == {"README.md": "pages 1\n"}
    assert docs.generate() == {"README.md": "pages 1\n"} and len(made) == 1
    (kept,) = tmp_path.rglob("pages-one.json")
    kept.write_text(kept.read_text().replace("pages 1", "pages 9"))
    assert docs.generate() == {"README.md": "pages 2\n"}  # its digest no longer matches
    monkeypatch.setattr(docs, "pages_key", lambda: "two")
    assert docs.generate() == {"README.md": "pages 3\n"}
    assert docs.generate([], []) == {"README.md": "pages 4\n"}  # a grid of one's own: not kept


def test_the_pages_key_follows_the_sources_and_the_data(tmp_path, monkeypatch):
    """The key changes with a shipped data file (a hardware file here), not by itself."""
    from roofline.specs import _shipped

    assert docs.pages_key() == docs.pages_key()
    copy = tmp_path / "hardware"
    shutil.copytree(_shipped.shipped_dir("hardware"), copy)
    real = _shipped.shipped_dir
    monkeypatch.setattr(_shipped, "shipped_dir",
                        lambda kind: copy if kind == "hardware" else real(kind))
    first = docs.pages_key()
    with (copy / "H100-SXM.toml").open("a") as f:
        f.write("\n# a comment\n")
    assert docs.pages_key() != first
