"""A workspace-write sandbox never reaches ax's state root (real confined children).

The sandbox lets a command write its whole workspace. A workspace inside the
state root (``projects/``, one project's folder) would let a confined command
rewrite session logs, pre-images or slates; a state root inside the workspace,
grants and trust. Such a run is a spawn error and nothing runs. Skipped, with
the probe's reason, where Landlock is not enforced here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ax_exec import ExecSpec, probe_sandbox, run_managed
from ax_exec.models import SandboxProfile

PY = sys.executable


def _require(profile: SandboxProfile) -> None:
    for backend in probe_sandbox().backends:
        if any(s.profile == profile and s.enforced for s in backend.profiles):
            return
    reasons = [b.reason for b in probe_sandbox().backends if b.backend == "landlock"]
    pytest.skip(f"Landlock {profile} is not enforced here: {reasons}")


def _append(path: Path) -> list[str]:
    return [PY, "-c", f"open({str(path)!r}, 'a').write('forged\\n')"]


@pytest.mark.parametrize("where", ["projects", "project", "root"])
def test_a_workspace_inside_the_state_root_is_refused(state_dir: Path, where: str) -> None:
    _require("workspace-write")
    log = state_dir / "projects" / "app-0123456789ab" / "sessions" / "s.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("")
    workspace = {
        "projects": state_dir / "projects",
        "project": log.parent.parent,
        "root": state_dir,
    }[where]

    outcome = run_managed(
        ExecSpec(
            argv=_append(log),
            sandbox="workspace-write",
            cwd=str(workspace),
            workspace=str(workspace),
        ),
        environ={**os.environ, "AX_STATE_DIR": str(state_dir)},
    )

    assert outcome.termination == "spawn-error"
    assert outcome.error is not None
    assert f"is inside ax's state root {os.path.realpath(state_dir)}" in outcome.error
    assert log.read_text() == ""


def test_a_state_root_inside_the_workspace_is_refused(workspace: Path) -> None:
    _require("workspace-write")
    root = workspace / ".state"
    grants = root / "grants.json"
    root.mkdir()
    grants.write_text("{}")

    outcome = run_managed(
        ExecSpec(
            argv=_append(grants),
            sandbox="workspace-write",
            cwd=str(workspace),
            workspace=str(workspace),
        ),
        environ={**os.environ, "AX_STATE_DIR": str(root)},
    )

    assert outcome.termination == "spawn-error"
    assert outcome.error is not None and "is around ax's state root" in outcome.error
    assert grants.read_text() == "{}"


def test_the_read_only_profile_and_a_workspace_apart_still_run(
    state_dir: Path, workspace: Path
) -> None:
    _require("workspace-write")
    environ = {**os.environ, "AX_STATE_DIR": str(state_dir)}
    apart = run_managed(
        ExecSpec(
            argv=_append(workspace / "f"),
            sandbox="workspace-write",
            cwd=str(workspace),
            workspace=str(workspace),
        ),
        environ=environ,
    )
    assert apart.exit_code == 0 and (workspace / "f").read_text() == "forged\n"
    reading = run_managed(
        ExecSpec(argv=[PY, "-c", "pass"], sandbox="read-only", cwd=str(state_dir)),
        environ=environ,
    )
    assert reading.exit_code == 0, reading.error


def test_an_executors_registered_worktree_is_its_commands_workspace(
    tmp_path: Path, state_dir: Path
) -> None:
    """The one workspace allowed inside the state root: a worktree its group's owner file
    registers (trust by derivation). The sandbox lets the command write that worktree,
    and nothing else of the state root."""
    _require("workspace-write")
    from libcommon.paths import project_slug
    from libcommon.trust import OWNER_FILE_NAME, WORKTREES_DIR_NAME

    parent = Path(os.path.realpath(tmp_path / "app"))
    parent.mkdir()
    group = state_dir / "projects" / project_slug(parent) / WORKTREES_DIR_NAME / "s1.g1"
    tree = group / "t1"
    tree.mkdir(parents=True)
    from libcommon.procfs import read_proc

    me = read_proc(os.getpid())
    assert me is not None
    owner = {
        "pid": os.getpid(),
        "startTime": me.start_time,
        "workspace": str(parent),
        "prefix": "",
        "tasks": ["t1"],
    }
    (group / OWNER_FILE_NAME).write_text(json.dumps(owner))
    trust = state_dir / "trust.json"
    trust.write_text("{}")
    environ = {**os.environ, "AX_STATE_DIR": str(state_dir)}

    def run(target: Path, workspace: Path) -> str:
        spec = ExecSpec(
            argv=_append(target), sandbox="workspace-write", cwd=str(workspace),
            workspace=str(workspace),
        )  # fmt: skip
        return run_managed(spec, environ=environ).termination

    assert run(tree / "made.txt", tree) == "exited"
    assert (tree / "made.txt").read_text() == "forged\n"
    run(trust, tree)
    assert trust.read_text() == "{}"
    # A folder beside it the owner file does not name is refused as before.
    (group / "t2").mkdir()
    assert run(group / "t2" / "x", group / "t2") == "spawn-error"
    # Once its owner is gone the worktree is an orphan: nobody's workspace any more.
    (group / OWNER_FILE_NAME).write_text(json.dumps({**owner, "startTime": me.start_time - 1}))
    assert run(tree / "late.txt", tree) == "spawn-error"
    assert not (tree / "late.txt").exists()
