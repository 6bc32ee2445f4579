"""The references: every work the derivations cite is in the list of derivations/README.md,
each repository file at a version; references.bib holds one entry per work and one for the
software; CITATION.cff, pyproject.toml and the BibTeX agree on the version and the repository.

The shipped pages under derivations/ are read as they are (``roofline docs --check`` keeps them
current); the sources come from the catalogue.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

import roofline.cli as cli
from roofline import docs
from roofline.catalog import catalogue
from roofline.docs.pages import bib_entry, bibliography
from roofline.docs.references import RELEASED, REPOSITORY, WORKS, Work

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "derivations"

ARXIV = r"arXiv[ :]?(\d{4}\.\d{4,5})"
DOI = r"\b(10\.\d{4,9}/[^\s,;)]+[^\s,;).])"
FILE = r"[\w/.-]+\.(?:py|cc|cu|h|hpp|cpp)\b"
REPO = r"github\.com/([\w.-]+/[\w-]+)"


@pytest.fixture(scope="module")
def sources() -> str:
    return "\n".join(sorted({entry.source for entry in catalogue().values()}))


@pytest.fixture(scope="module")
def pages() -> str:
    """Every shipped page but the reference list itself."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(PAGES.glob("*.md"))]
    return "\n".join(t.split("\n## References\n")[0] for t in texts)


@pytest.fixture(scope="module")
def listed() -> str:
    """The reference list of derivations/README.md, its Markdown escapes undone."""
    text = (PAGES / "README.md").read_text(encoding="utf-8").split("\n## References\n")[1]
    return re.sub(r"\\(.)", r"\1", text)


# --- the list holds every work cited -------------------------------------------------------------
@pytest.mark.parametrize("pattern", [ARXIV, DOI, REPO])
def test_every_arxiv_id_doi_and_repository_cited_is_listed(pattern: str, sources: str,
                                                           pages: str, listed: str) -> None:
    cited = set(re.findall(pattern, sources + "\n" + pages))
    assert sorted(c for c in cited if c not in listed) == []


def test_the_patterns_find_what_they_look_for(sources: str, pages: str, listed: str) -> None:
    assert {"2407.08608", "2009.05257", "2205.14135"} <= set(re.findall(ARXIV, pages))
    assert "deepseek-ai/DeepEP" in re.findall(REPO, sources)
    assert re.findall(DOI, listed) == ["10.1002/cpe.5547", "10.1147/sj.52.0078"]


def test_the_works_the_issue_named_are_listed(listed: str) -> None:
    for needle in ("2407.08608", "Belady", "10.1147/sj.52.0078", "2009.05257",
                   "Yang, T. Kurth, S. Williams", "Megatron-LM: Training Multi-Billion"):
        assert needle in listed, needle


def test_every_file_a_source_names_is_listed_with_its_repository_and_version(
        sources: str, listed: str) -> None:
    files = set(re.findall(FILE, sources))
    assert "flash_fwd_launch_template.h" in files
    for name in files:
        items = [line for line in listed.splitlines() if name in line]
        assert items, name
        assert all("https://github.com/" in i and re.search(r"\b(tag|commit) \w", i)
                   for i in items), (name, items)


def test_every_repository_in_the_list_is_at_a_tag_or_commit() -> None:
    for work in WORKS:
        if "github.com" in work.url:
            assert re.search(r"\b(tag v[\w.-]+|commit [0-9a-f]{40})\b", work.version), work.label


# --- the labels --------------------------------------------------------------------------------
def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0 and text.count("'") % 2 == 0 and text.count('"') % 2 == 0


def test_labels_are_whole_unique_and_each_names_a_work_a_source_cites(sources: str) -> None:
    labels = [w.label for w in WORKS]
    assert len(set(labels)) == len(labels)
    for label in labels:
        assert label == label.strip() and _balanced(label), label
        assert label in sources, label
    assert not _balanced("Megatron-LM (Shoeybi")  # the cut-off label of before


# --- references.bib ----------------------------------------------------------------------------
ENTRY = re.compile(r"^@(\w+)\{([\w-]+),\n(.*?)\n\}$", re.S | re.M)
FIELD = re.compile(r"^  (\w+) = \{(.*)\},?$")


