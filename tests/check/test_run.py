"""The core API other tools call: run_check with hooks, and the verdict rule itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ax_check import BadRequest, CheckRequest, Hooks, run_check
from ax_check.check import judge
from ax_exec import ExecOutcome

Project = Callable[[str], Path]


def outcome(termination: str, exit_code: int | None) -> ExecOutcome:
    empty = {"head": "", "tail": "", "bytes": 0, "truncated": False}
    return ExecOutcome.model_validate(
        {
            "runId": "run-1",
            "argv": ["x"],
            "cwd": "/",
            "termination": termination,
            "exitCode": exit_code,
            "durationMs": 1,
            "stdout": empty,
            "stderr": empty,
            "kill": {"attempted": False, "verified": True, "leftovers": 0},
            "sandbox": {"backend": "none", "profile": "none", "enforced": False},
        }
    )


@pytest.mark.parametrize(
    ("termination", "exit_code", "verdict"),
    [
        ("exited", 0, "passed"),
        ("exited", 1, "failed"),
        ("exited", 255, "failed"),
        ("timeout", None, "error"),
        ("aborted", None, "error"),
        ("spawn-error", None, "error"),
    ],
)
def test_only_exited_zero_passes(termination: str, exit_code: int | None, verdict: str) -> None:
    assert judge(outcome(termination, exit_code)) == verdict


def test_abort_hook_kills_the_run_and_is_an_error(project: Project) -> None:
    ws = project("pyproj")
    (ws / "Makefile").write_text("test:\n\tsleep 30\n")
    started: list[str] = []
    begin = time.monotonic()

    def abort() -> bool:
        return time.monotonic() - begin > 0.5

    result = run_check(
        CheckRequest(kind="test", workspace=ws),
        Hooks(abort=abort, on_start=lambda resolved: started.append(resolved.recipe_id)),
    )
    assert started == ["python.make-test@."]
    assert (result.verdict, result.termination, result.exit_code) == ("error", "aborted", None)
    assert result.message is not None and "aborted" in result.message
    assert time.monotonic() - begin < 10


def test_a_run_killed_by_a_signal_fails_and_says_which(project: Project) -> None:
    ws = project("pyproj")
    # pytest loads conftest.py and the process kills itself: no exit status, only a signal.
    (ws / "conftest.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    result = run_check(CheckRequest(kind="test", workspace=ws))
    assert (result.verdict, result.exit_code) == ("failed", None), result.message
    assert result.message is not None and "signal SIGKILL" in result.message


def test_bad_request_raises_before_anything_runs(project: Project) -> None:
    ws = project("twounits")
    started: list[str] = []
    with pytest.raises(BadRequest, match="2 units"):
        run_check(
            CheckRequest(kind="test", workspace=ws),
            Hooks(on_start=lambda resolved: started.append(resolved.recipe_id)),
        )
    with pytest.raises(BadRequest, match="unknown kind"):
        run_check(CheckRequest(kind="deploy", workspace=ws, project="api"))
    assert started == []


def test_a_sandboxed_check_may_write_the_workspace_but_nothing_outside(
    project: Project, tmp_path: Path
) -> None:
    from ax_exec import probe_sandbox

    probe = probe_sandbox()
    if not any(b.enforced for b in probe.backends):
        pytest.skip("no enforced sandbox backend on this machine")
    ws = project("pyproj")
    outside = tmp_path / "outside.txt"
    (ws / "Makefile").write_text(f"test:\n\ttouch inside.txt\n\ttouch {outside}\n")
    result = run_check(CheckRequest(kind="test", workspace=ws, sandbox="workspace-write"))
    assert result.verdict == "failed"
    assert (ws / "inside.txt").exists()
    assert not outside.exists()
    unconfined = run_check(CheckRequest(kind="test", workspace=ws))
    assert unconfined.verdict == "passed"
    assert outside.exists()
