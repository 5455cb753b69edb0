"""ax-check on the Python fixture, end to end through the CLI with real pytest/ruff/mypy/make."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner, files_holding_secrets, secrets_file
from check.checkcli import check

from ax_check.cli import main
from libcommon.paths import state_layout

Project = Callable[[str], Path]


def events(workspace: Path, session: str) -> list[dict[str, Any]]:
    log = state_layout(workspace).session_log(session)
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_passing_tests_pass(project: Project, run_cli: CliRunner) -> None:
    ws = project("pyproj")
    code, result, stderr = check(
        run_cli, "test-targeted", "-C", str(ws), "--target", "tests/test_pass.py"
    )
    assert code == 0, stderr
    assert result["verdict"] == "passed"
    assert (result["termination"], result["exitCode"]) == ("exited", 0)
    assert result["recipe"] == {
        "id": "python.pytest-targeted@.",
        "command": f"{sys.executable} -m pytest tests/test_pass.py",
    }
    assert re.fullmatch(r"[0-9a-f]{64}", result["replayKey"])
    assert result["summary"]["passed"] == 2 and result["summary"]["failed"] is None
    assert result["scope"] == ["tests/test_pass.py"]
    assert "2 passed" in result["output"]["head"]
    assert f"replay key {result['replayKey']}" in stderr
    # Runs leave the state root alone without --session.
    assert not (state_layout(ws).project_dir).exists()


def test_a_failing_test_fails_and_names_the_test(project: Project, run_cli: CliRunner) -> None:
    ws = project("pyproj")
    code, result, _ = check(run_cli, "test", "-C", str(ws))
    assert code == 1
    assert result["verdict"] == "failed"
    assert result["exitCode"] == 1
    assert result["summary"] == {
        "tool": "pytest",
        "passed": 2,
        "failed": 1,
        "skipped": None,
        "errors": None,
        "findings": None,
        "xfailed": None,
        "xpassed": None,
        "tools": ["pytest"],
    }
    assert {"name": "test-failed", "detail": "tests/test_fail.py::test_wrong_on_purpose"} in result[
        "signals"
    ]
    # Without --json the person gets the failing id and the end of the output.
    human = run_cli(main, ["test", "-C", str(ws)])
    assert human.exit_code == 1 and human.stdout == ""
    assert "test failed in ." in human.stderr
    assert "test-failed: tests/test_fail.py::test_wrong_on_purpose" in human.stderr
    assert "1 failed, 2 passed" in human.stderr


def test_a_target_that_matches_nothing_is_not_a_pass(project: Project, run_cli: CliRunner) -> None:
    ws = project("pyproj")
    code, result, _ = check(run_cli, "test-targeted", "-C", str(ws), "-t", "tests/test_nope.py")
    assert code == 1
    assert result["verdict"] == "failed" and result["exitCode"] == 4


def test_lint_and_format_pass_then_fail_with_findings(
    project: Project, run_cli: CliRunner, needs_module: Callable[[str], None]
) -> None:
    needs_module("ruff")
    ws = project("pyproj")
    assert check(run_cli, "lint", "-C", str(ws))[0] == 0
    assert check(run_cli, "format", "-C", str(ws))[0] == 0
    (ws / "messy.py").write_text("import os\nx  =  1\n")
    code, result, _ = check(run_cli, "lint", "-C", str(ws))
    assert (code, result["verdict"]) == (1, "failed")
    assert result["recipe"]["id"] == "python.ruff-check@."
    places = {(f["path"], f["line"], f["column"], f["code"]) for f in result["findings"]}
    assert ("messy.py", 1, 8, "F401") in places
    code, result, _ = check(run_cli, "format", "-C", str(ws))
    assert (code, result["verdict"]) == (1, "failed")
    assert result["findings"][0]["path"] == "messy.py"


def test_typecheck_failure_with_mypy(
    project: Project, run_cli: CliRunner, needs_module: Callable[[str], None]
) -> None:
    needs_module("mypy")
    ws = project("pyproj")
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return str(a + b)\n")
    code, result, _ = check(run_cli, "typecheck", "-C", str(ws))
    assert (code, result["verdict"]) == (1, "failed")
    assert result["recipe"]["command"] == f"{sys.executable} -m mypy ."
    finding = result["findings"][0]
    assert (finding["path"], finding["line"], finding["code"]) == ("calc.py", 2, "return-value")


def test_the_projects_own_make_target_beats_pytest(project: Project, run_cli: CliRunner) -> None:
    ws = project("pyproj")
    (ws / "Makefile").write_text("test:\n\t@echo the project own test\n\t@exit 3\n")
    code, result, _ = check(run_cli, "test", "-C", str(ws))
    assert (code, result["verdict"]) == (1, "failed")
    assert result["recipe"] == {"id": "python.make-test@.", "command": "make test"}
    assert result["exitCode"] == 2  # make's own status for a failed recipe
    assert "the project own test" in result["output"]["head"]
    first_key = result["replayKey"]
    (ws / "Makefile").write_text("test:\n\t@echo the project own test\n\t@exit 0\n")
    code, result, _ = check(run_cli, "test", "-C", str(ws))
    assert (code, result["verdict"]) == (0, "passed")
    assert result["recipe"]["command"] == "make test"
    assert result["replayKey"] != first_key


def test_session_records_started_and_completed(project: Project, run_cli: CliRunner) -> None:
    ws = project("pyproj")
    code, result, _ = check(run_cli, "test", "-C", str(ws), "--session", "s-check")
    assert code == 1
    started, completed = events(ws, "s-check")
    assert {k: started[k] for k in ("seq", "type", "kind", "project", "scope", "recipeId")} == {
        "seq": 1,
        "type": "check.started",
        "kind": "test",
        "project": ".",
        "scope": ".",
        "recipeId": "python.pytest@.",
    }
    assert {
        k: completed[k]
        for k in ("type", "recipeId", "verdict", "exitCode", "termination", "reason")
    } == {
        "type": "check.completed",
        "recipeId": "python.pytest@.",
        "verdict": "failed",
        "exitCode": 1,
        "termination": "exited",
        "reason": None,
    }
    assert result["output"]["spillPath"] is None


def test_a_spilled_output_keeps_no_secret(
    project: Project, run_cli: CliRunner, state_dir: Path
) -> None:
    ws = project("pyproj")
    (ws / "settings.env").write_text(secrets_file(filler_bytes=200_000))
    (ws / "tests" / "test_settings.py").write_text(
        "from pathlib import Path\n\n\n"
        "def test_prints_the_settings() -> None:\n"
        "    print((Path(__file__).parent.parent / 'settings.env').read_text())\n"
        "    assert False\n"
    )
    code, result, _ = check(run_cli, "test", "-C", str(ws), "--session", "s-leak")
    assert (code, result["verdict"]) == (1, "failed")
    assert files_holding_secrets(state_dir) == []
    spill = Path(result["output"]["spillPath"])
    assert spill.parent == state_layout(ws).objects_dir
    assert spill.read_bytes().count(b"[REDACTED:anthropic-key]") == 3


def fake_venv(ws: Path, python: Path | None = None) -> Path:
    bin_dir = ws / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    site = ws / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    if python is None:
        os.symlink(sys.executable, bin_dir / "python")
    else:
        (bin_dir / "python").write_text(python.read_text())
    return site


def test_project_venv_without_pytest_is_curable(project: Project, run_cli: CliRunner) -> None:
    ws = project("pyproj")
    fake_venv(ws)
    code, result, stderr = check(run_cli, "test", "-C", str(ws), "--session", "s-cure")
    assert code == 5
    assert (result["verdict"], result["reason"]) == ("unsupported", "precondition-curable")
    assert "the project's .venv lacks what the tests need: pytest" in result["message"]
    assert result["cure"] == ".venv/bin/pip install -e . pytest"
    assert result["recipe"] is None and result["replayKey"] is None
    assert "cure:" in stderr
    # Nothing ran, so only the completed event is recorded, carrying the reason.
    [only] = events(ws, "s-cure")
    assert (only["type"], only["verdict"], only["reason"]) == (
        "check.completed",
        "unsupported",
        "precondition-curable",
    )
    assert only["exitCode"] is None and only["termination"] is None


def test_a_command_that_cannot_start_is_an_error(project: Project, run_cli: CliRunner) -> None:
    ws = project("pyproj")
    # The venv's python exists but is not executable: the spawn itself fails.
    site = ws / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "pytest").mkdir()
    (ws / ".venv" / "bin").mkdir()
    (ws / ".venv" / "bin" / "python").write_text("not a program")
    code, result, _ = check(run_cli, "test", "-C", str(ws), "--session", "s-spawn")
    assert code == 1
    assert (result["verdict"], result["termination"], result["exitCode"]) == (
        "error",
        "spawn-error",
        None,
    )
    assert "could not start" in result["message"]
    # Nothing started, so there is no check.started; the error is still evidence.
    [only] = events(ws, "s-spawn")
    assert (only["type"], only["verdict"], only["termination"]) == (
        "check.completed",
        "error",
        "spawn-error",
    )


def test_timeout_is_an_error_and_progress_shows_on_a_terminal(
    project: Project, run_cli: CliRunner
) -> None:
    ws = project("pyproj")
    (ws / "Makefile").write_text("test:\n\tsleep 30\n")
    result = run_cli(
        main, ["test", "-C", str(ws), "--timeout", "1.5", "--session", "s-slow"], isatty=True
    )
    assert result.exit_code == 1
    assert "test error in ." in result.stderr
    assert "timed out after" in result.stderr
    assert "\rax-check: running make test (" in result.stderr
    completed = events(ws, "s-slow")[-1]
    assert (completed["verdict"], completed["termination"], completed["exitCode"]) == (
        "error",
        "timeout",
        None,
    )


def test_no_progress_escapes_when_stderr_is_not_a_terminal(
    project: Project, run_cli: CliRunner
) -> None:
    ws = project("pyproj")
    (ws / "Makefile").write_text("test:\n\tsleep 1.3\n")
    result = run_cli(main, ["test", "-C", str(ws)])
    assert result.exit_code == 0
    assert "\r" not in result.stderr and "\x1b" not in result.stderr


@pytest.mark.parametrize("session", ["s-inside"])
def test_state_root_inside_the_workspace_is_refused(
    project: Project, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, session: str
) -> None:
    ws = project("pyproj")
    monkeypatch.setenv("AX_STATE_DIR", str(ws / ".ax-state"))
    result = run_cli(main, ["test", "-C", str(ws), "--session", session])
    assert result.exit_code == 2
    assert "inside the workspace" in result.stderr
    assert not (ws / ".ax-state").exists()
