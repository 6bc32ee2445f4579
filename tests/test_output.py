"""roofline.output: the checks of a target made before any work, and the atomic write (text or
bytes; the temporary file removed on any exception, KeyboardInterrupt included; an
operating-system error as one line naming the path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roofline import output as O
from roofline.errors import InputError, RooflineError


def test_write_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "sub" / "hw.toml"
    assert O.write_atomic(target, "a = 1\n") == target
    assert target.read_text() == "a = 1\n"

    def fail(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(O.os, "replace", fail)
    with pytest.raises(RooflineError) as info:  # one line naming the path and the reason
        O.write_atomic(target, "a = 2\n")
    assert str(info.value) == f"{target}: cannot write the file: No space left on device"
    with pytest.raises(InputError) as info:  # with the argument to name: an InputError
        O.write_atomic(target, "a = 2\n", argument="output")
    assert str(info.value) == (f"output: cannot write the file: No space left on device "
                               f"(got '{target}')")
    assert target.read_text() == "a = 1\n"  # the old file is intact
    assert [p.name for p in target.parent.iterdir()] == ["hw.toml"]  # no temporary left


def test_write_atomic_check_runs_before_the_rename(tmp_path: Path) -> None:
    target = tmp_path / "hw.toml"
    target.write_text("old\n")
    seen: list[str] = []

    def refuse(tmp: Path) -> None:
        seen.append(tmp.read_text())
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        O.write_atomic(target, "new\n", check=refuse)
    assert seen == ["new\n"]  # the check read the text about to be renamed
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["hw.toml"]


def test_check_output_file(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    for target in (a_file / "x.toml", a_file / "sub" / "x.toml"):
        with pytest.raises(InputError) as info:
            O.check_target(target)
        assert str(info.value) == (f"output: cannot write there: {a_file} is a file, not a folder "
                                   f"(got '{target}')")
    with pytest.raises(InputError, match=r"^output: must name a \.toml file"):
        O.check_target(tmp_path / "x.json", suffix=".toml")
    (tmp_path / "d.toml").mkdir()
    with pytest.raises(InputError, match=r"^output: is a folder; give a file name"):
        O.check_target(tmp_path / "d.toml")
    assert O.check_target(tmp_path / "new" / "deeper" / "x.toml").name == "x.toml"
    assert not (tmp_path / "new").exists()  # a check creates nothing


def test_check_output_folder(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    with pytest.raises(InputError, match=r"^output: must be a folder, not a file"):
        O.check_target(a_file, "folder")
    with pytest.raises(InputError) as info:
        O.check_target(a_file / "v", "folder")
    assert str(info.value) == (f"output: cannot write there: {a_file} is a file, not a folder "
                               f"(got '{a_file / 'v'}')")
    (tmp_path / "v" / "validation.md").mkdir(parents=True)
    with pytest.raises(InputError) as info:
        O.check_target(tmp_path / "v", "folder", contents=["validation.md"])
    assert str(info.value) == (f"output: {tmp_path / 'v' / 'validation.md'} is a folder; "
                               f"a file is written there (got '{tmp_path / 'v'}')")
    assert O.check_target(tmp_path / "w", "folder", contents=["validation.md"]) == tmp_path / "w"


def test_check_output_folder_not_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(O.os, "access", lambda path, mode: False)  # as a read-only folder says
    with pytest.raises(InputError) as info:
        O.check_target(tmp_path / "x.toml")
    assert str(info.value) == (f"output: cannot write there: the folder {tmp_path} is not writable "
                               f"(got '{tmp_path / 'x.toml'}')")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_check_output_unwritable_folder(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(InputError, match="is not writable"):
            O.check_target(locked / "x.toml")
    finally:
        locked.chmod(0o700)


def test_write_atomic_bytes_and_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "fig.png"
    O.write_atomic(target, b"\x89PNG")
    assert target.read_bytes() == b"\x89PNG"

    def interrupted(tmp: Path) -> None:
        assert tmp.exists() and tmp.parent == tmp_path  # a temporary in the same folder
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        O.write_atomic(target, b"new", check=interrupted)
    assert target.read_bytes() == b"\x89PNG" and [p.name for p in tmp_path.iterdir()] == [
        "fig.png"]


def test_write_atomic_under_a_file(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    with pytest.raises(InputError) as info:
        O.write_atomic(a_file / "sub" / "x.md", "text", argument="output")
    message = str(info.value)
    assert message.startswith("output: cannot write the file: ") and "\n" not in message
    assert message.endswith(f"(got '{a_file / 'sub' / 'x.md'}')")


def test_check_target_names_its_argument(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^report: must name a \.md file"):
        O.check_target(tmp_path / "x.txt", suffix=".md", argument="report")
    with pytest.raises(ValueError, match="what must be 'file' or 'folder'"):
        O.check_target(tmp_path, "link")


def _state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_write_all_is_all_or_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `docs -o` wrote 8 pages and stopped at one it could not replace (an immutable file): the
    # folder then held half of the new pages beside the old
    for name, text in (("a.md", b"old a"), ("c.md", b"old c"), ("gone.md", b"old gone")):
        (tmp_path / name).write_bytes(text)
    before = _state(tmp_path)
    files = {tmp_path / "a.md": b"new a", tmp_path / "b.md": b"new b",
             tmp_path / "c.md": b"new c", tmp_path / "gone.md": None}
    real = os.replace

    def refuse_c(src, dst):
        if Path(dst).name == "c.md":
            raise PermissionError(1, "Operation not permitted", str(dst))
        real(src, dst)

    monkeypatch.setattr(O.os, "replace", refuse_c)
    with pytest.raises(InputError, match=r"^output: cannot write the file: Operation not "
                                         rf"permitted \(got '{tmp_path / 'c.md'}'\)$"):
        O.write_all(files)
    assert _state(tmp_path) == before  # a.md and b.md put back; no temporary file left
    monkeypatch.setattr(O.os, "replace", real)
    O.write_all(files)
    assert _state(tmp_path) == {"a.md": b"new a", "b.md": b"new b", "c.md": b"new c"}


def test_write_all_stops_before_any_rename_where_a_write_fails(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "a.md").write_bytes(b"old a")
    real = Path.write_bytes

    def full(self, data):
        if self.name.startswith(".b.md"):
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(InputError, match=rf"No space left on device \(got '{tmp_path / 'b.md'}'\)"):
        O.write_all({tmp_path / "a.md": b"new a", tmp_path / "b.md": b"new b"})
    assert _state(tmp_path) == {"a.md": b"old a"}
