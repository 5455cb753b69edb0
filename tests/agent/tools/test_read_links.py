"""The model's readers never read through a link swapped in after the policy's decision.

The policy decides on ``x/notes.txt`` while ``x`` is a folder; a command
running beside the agent then swaps ``x`` for a symlink to a folder outside
the workspace (``~/.ssh``, ``../outside``) or to ``.git``. Three windows:
the swap before the tool resolves the path (it no longer leads where the
decision said), between resolving and opening (the walk from the workspace
root refuses the link), and after the open (the search runs on what was
opened, never on the path again).
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from agent.tools.toolkit import Harness

from ax_agent.tools import common, glob, grep, list_dir, read_file
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_agent.tools.walk import WalkState, open_entry, walk

SECRET = "ssh-private-key-material"
INSIDE = "needle inside the workspace"
FIFO_WAIT_S = 5.0


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "notes.txt").write_text(f"needle {SECRET}\n")
    (folder / "id_rsa").write_text(f"needle {SECRET}\n")
    return folder


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "notes.txt").write_text(f"needle {SECRET}\n")
    (workspace / "x").mkdir()
    (workspace / "x" / "notes.txt").write_text(INSIDE + "\n")
    return workspace


def swap(workspace: Path, target: Path | str) -> None:
    """What a command running beside the agent does: ``x`` becomes a link."""
    shutil.rmtree(workspace / "x")
    (workspace / "x").symlink_to(target)


READERS: dict[str, tuple[ModelTool, dict[str, Any]]] = {
    "read_file": (read_file.TOOL, {"path": "x/notes.txt"}),
    "grep-folder": (grep.TOOL, {"pattern": "needle", "path": "x"}),
    "grep-file": (grep.TOOL, {"pattern": "needle", "path": "x/notes.txt"}),
    "glob": (glob.TOOL, {"pattern": "*", "path": "x"}),
    "list_dir": (list_dir.TOOL, {"path": "x"}),
}
MODULES = {"read_file": read_file, "grep": grep, "glob": glob, "list_dir": list_dir}


def module_of(tool: ModelTool) -> Any:
    return MODULES[tool.name]


def target(where: str, outside: Path) -> Path | str:
    return outside if where == "outside" else ".git"


@pytest.mark.parametrize("where", ["outside", ".git"])
@pytest.mark.parametrize("name", READERS)
def test_a_swap_after_the_decision_is_refused(
    harness: Harness, repo: Path, outside: Path, backend: str, name: str, where: str
) -> None:
    tool, raw = READERS[name]
    decision = harness.decide(tool, tool.input_model.model_validate(raw))
    assert decision.verdict == "allow"
    swap(repo, target(where, outside))

    result = harness.call(tool, raw, decision=decision)

    assert result.is_error
    assert SECRET not in result.content and "id_rsa" not in result.content
    if where == ".git":
        assert "not to the path the policy decided on" in result.content
    else:
        assert "outside the workspace" in result.content


@pytest.mark.parametrize("where", ["outside", ".git"])
@pytest.mark.parametrize("name", READERS)
def test_a_swap_between_resolving_and_reading_is_refused(
    harness: Harness,
    repo: Path,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    name: str,
    where: str,
) -> None:
    tool, raw = READERS[name]

    def resolve_then_swap(path: str, ctx: ToolContext, *, write: bool = False) -> Path:
        resolved = common.resolve(path, ctx, write=write)
        swap(repo, target(where, outside))
        return resolved

    monkeypatch.setattr(module_of(tool), "resolve", resolve_then_swap)

    result = harness.call(tool, raw)

    assert result.is_error
    assert "symbolic link" in result.content and "nothing was read" in result.content
    assert SECRET not in result.content and "id_rsa" not in result.content


@pytest.mark.parametrize("path", ["x", "x/notes.txt"])
def test_ripgrep_searches_what_was_opened_not_the_path_again(
    harness: Harness, repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    # The fallback never goes back to the path: the walk test below covers it.
    if shutil.which("rg") is None:
        pytest.skip("ripgrep (rg) is not installed on this machine; the rg branch is untested")
    harness.environ = {"PATH": os.environ.get("PATH", os.defpath)}
    found = grep.ripgrep

    def swap_then_find(environ: Any) -> str | None:
        # Called once the searched path is open, just before ripgrep starts.
        os.rename(repo / "x", repo / "moved")
        (repo / "x").symlink_to(outside)
        return found(environ)

    monkeypatch.setattr(grep, "ripgrep", swap_then_find)

    result = harness.call(grep.TOOL, {"pattern": "needle", "path": path})

    assert not result.is_error, result.content
    assert result.content == f"{path if path.endswith('.txt') else 'x/notes.txt'}:1:{INSIDE}"
    assert SECRET not in result.content


def test_the_walk_never_enters_a_folder_or_opens_a_file_swapped_for_a_link(
    workspace: Path, outside: Path
) -> None:
    (workspace / "a").mkdir()
    (workspace / "a" / "f.txt").write_text("inside\n")
    (workspace / "b").mkdir()
    (workspace / "b" / "g.txt").write_text("inside\n")
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    seen: list[str] = []
    contents: list[bytes] = []
    try:
        for entry in walk(workspace, fd, WalkState()):
            seen.append(entry.rel)
            if entry.rel == "a":
                # Listed as a folder, replaced before the walk descends into it.
                shutil.rmtree(workspace / "a")
                (workspace / "a").symlink_to(outside)
            if entry.rel == "b/g.txt":
                (workspace / "b" / "g.txt").unlink()
                (workspace / "b" / "g.txt").symlink_to(outside / "id_rsa")
                assert open_entry(entry) is None
            elif not entry.is_dir:
                opened = open_entry(entry)
                assert opened is not None
                with os.fdopen(opened, "rb") as handle:
                    contents.append(handle.read())
    finally:
        os.close(fd)
    assert seen == ["a", "b", "b/g.txt"]
    assert all(SECRET.encode() not in data for data in contents)


def test_reading_git_stays_the_policys_decision(harness: Harness, repo: Path) -> None:
    result = harness.call(read_file.TOOL, {"path": ".git/notes.txt"})
    assert not result.is_error, result.content
    assert SECRET in result.content
    listed = harness.call(list_dir.TOOL, {"path": ".git"})
    assert "notes.txt" in listed.content


def test_an_approved_read_outside_is_walked_from_the_root(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    approved = tmp_path / "shared" / "docs"
    approved.mkdir(parents=True)
    (approved / "notes.txt").write_text("approved notes\n")
    private = tmp_path / "private"
    private.mkdir()
    (private / "notes.txt").write_text(f"{SECRET}\n")
    raw = {"path": str(approved / "notes.txt")}
    assert "approved notes" in harness.call(read_file.TOOL, raw).content

    def resolve_then_swap(path: str, ctx: ToolContext, *, write: bool = False) -> Path:
        resolved = common.resolve(path, ctx, write=write)
        os.rename(approved, tmp_path / "moved")
        approved.symlink_to(private)
        return resolved

    monkeypatch.setattr(read_file, "resolve", resolve_then_swap)
    result = harness.call(read_file.TOOL, raw)

    assert result.is_error
    assert "shared/docs is a symbolic link" in result.content
    assert SECRET not in result.content


def test_a_fifo_swapped_in_does_not_block_a_read(
    harness: Harness, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "f.txt").write_text("text\n")

    def resolve_then_swap(path: str, ctx: ToolContext, *, write: bool = False) -> Path:
        resolved = common.resolve(path, ctx, write=write)
        (workspace / "f.txt").unlink()
        os.mkfifo(workspace / "f.txt")
        return resolved

    monkeypatch.setattr(read_file, "resolve", resolve_then_swap)
    results: list[ToolResult] = []
    reader = threading.Thread(
        target=lambda: results.append(harness.call(read_file.TOOL, {"path": "f.txt"})),
        daemon=True,
    )
    reader.start()
    reader.join(FIFO_WAIT_S)
    if reader.is_alive():
        with open(workspace / "f.txt", "wb"):
            pass  # lets the blocked open return, so the thread ends
        reader.join(FIFO_WAIT_S)
        pytest.fail("read_file blocked opening a FIFO swapped in after the decision")
    [result] = results
    assert result.is_error and "not a regular file" in result.content