def parse_bib(text: str) -> dict[str, dict[str, str]]:
    """key → fields ("type" too) of every entry; each field one line, braces balanced."""
    found = {}
    for kind, key, body in ENTRY.findall(text):
        assert key not in found, key
        fields = {"type": kind}
        for line in body.split("\n"):
            name, value = FIELD.match(line).groups()
            assert value.count("{") == value.count("}"), (key, name)
            fields[name] = value
        found[key] = fields
    return found


def test_the_parser_catches_a_broken_entry() -> None:
    assert list(parse_bib("@misc{a,\n  title = {{A}},\n  year = {2020}\n}")) == ["a"]
    with pytest.raises(AssertionError):
        parse_bib("@misc{a,\n  title = {{A},\n  year = {2020}\n}")


def test_the_bib_holds_the_software_then_one_entry_per_work() -> None:
    text = bibliography()
    entries = parse_bib(text)
    assert list(entries) == ["roofline", *(w.key for w in WORKS)]
    assert text.count("\n@") == len(entries)  # no entry the parser skipped
    for key, fields in entries.items():
        assert fields["title"].startswith("{") and fields["year"].isdigit(), key
    for work in WORKS:
        fields = entries[work.key]
        assert str(work.year) == fields["year"]
        assert (work.arxiv or None) == fields.get("eprint"), work.key
        assert (work.doi or None) == fields.get("doi"), work.key


def test_the_bib_escapes_what_bibtex_would_read() -> None:
    work = Work("x", "x", "software", "A & B", url="https://e.org/a_b", version="tag v1",
                note="get_pp_indices, 5%")
    fields = parse_bib(bib_entry(work))["x"]
    assert fields["title"] == r"{A \& B}" and fields["url"] == "https://e.org/a_b"
    assert fields["note"] == r"tag v1; get\_pp\_indices, 5\%"
    assert parse_bib(bib_entry(WORKS[0]))[WORKS[0].key]["author"] == \
        "H. Liu and M. Zaharia and P. Abbeel"
    group = next(w for w in WORKS if w.authors == ("DeepSeek-AI",))
    assert parse_bib(bib_entry(group))[group.key]["author"] == "{DeepSeek-AI}"


def test_the_shipped_bib_is_the_generated_one() -> None:
    assert (PAGES / "references.bib").read_text(encoding="utf-8") == bibliography()


# --- the software: CITATION.cff, pyproject.toml, the BibTeX -------------------------------------
def _cff(name: str) -> str:
    (value,) = re.findall(rf"^{name}: \"?([^\"\n]+)\"?$", (ROOT / "CITATION.cff").read_text(
        encoding="utf-8"), flags=re.M)
    return value


def test_citation_cff_bib_and_pyproject_agree_on_version_repository_and_year() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert _cff("version") == project["version"] == version("roofline")
    assert _cff("repository-code") == project["urls"]["Repository"] == REPOSITORY
    assert int(_cff("date-released")[:4]) == RELEASED
    software = parse_bib(bibliography())["roofline"]
    assert software["version"] == project["version"] and software["year"] == str(RELEASED)
    assert software["url"] == REPOSITORY
    assert software["author"] == "{The roofline developers}"
    assert "name: The roofline developers" in (ROOT / "CITATION.cff").read_text(encoding="utf-8")


# --- roofline docs writes and checks the .bib ----------------------------------------------------
def test_docs_writes_the_bib_and_check_finds_it_stale(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    if "docs" not in cli._COMMANDS:
        monkeypatch.setattr(cli, "_COMMANDS", (*cli._COMMANDS, "docs"))
    monkeypatch.setattr(docs, "generate", lambda: {"README.md": docs.HEADER + "\n",
                                                   "references.bib": bibliography()})
    out = tmp_path / "derivations"
    assert cli.main(["docs", "-o", str(out)]) == 0
    assert (out / "references.bib").read_text(encoding="utf-8") == bibliography()
    (out / "references.bib").write_text("@misc{x,\n}\n", encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["docs", "--check", "-o", str(out)]) == 1
    assert f"stale: {out / 'references.bib'}: differs" in capsys.readouterr().err
