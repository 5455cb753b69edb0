"""grep through ripgrep and through the Python fallback: the same rows from the same tree."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from agent.tools.toolkit import Harness

from ax_agent.tools import grep
from ax_agent.tools.grep import GREP_LINE_MAX_CHARS, GREP_MAX_ROWS

TOOL = grep.TOOL


@pytest.fixture
def tree(workspace: Path, tmp_path: Path) -> Path:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("def main():\n    return helper()\n")
    (workspace / "src" / "pkg" / "util.py").write_text("def helper():\n    return 1\n")
    (workspace / "src" / "pkg" / "notes.md").write_text("helper is documented here\n")
    (workspace / "a_first.txt").write_text("no match\nHELPER shouting\n")
    (workspace / ".env").write_text("helper_token=do-not-show\n")
    (workspace / "blob.bin").write_bytes(b"helper\x00\x01\x02")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.py").write_text("def helper_outside(): pass\n")
    os.symlink(outside, workspace / "linked")
    return workspace


def test_rows_are_path_line_text_sorted_by_path(harness: Harness, tree: Path, backend: str) -> None:
    result = harness.call(TOOL, {"pattern": r"helper\("})
    assert result.content.splitlines() == [
        "src/app.py:2:    return helper()",
        "src/pkg/util.py:1:def helper():",
    ]
    assert result.summary == rf"grep 'helper\\(' in .: 2 matching lines [{backend}]"


def test_options(harness: Harness, tree: Path, backend: str) -> None:
    ignored = harness.call(TOOL, {"pattern": "helper", "ignore_case": True, "files_only": True})
    assert ignored.content.splitlines() == [
        "a_first.txt",
        "src/app.py",
        "src/pkg/notes.md",
        "src/pkg/util.py",
    ]
    py_only = harness.call(TOOL, {"pattern": "helper", "glob": "*.py", "path": "src"})
    assert [row.split(":")[0] for row in py_only.content.splitlines()] == [
        "src/app.py",
        "src/pkg/util.py",
    ]
    one_file = harness.call(TOOL, {"pattern": "return", "path": "src/pkg/util.py"})
    assert one_file.content == "src/pkg/util.py:2:    return 1"
    none = harness.call(TOOL, {"pattern": "nothing-like-this"})
    assert not none.is_error and none.content == "no match for 'nothing-like-this' in ."


def test_hidden_binary_and_linked_files_are_not_searched(
    harness: Harness, tree: Path, backend: str
) -> None:
    result = harness.call(TOOL, {"pattern": "helper", "files_only": True})
    assert ".env" not in result.content
    assert "blob.bin" not in result.content
    assert "far.py" not in result.content and "linked" not in result.content


def test_caps(harness: Harness, workspace: Path, backend: str) -> None:
    (workspace / "many.txt").write_text("hit\n" * (GREP_MAX_ROWS + 50))
    (workspace / "wide.txt").write_text("hit" + "x" * (GREP_LINE_MAX_CHARS * 2) + "\n")
    result = harness.call(TOOL, {"pattern": "hit"})
    rows = result.content.splitlines()
    assert len(rows) == GREP_MAX_ROWS + 1
    assert f"showing {GREP_MAX_ROWS} of {GREP_MAX_ROWS + 51} matching lines" in rows[-1]
    assert f"recall_step(step={harness.step})" in rows[-1]
    assert result.full_output is not None
    full = result.full_output.splitlines()
    assert len(full) == GREP_MAX_ROWS + 51
    assert full[-1].startswith("wide.txt:1:hit") and "[line cut:" in full[-1]


def test_bad_regex_is_an_error(harness: Harness, tree: Path, backend: str) -> None:
    result = harness.call(TOOL, {"pattern": "(unclosed"})
    assert result.is_error
    assert "regular expression" in result.content or "regex" in result.content


def test_abort_stops_the_search(harness: Harness, tree: Path, backend: str) -> None:
    aborted = threading.Event()
    aborted.set()
    result = harness.call(TOOL, {"pattern": "helper"}, abort=aborted)
    assert "aborted" in result.content


def test_outside_root_without_a_decision_naming_it_is_refused(
    harness: Harness, tree: Path, backend: str
) -> None:
    from ax_agent.tools.base import ToolContext
    from ax_policy import Decision

    tool_input = TOOL.input_model.model_validate({"pattern": "helper", "path": "linked"})
    ctx = ToolContext(
        layout=harness.layout,
        session_id="s-tools",
        call_id="c",
        step=1,
        seam=harness.seam,
        decision=Decision(verdict="allow", decision_class="observe", rule="r", reason="r"),
        environ=harness.environ,
    )
    result = TOOL.run(tool_input, ctx)
    assert result.is_error and "outside the workspace" in result.content


def test_order_is_ripgreps_sorted_depth_first(
    harness: Harness, workspace: Path, backend: str
) -> None:
    for name in ("a.txt", "a/b.txt", "a-b.txt", "B.txt", "a/z/c.txt", "a/y.txt"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("needle\nneedle again\n")
    result = harness.call(TOOL, {"pattern": "needle", "files_only": True})
    assert result.content.splitlines() == [
        "B.txt",
        "a/b.txt",
        "a/y.txt",
        "a/z/c.txt",
        "a-b.txt",
        "a.txt",
    ]
