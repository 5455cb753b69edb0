"""The one place under ax's state root a tool may write: an executor's own registered
worktree, from a session whose workspace is that worktree.

A group's folder (``<state>/projects/<slug>/worktrees/<session>.<group>``) holds the
owner file that registers its tasks' worktrees (``ax_agent.tasks.worktrees``); trust
by derivation (``libcommon.trust.derived_parent``) reads it. The owner file is written
here by hand, as ``prepare_group`` writes it: these are path facts, no git is needed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ax_policy import validate_path
from libcommon.paths import project_slug
from libcommon.procfs import read_proc
from libcommon.trust import OWNER_FILE_NAME, WORKTREES_DIR_NAME


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    return Path(os.path.realpath(folder))


def _group(state_dir: Path, parent: Path, tasks: list[str]) -> Path:
    group = state_dir / "projects" / project_slug(parent) / WORKTREES_DIR_NAME / "s1.g1"
    for task in [*tasks, "unregistered"]:
        (group / task).mkdir(parents=True)
        (group / task / "a.txt").write_text("a\n")
    me = read_proc(os.getpid())
    assert me is not None
    owner = {
        "pid": os.getpid(),
        "startTime": me.start_time,
        "workspace": str(parent),
        "prefix": "",
        "tasks": tasks,
    }
    (group / OWNER_FILE_NAME).write_text(json.dumps(owner))
    return group


def _protected(raw: str | Path, workspace: Path, state_dir: Path) -> bool:
    facts = validate_path(str(raw), workspace, write=True, state_dir=state_dir)
    assert facts.valid
    if facts.protected:
        assert "state root" in (facts.protected_reason or "")
    return facts.protected


def test_an_executor_writes_inside_its_own_worktree(parent: Path, state_dir: Path) -> None:
    tree = _group(state_dir, parent, ["t1", "t2"]) / "t1"
    for raw in ("a.txt", "src/new.py", str(tree / "b.txt")):
        facts = validate_path(raw, tree, write=True, state_dir=state_dir)
        assert facts.inside_workspace and not facts.protected, raw
        assert facts.needs_no_question()


def test_an_executor_writes_nothing_else_under_the_state_root(
    parent: Path, state_dir: Path
) -> None:
    group = _group(state_dir, parent, ["t1", "t2"])
    tree = group / "t1"
    project = group.parent.parent
    (tree / "escape").symlink_to(state_dir / "trust.json")
    for raw in [
        project / "sessions" / "s1.jsonl",  # the parent's log
        state_dir / "trust.json",
        state_dir / "grants.json",
        group / OWNER_FILE_NAME,
        group / "t2" / "a.txt",  # another task's worktree
        "../t2/a.txt",
        "escape",  # a link out of the worktree, to the trust store
    ]:
        assert _protected(raw, tree, state_dir), raw
    # .git stays protected inside the worktree too.
    assert validate_path(".git", tree, write=True, state_dir=state_dir).protected


def test_a_folder_the_owner_file_does_not_register_derives_nothing(
    parent: Path, state_dir: Path
) -> None:
    group = _group(state_dir, parent, ["t1"])
    assert _protected("a.txt", group / "unregistered", state_dir)
    # Nor does the group's folder, nor a folder inside a registered worktree.
    assert _protected("t1/a.txt", group, state_dir)
    (group / "t1" / "sub").mkdir()
    assert _protected("a.txt", group / "t1" / "sub", state_dir)
    # An owner file naming another workspace than its project's registers nothing.
    owner = json.loads((group / OWNER_FILE_NAME).read_text())
    (group / OWNER_FILE_NAME).write_text(json.dumps({**owner, "workspace": "/elsewhere"}))
    assert _protected("a.txt", group / "t1", state_dir)


def test_the_parent_session_still_writes_nothing_in_the_state_root(
    parent: Path, state_dir: Path
) -> None:
    group = _group(state_dir, parent, ["t1"])
    for raw in [group / "t1" / "a.txt", group / OWNER_FILE_NAME, state_dir / "trust.json"]:
        assert _protected(raw, parent, state_dir), raw


def test_an_orphans_worktree_is_nobodys_once_its_owner_is_gone(
    parent: Path, state_dir: Path
) -> None:
    """A dead parent's group (not yet swept) registers nothing: only the live owner's pid
    with its start time does, so no later session may write there."""
    import subprocess
    import sys

    group = _group(state_dir, parent, ["t1"])
    assert not _protected("a.txt", group / "t1", state_dir)
    owner = json.loads((group / OWNER_FILE_NAME).read_text())
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for changed in (
        {"pid": gone.pid},  # no such process any more
        {"startTime": owner["startTime"] - 1},  # a recycled pid: another start time
        {"startTime": None},  # no identity at all
        {"pid": "1"},
    ):
        (group / OWNER_FILE_NAME).write_text(json.dumps({**owner, **changed}))
        assert _protected("a.txt", group / "t1", state_dir), changed
