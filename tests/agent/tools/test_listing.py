"""list_dir and glob: trees and matches from real folders, links never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agent.tools.toolkit import Harness

from ax_agent.tools import glob, list_dir
from ax_agent.tools.glob import GLOB_MAX_RESULTS
from ax_agent.tools.list_dir import LIST_MAX_ENTRIES
from ax_agent.tools.walk import glob_regex


@pytest.fixture
def tree(workspace: Path, tmp_path: Path) -> Path:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("print('app')\n")
    (workspace / "src" / "pkg" / "util.py").write_text("X = 1\n")
    (workspace / "src" / "pkg" / "data.json").write_text("{}\n")
    (workspace / "README.md").write_text("# readme\n" * 200)
    (workspace / ".github" / "workflows").mkdir(parents=True)
    (workspace / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (workspace / "node_modules" / "dep").mkdir(parents=True)
    (workspace / "node_modules" / "dep" / "index.py").write_text("\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "outside.py").write_text("\n")
    os.symlink(elsewhere, workspace / "linked")
    return workspace


def test_list_dir_one_level(harness: Harness, tree: Path) -> None:
    result = harness.call(list_dir.TOOL, {})
    lines = result.content.splitlines()
    assert lines[0] == "./ (5 entries)"
    assert lines[1:] == [
        ".github/",
        "README.md  (1.8 KB)",
        f"linked -> {tree.parent / 'elsewhere'}",
        "node_modules/",
        "src/",
    ]
    assert result.summary == "listed .: 5 entries"


def test_list_dir_deeper_does_not_expand_hidden_or_dependencies(
    harness: Harness, tree: Path
) -> None:
    result = harness.call(list_dir.TOOL, {"path": "src", "depth": 3})
    assert result.content.splitlines() == [
        "src/ (4 entries)",
        "app.py  (13 B)",
        "pkg/",
        "  data.json  (3 B)",
        "  util.py  (6 B)",
    ]
    top = harness.call(list_dir.TOOL, {"depth": 2})
    assert ".github/  (not expanded)" in top.content
    assert "node_modules/  (not expanded)" in top.content
    assert "outside.py" not in top.content
    assert "ci.yml" not in top.content


def test_list_dir_cap_keeps_the_rest_for_recall(harness: Harness, workspace: Path) -> None:
    many = workspace / "many"
    many.mkdir()
    for n in range(LIST_MAX_ENTRIES + 30):
        (many / f"f{n:04d}").write_text("")
    result = harness.call(list_dir.TOOL, {"path": "many"})
    assert f"showing the first {LIST_MAX_ENTRIES} entries" in result.content
    assert "f0499" in result.content and "f0500" not in result.content
    assert result.full_output is not None and "f0529" in result.full_output


def test_list_dir_refusals(harness: Harness, tree: Path) -> None:
    assert "does not exist" in harness.call(list_dir.TOOL, {"path": "nope"}).content
    file = harness.call(list_dir.TOOL, {"path": "README.md"})
    assert file.is_error and "read_file" in file.content
    escaped = harness.call(list_dir.TOOL, {"path": "linked"})
    # The policy asked about linked (it leads outside); approved, the decision names it.
    assert not escaped.is_error


def test_glob_matches_recursively_and_sorted(harness: Harness, tree: Path) -> None:
    result = harness.call(glob.TOOL, {"pattern": "**/*.py"})
    assert result.content.splitlines() == ["src/app.py", "src/pkg/util.py"]
    top = harness.call(glob.TOOL, {"pattern": "*.md"})
    assert top.content == "README.md"
    scoped = harness.call(glob.TOOL, {"pattern": "*.py", "path": "src/pkg"})
    assert scoped.content == "src/pkg/util.py"
    braces = harness.call(glob.TOOL, {"pattern": "src/**/*.{json,py}"})
    assert braces.content.splitlines() == ["src/app.py", "src/pkg/data.json", "src/pkg/util.py"]
    hidden = harness.call(glob.TOOL, {"pattern": ".github/**/*.yml"})
    assert hidden.content == ".github/workflows/ci.yml"
    none = harness.call(glob.TOOL, {"pattern": "**/*.rs"})
    assert not none.is_error and "no path matches" in none.content


def test_glob_cap(harness: Harness, workspace: Path) -> None:
    for n in range(GLOB_MAX_RESULTS + 5):
        (workspace / f"m{n:04d}.txt").write_text("")
    result = harness.call(glob.TOOL, {"pattern": "*.txt"})
    assert f"showing {GLOB_MAX_RESULTS} of {GLOB_MAX_RESULTS + 5} matches" in result.content
    assert f"all of them: recall_step(step={harness.step})" in result.content
    assert result.full_output is not None
    assert len(result.full_output.splitlines()) == GLOB_MAX_RESULTS + 5


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("**/*.py", ".hidden/a.py", False),
        ("*", ".env", False),
        (".env*", ".env.local", True),
        ("src/**", "src/a/b", True),
        ("test_?.py", "test_1.py", True),
        ("[ab].txt", "c.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("*.{js,ts}", "x.ts", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_glob_regex(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches
