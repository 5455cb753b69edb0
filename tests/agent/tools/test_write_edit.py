"""write_file and edit_file on real files: atomic writes, exact edits, helpful misses."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agent.tools.toolkit import Harness

from ax_agent.tools import edit_file, write_file
from ax_agent.tools.edit_file import EDIT_MATCHES_SHOWN, closest_region

WRITE = write_file.TOOL
EDIT = edit_file.TOOL

SOURCE = """\
def add(a, b):
    return a - b


def mul(a, b):
    total = 0
    for _ in range(b):
        total += a
    return total
"""


def test_write_creates_folders_and_keeps_the_mode(harness: Harness, workspace: Path) -> None:
    result = harness.call(WRITE, {"path": "pkg/sub/new.py", "content": "X = 1\nY = 2\n"})
    assert not result.is_error
    assert result.content == "created pkg/sub/new.py (12 bytes, 2 lines)"
    target = workspace / "pkg" / "sub" / "new.py"
    assert target.read_text() == "X = 1\nY = 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    again = harness.call(WRITE, {"path": "run.sh", "content": "#!/bin/sh\necho hi\n"})
    assert again.content.startswith("replaced run.sh")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert not [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")]


def test_write_through_a_link_inside_updates_the_target(harness: Harness, workspace: Path) -> None:
    (workspace / "real.txt").write_text("old\n")
    os.symlink("real.txt", workspace / "alias.txt")
    harness.call(WRITE, {"path": "alias.txt", "content": "new\n"})
    assert (workspace / "alias.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new\n"


def test_write_refusals_write_nothing(harness: Harness, workspace: Path, tmp_path: Path) -> None:
    (workspace / "folder").mkdir()
    assert "is a folder" in harness.call(WRITE, {"path": "folder", "content": "x"}).content
    outside = harness.call(WRITE, {"path": "../escape.txt", "content": "x"})
    assert outside.is_error and "outside the workspace" in outside.content
    assert not (tmp_path / "escape.txt").exists()


def test_edit_replaces_exactly_once_and_shows_the_region(harness: Harness, workspace: Path) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    result = harness.call(
        EDIT, {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    )
    assert not result.is_error
    assert result.summary == "edited calc.py: replaced 1 occurrence"
    assert "     2\t    return a + b" in result.content
    assert (workspace / "calc.py").read_text() == SOURCE.replace("a - b", "a + b")


def test_edit_several_matches_lists_them(harness: Harness, workspace: Path) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    result = harness.call(EDIT, {"path": "calc.py", "old_string": "(a, b)", "new_string": "(x, y)"})
    assert result.is_error
    assert "occurs 2 times" in result.content
    assert "     1\tdef add(a, b):" in result.content
    assert "     5\tdef mul(a, b):" in result.content
    assert "replace_all" in result.content
    assert (workspace / "calc.py").read_text() == SOURCE
    every = harness.call(
        EDIT,
        {"path": "calc.py", "old_string": "(a, b)", "new_string": "(x, y)", "replace_all": True},
    )
    assert every.summary == "edited calc.py: replaced 2 occurrences"
    assert (workspace / "calc.py").read_text().count("(x, y)") == 2


def test_edit_many_matches_are_capped(harness: Harness, workspace: Path) -> None:
    (workspace / "rep.txt").write_text("same\n" * (EDIT_MATCHES_SHOWN + 5))
    result = harness.call(EDIT, {"path": "rep.txt", "old_string": "same", "new_string": "other"})
    assert "… and 5 more" in result.content


def test_edit_no_match_shows_the_closest_region(harness: Harness, workspace: Path) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    result = harness.call(
        EDIT,
        {
            "path": "calc.py",
            "old_string": "    total = 0\n    for _ in range(a):\n        total += a",
            "new_string": "    total = a * b",
        },
    )
    assert result.is_error
    assert "old_string was not found in calc.py" in result.content
    assert "The closest region is lines 6-8" in result.content
    assert "     7\t    for _ in range(b):" in result.content
    assert "-    for _ in range(a):" in result.content
    assert "+    for _ in range(b):" in result.content
    assert (workspace / "calc.py").read_text() == SOURCE


def test_edit_no_match_says_when_only_whitespace_differs(harness: Harness, workspace: Path) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    result = harness.call(
        EDIT, {"path": "calc.py", "old_string": "\treturn a - b", "new_string": "\treturn 0"}
    )
    assert result.is_error
    assert "occur when whitespace is ignored" in result.content
    assert "lines 2-2" in result.content


def test_edit_keeps_windows_line_ends(harness: Harness, workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = harness.call(
        EDIT, {"path": "win.txt", "old_string": "one\ntwo", "new_string": "one\n2"}
    )
    assert not result.is_error, result.content
    assert (workspace / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


def test_edit_refusals(harness: Harness, workspace: Path) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    missing = harness.call(EDIT, {"path": "nope.py", "old_string": "a", "new_string": "b"})
    assert missing.is_error and "write_file" in missing.content
    empty = harness.call(EDIT, {"path": "calc.py", "old_string": "", "new_string": "b"})
    assert empty.is_error and "old_string is empty" in empty.content
    same = harness.call(EDIT, {"path": "calc.py", "old_string": "a", "new_string": "a"})
    assert same.is_error and "the same" in same.content
    (workspace / "blob.bin").write_bytes(b"a\x00b")
    binary = harness.call(EDIT, {"path": "blob.bin", "old_string": "a", "new_string": "b"})
    assert binary.is_error and "binary" in binary.content
    assert (workspace / "calc.py").read_text() == SOURCE


def test_closest_region_finds_a_typo_far_down_a_file() -> None:
    lines = [f"value_{n} = {n}" for n in range(3000)]
    lines[2500] = "def compute_total(items):"
    text = "\n".join(lines)
    region = closest_region(text, "def compute_totl(items):")
    assert region is not None
    first, found, ratio = region
    assert first == 2501 and found == ["def compute_total(items):"]
    assert ratio > 0.9


def test_text_that_is_not_unicode_is_refused(harness: Harness, workspace: Path) -> None:
    lone = "\ud800"
    written = harness.call(WRITE, {"path": "bad.txt", "content": f"a{lone}b"})
    assert written.is_error and "UTF-8" in written.content
    assert not (workspace / "bad.txt").exists()
    (workspace / "ok.txt").write_text("keep\n")
    edited = harness.call(EDIT, {"path": "ok.txt", "old_string": "keep", "new_string": lone})
    assert edited.is_error and "UTF-8" in edited.content
    assert (workspace / "ok.txt").read_text() == "keep\n"
