"""write_file and edit_file never write through a link swapped in after the decision.

The policy decides on ``x/config`` while ``x`` is a folder; a command running
beside the agent (a dev server, a watcher) then swaps ``x`` for a symlink to
``.git``. Two windows are tested: the swap before the tool resolves the path
(the resolved path is no longer the decided one) and the swap after it
resolved it, just before the write (the walk from the workspace root refuses
the link).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from agent.tools.toolkit import Harness

from ax_agent.tools import common, edit_file, write_file
from ax_agent.tools.base import ModelTool, ToolContext

GIT_CONFIG = b"[core]\n\trepositoryformatversion = 0\n"
PLANTED = '[core]\n\tfsmonitor = "touch canary; false"\n'


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_bytes(GIT_CONFIG)
    (workspace / "x").mkdir()
    (workspace / "x" / "config").write_bytes(GIT_CONFIG)
    return workspace


def swap_folder(workspace: Path) -> None:
    shutil.rmtree(workspace / "x")
    (workspace / "x").symlink_to(".git")


def swap_file(workspace: Path) -> None:
    (workspace / "x" / "config").unlink()
    (workspace / "x" / "config").symlink_to("../.git/config")


CALLS: dict[str, tuple[ModelTool, dict[str, str]]] = {
    "write_file": (write_file.TOOL, {"path": "x/config", "content": PLANTED}),
    "edit_file": (
        edit_file.TOOL,
        {"path": "x/config", "old_string": "[core]\n", "new_string": PLANTED},
    ),
}
SWAPS: dict[str, Callable[[Path], None]] = {"folder": swap_folder, "file": swap_file}


@pytest.mark.parametrize("swap", SWAPS)
@pytest.mark.parametrize("name", CALLS)
def test_a_swap_after_the_decision_is_refused(
    harness: Harness, repo: Path, name: str, swap: str
) -> None:
    tool, raw = CALLS[name]
    decision = harness.decide(tool, tool.input_model.model_validate(raw))
    assert decision.verdict == "allow"
    SWAPS[swap](repo)

    result = harness.call(tool, raw, decision=decision)

    assert result.is_error
    assert "not to the path the policy decided on" in result.content
    assert (repo / ".git" / "config").read_bytes() == GIT_CONFIG


@pytest.mark.parametrize("swap", SWAPS)
@pytest.mark.parametrize("name", CALLS)
def test_a_swap_between_resolving_and_writing_is_refused(
    harness: Harness, repo: Path, monkeypatch: pytest.MonkeyPatch, name: str, swap: str
) -> None:
    tool, raw = CALLS[name]
    module = write_file if name == "write_file" else edit_file

    def resolve_then_swap(path: str, ctx: ToolContext, *, write: bool = False) -> Path:
        resolved = common.resolve(path, ctx, write=write)
        SWAPS[swap](repo)
        return resolved

    monkeypatch.setattr(module, "resolve", resolve_then_swap)

    result = harness.call(tool, raw)

    assert result.is_error
    assert "symbolic link" in result.content
    assert (repo / ".git" / "config").read_bytes() == GIT_CONFIG
    # Nothing of .git/config reached the model either.
    assert "repositoryformatversion" not in result.content
    assert not [p for p in (repo / ".git").iterdir() if p.name.endswith(".tmp")]


def test_a_write_into_a_protected_folder_is_refused_by_the_writer(
    harness: Harness, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the policy (which denies it) and the decided-path check: the writer itself refuses.
    (workspace / "vendor" / ".git").mkdir(parents=True)
    monkeypatch.setattr(common, "_write_decided", lambda target, ctx: True)
    for path in ["vendor/.git/config", ".ax/config.json", ".GIT/config"]:
        decision = harness.decide(write_file.TOOL, write_file.WriteFileInput(path="ok", content=""))
        result = harness.call(
            write_file.TOOL, {"path": path, "content": PLANTED}, decision=decision
        )
        assert result.is_error, path
        assert "which ax never writes" in result.content
    assert list((workspace / "vendor" / ".git").iterdir()) == []
    assert not (workspace / ".ax").exists()
    assert not (workspace / ".GIT").exists()


def test_a_link_to_a_folder_inside_the_workspace_is_still_written_through(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to("real")
    result = harness.call(write_file.TOOL, {"path": "alias/new.txt", "content": "x\n"})
    assert not result.is_error, result.content
    assert (workspace / "real" / "new.txt").read_text() == "x\n"
