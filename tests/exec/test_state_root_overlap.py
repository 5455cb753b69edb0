"""A workspace-write sandbox never reaches ax's state root (real confined children).

The sandbox lets a command write its whole workspace. A workspace inside the
state root (``projects/``, one project's folder) would let a confined command
rewrite session logs, pre-images or slates; a state root inside the workspace,
grants and trust. Such a run is a spawn error and nothing runs. Skipped, with
the probe's reason, where Landlock is not enforced here.
"""

from __future__ import annotations

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
