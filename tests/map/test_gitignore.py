"""The walk of a workspace that is not a git repository honours .gitignore as git does.

The fixture tree exercises each rule of gitignore(5); the walk's file list must be
exactly what `git ls-files --others --exclude-standard` lists for the same tree.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from map.maptest import git, make_repo, needs_git, write

from ax_map.gitignore import parse_line, translate
from ax_map.inventory import take_inventory

ROOT_IGNORE = "\n".join(
    [
        "# a comment",
        "",
        "*.log",
        "!keep.log",
        "/build/",
        "docs/**/*.tmp",
        "**/cache",
        "out",
        "\\#hash",
        "\\!bang",
        "trailing\\ ",
        "spaces   ",
        "*.[oa]",
        "[!a-c]*.x",
        "lib/**",
        "!lib/keep/",
        "sub/*.txt",
        "foo/",
        "**/deep/**/z.y",
        "a?c.q",
        "\\*star",
        "crlf.tmp\r",
        "dirs/**/",
        "[[:digit:]]*.num",
        "x[",
        "back\\",
    ]
)
SUB_IGNORE = "!important.log\n*.md\n/local\nnested/\n"

FILES = [
    "app.log",
    "keep.log",
    "sub/important.log",
    "sub/x.log",
    "build/a.py",
    "src/build/b.py",
    "docs/a/b/c.tmp",
    "docs/c.tmp",
    "other/c.tmp",
    "x/cache/f.py",
    "cache",
    "out",
    "src/out/f.py",
    "#hash",
    "!bang",
    "trailing ",
    "spaces",
    "m.o",
    "m.a",
    "m.c",
    "d.x",
    "a.x",
    "lib/x.py",
    "lib/keep/y.py",
    "sub/a.txt",
    "sub/deeper/a.txt",
    "foo/f.py",
    "sub2/foo",
    "q/deep/r/s/z.y",
    "deep/z.y",
    "abc.q",
    "a/c.q",
    "sub/README.md",
    "README.md",
    "sub/local",
    "sub/x/local",
    "sub/nested/n.py",
    "sub/y/nested/n.py",
    "*star",
    "crlf.tmp",
    "dirs/a/b.py",
    "dirs/c.py",
    "1.num",
    "a1.num",
    "x[",
    "back\\",
    "plain.py",
]


def _tree(root: Path) -> None:
    write(root, {name: "x\n" for name in FILES})
    (root / ".gitignore").write_bytes(ROOT_IGNORE.encode())
    (root / "sub" / ".gitignore").write_text(SUB_IGNORE)


@needs_git
def test_the_walk_lists_what_git_lists(tmp_path: Path) -> None:
    walked = tmp_path / "walked"
    _tree(walked)
    repo = make_repo(tmp_path / "repo")
    _tree(repo)
    expected = sorted(
        os.fsdecode(p)
        for p in git(repo, "ls-files", "-z", "--others", "--exclude-standard").split(b"\0")
        if p
    )
    listed = sorted(entry.path for entry in take_inventory(walked, os.environ).files)
    assert listed == expected
    # The fixture is not vacuous: both lists drop files and keep re-included ones.
    assert "app.log" not in listed
    assert "keep.log" in listed
    assert "sub/important.log" in listed
    assert len(listed) < len(FILES)


def test_a_gitignore_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    write(tmp_path, {"elsewhere": "*.py\n", "a.py": ""})
    (tmp_path / ".gitignore").symlink_to(tmp_path / "elsewhere")
    listed = {entry.path for entry in take_inventory(tmp_path, os.environ).files}
    assert "a.py" in listed


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "a/b.py", False),
        ("a/**", "a/b/c", True),
        ("a/**", "a", False),
        ("**/b", "b", True),
        ("**/b", "x/y/b", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a**b", "ab", True),
        ("a**b", "a/b", False),
        ("[a-c]x", "bx", True),
        ("[!a-c]x", "dx", True),
        ("[!a-c]x", "/x", False),
        ("[]]x", "]x", True),
        ("[z-a]x", "zx", False),
        ("\\*", "*", True),
        ("\\*", "a", False),
    ],
)
def test_wildmatch_translation(pattern: str, path: str, matches: bool) -> None:
    regex = translate(pattern)
    assert regex is not None
    assert bool(re.fullmatch(regex, path, re.S)) is matches


@pytest.mark.parametrize("line", ["", "# comment", "   ", "x[", "back\\", "!", "/"])
def test_lines_that_match_nothing(line: str) -> None:
    assert parse_line(line) is None
