"""``roofline docs [-o DIR] [--check]`` end to end through main().

The pages are generated once over a small grid and ``docs.generate`` is replaced by that
result, so each command runs in well under a second; ``tests/test_docs.py`` tests the pages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline.cli as cli
from roofline import docs
from roofline.specs.hardware import load_hardware
from roofline.specs.model import load_model


@pytest.fixture(scope="module")
def small_pages() -> dict[str, str]:
    return docs.generate([load_hardware("H100-SXM")], [load_model("Llama-3-8B")])


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch, small_pages: dict[str, str]) -> None:
    if "docs" not in cli._COMMANDS:
        monkeypatch.setattr(cli, "_COMMANDS", (*cli._COMMANDS, "docs"))
    monkeypatch.setattr(docs, "generate", lambda: dict(small_pages))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_docs_writes_every_page_then_nothing(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path, small_pages: dict[str, str]) -> None:
    out = tmp_path / "docs"
    status, stdout, err = _run(capsys, "docs", "-o", str(out))
    assert status == 0 and err == ""
    assert sorted(p.name for p in out.iterdir()) == sorted(small_pages)
    assert f"wrote {out / 'crossovers.md'}" in stdout
    assert stdout.splitlines()[-1] == f"{out}: {len(small_pages)} pages, {len(small_pages)} " \
                                      "written, 0 removed"
    assert (out / "README.md").read_text(encoding="utf-8") == small_pages["README.md"]
    status, stdout, _ = _run(capsys, "docs", "-o", str(out))
    assert status == 0 and stdout == f"{out}: {len(small_pages)} pages, 0 written, 0 removed\n"


def test_default_directory_is_derivations_under_the_current_directory(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    status, _, _ = _run(capsys, "docs")
    assert status == 0 and (tmp_path / "derivations" / "crossovers.md").is_file()
    status, stdout, _ = _run(capsys, "docs", "--check")
    assert status == 0 and stdout.startswith("derivations: ") and "up to date" in stdout


def test_check_passes_on_fresh_pages_and_fails_on_an_edited_copy(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "derivations"
    _run(capsys, "docs", "-o", str(out))
    status, stdout, err = _run(capsys, "docs", "--check", "-o", str(out))
    assert (status, err) == (0, "") and "up to date" in stdout

    page = out / "crossovers.md"
    page.write_text(page.read_text(encoding="utf-8").replace("tokens", "tokenz", 1),
                    encoding="utf-8")
    before = page.read_text(encoding="utf-8")
    status, stdout, err = _run(capsys, "docs", "--check", "-o", str(out))
    assert status == 1 and stdout == ""
    lines = err.splitlines()
    assert lines[0] == f"roofline docs: stale: {page}: differs from the generated text"
    assert lines[-1].startswith("roofline docs: 1 stale page(s); regenerate with")
    assert page.read_text(encoding="utf-8") == before  # --check writes nothing


def test_check_names_missing_and_leftover_pages(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    out = tmp_path / "derivations"
    _run(capsys, "docs", "-o", str(out))
    (out / "bounds.md").unlink()
    (out / "roofline.md").write_text(docs.HEADER + "\n# The roofline\n", encoding="utf-8")
    status, _, err = _run(capsys, "docs", "--check", "-o", str(out))
    assert status == 1
    assert f"stale: {out / 'bounds.md'}: missing" in err
    assert f"stale: {out / 'roofline.md'}: no longer generated" in err
    status, stdout, _ = _run(capsys, "docs", "-o", str(out))
    assert status == 0 and f"removed {out / 'roofline.md'} (no longer generated)" in stdout
    assert _run(capsys, "docs", "--check", "-o", str(out))[0] == 0


def test_check_of_a_missing_directory_names_every_page(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path,
                                                      small_pages: dict[str, str]) -> None:
    status, _, err = _run(capsys, "docs", "--check", "-o", str(tmp_path / "none"))
    assert status == 1 and err.count(": missing") == len(small_pages)


def test_output_that_is_a_file_is_bad_input(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    target = tmp_path / "derivations"
    target.write_text("not a directory", encoding="utf-8")
    for argv in (("docs", "-o", str(target)), ("docs", "--check", "-o", str(target))):
        status, stdout, err = _run(capsys, *argv)
        assert status == 2 and stdout == ""
        assert err == f"roofline: error: --output: must be a folder, not a file (got '{target}')\n"


def test_help_states_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["docs", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "1 with --check when a page is stale" in text and "2 bad input" in text


def _refuse_writes(monkeypatch: pytest.MonkeyPatch, folder: Path, errno: int,
                   after: int | None = None) -> None:
    """Files opened for writing under ``folder`` fail with ``errno``: at once (``after`` None, a
    read-only folder) or once ``after`` bytes are written (a disk that fills up)."""
    import io
    import os

    real_open = io.open

    class Full:
        def __init__(self, f) -> None:
            self.f, self.n = f, 0

        def write(self, data) -> int:
            room = max(after - self.n, 0)
            self.f.write(data[:room])
            self.n += min(room, len(data))
            if len(data) > room:
                raise OSError(errno, os.strerror(errno))
            return len(data)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.f.close()

        def __getattr__(self, name):
            return getattr(self.f, name)

    def refusing(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and str(file).startswith(str(folder)):
            if after is None:
                raise OSError(errno, os.strerror(errno), str(file))
            return Full(real_open(file, mode, *args, **kwargs))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", refusing)


def _one_error_line(status: int, stdout: str, err: str) -> str:
    assert status == 2 and "Traceback" not in err
    assert err.startswith("roofline: error: --output: ") and err.count("\n") == 1, err
    return err


def test_a_read_only_folder_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    out = tmp_path / "docs"
    out.mkdir()
    _refuse_writes(monkeypatch, out, errno.EROFS)
    err = _one_error_line(*_run(capsys, "docs", "-o", str(out)))
    assert "Read-only file system" in err
    assert list(out.iterdir()) == []


def test_a_folder_named_like_a_page_is_one_line_before_any_write(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "docs"
    (out / "README.md").mkdir(parents=True)
    err = _one_error_line(*_run(capsys, "docs", "-o", str(out)))
    assert f"{out / 'README.md'} is a folder" in err
    assert [p.name for p in out.iterdir()] == ["README.md"]  # nothing else written


def test_a_full_disk_is_one_line_and_leaves_no_page_cut_short(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        small_pages: dict[str, str]) -> None:
    import errno

    out = tmp_path / "docs"
    status, _, _ = _run(capsys, "docs", "-o", str(out))
    assert status == 0
    page = max(small_pages, key=lambda name: len(small_pages[name]))
    old = (out / page).read_bytes()
    (out / page).write_bytes(old[: len(old) // 2])  # stale: the command rewrites it
    _refuse_writes(monkeypatch, out, errno.ENOSPC, after=8192)
    err = _one_error_line(*_run(capsys, "docs", "-o", str(out)))
    assert "No space left on device" in err and page in err
    assert (out / page).read_bytes() == old[: len(old) // 2]  # the old text, whole
    assert sorted(p.name for p in out.iterdir()) == sorted(small_pages)  # no temporary file


def test_check_names_a_page_that_is_not_utf8(tmp_path, capsys):
    """A page whose bytes are not UTF-8 is a stale page (exit 1), not a UnicodeDecodeError."""
    from roofline.cli import main

    assert main(["docs", "-o", str(tmp_path)]) == 0
    (tmp_path / "projection.md").write_bytes(b"\xff\xfe not utf-8\n")
    capsys.readouterr()
    assert main(["docs", "--check", "-o", str(tmp_path)]) == 1
    assert "projection.md: differs from the generated text" in capsys.readouterr().err


def test_a_page_that_cannot_be_replaced_leaves_the_folder_as_it_was(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        small_pages: dict[str, str]) -> None:
    # an immutable old page (chattr +i): 8 new pages were written beside it, then the error
    from roofline import output

    out = tmp_path / "docs"
    out.mkdir()
    (out / "levels.md").write_text("old")
    real = output.os.replace

    def refuse(src, dst):
        if Path(dst).name == "levels.md":
            raise PermissionError(1, "Operation not permitted", str(dst))
        real(src, dst)

    monkeypatch.setattr(output.os, "replace", refuse)
    err = _one_error_line(*_run(capsys, "docs", "-o", str(out)))
    assert "Operation not permitted" in err and "levels.md" in err
    assert [(p.name, p.read_text()) for p in out.iterdir()] == [("levels.md", "old")]
