"""`ax-check setup`: real runs, exit codes, and setup.* evidence that no check reader counts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner
from check.checkcli import write

from ax_check.cli import main
from ax_log.events import parse_stored
from ax_report import build_report
from libcommon.errors import UsageError
from libcommon.paths import state_layout

SESSION = "s-setup"
PACKAGE = {"name": "tiny", "version": "1.0.0", "private": True}


def setup(run_cli: CliRunner, *argv: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli(main, ["setup", *argv, "--json"])
    return result.exit_code, json.loads(result.stdout or "null"), result.stderr


def events(workspace: Path) -> list[dict[str, Any]]:
    log = state_layout(workspace).session_log(SESSION)
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def make_project(workspace: Path, require: Callable[[str], str]) -> Path:
    require("make")
    return write(
        workspace,
        {
            "pyproject.toml": '[project]\nname = "x"\nversion = "1"\n',
            "Makefile": "migrate:\n\techo migrated > migrated.txt\nseed:\n\texit 3\n",
        },
    )


def test_a_migration_runs_the_projects_target_and_records_setup_events(
    make_project: Path, run_cli: CliRunner
) -> None:
    code, result, stderr = setup(run_cli, "migrate", "-C", str(make_project), "--session", SESSION)
    assert code == 0, stderr
    assert result["verdict"] == "succeeded"
    assert result["recipe"] == {"id": "setup.script-migrate@.", "command": "make migrate"}
    assert (make_project / "migrated.txt").read_text() == "migrated\n"
    recorded = events(make_project)
    assert [event["type"] for event in recorded] == ["setup.started", "setup.completed"]
    assert recorded[1]["verdict"] == "succeeded"
    assert recorded[1]["replayKey"] == result["replayKey"]
    for event in recorded:
        parse_stored(event)


def test_a_failing_seed_is_failed_exit_1(make_project: Path, run_cli: CliRunner) -> None:
    code, result, _ = setup(run_cli, "seed", "-C", str(make_project), "--session", SESSION)
    assert code == 1
    # make exits 2 when a recipe fails.
    assert (result["verdict"], result["exitCode"]) == ("failed", 2)
    assert events(make_project)[-1]["verdict"] == "failed"


def test_nothing_to_install_is_unsupported_exit_5_naming_what_is_missing(
    workspace: Path, run_cli: CliRunner
) -> None:
    write(workspace, {"package.json": json.dumps(PACKAGE)})
    code, result, _ = setup(run_cli, "install", "-C", str(workspace), "--session", SESSION)
    assert code == 5
    assert result["reason"] == "no-recipe"
    assert "no lockfile" in result["message"] and "packageManager" in result["message"]
    assert [event["type"] for event in events(workspace)] == ["setup.completed"]


def test_a_bad_intent_is_exit_2_and_writes_nothing(workspace: Path, run_cli: CliRunner) -> None:
    write(workspace, {"package.json": json.dumps(PACKAGE)})
    result = run_cli(main, ["setup", "build", "-C", str(workspace), "--session", SESSION])
    assert result.exit_code == 2
    assert "unknown intent 'build'" in result.stderr
    assert events(workspace) == []


def test_dry_run_spawns_and_records_nothing(make_project: Path, run_cli: CliRunner) -> None:
    result = run_cli(main, ["setup", "migrate", "-C", str(make_project), "--dry-run", "--json"])
    assert result.exit_code == 0
    plan = json.loads(result.stdout)
    assert plan["recipe"]["command"] == "make migrate"
    assert not (make_project / "migrated.txt").exists()


def test_setup_never_writes_a_check_event_and_the_report_never_counts_it(
    make_project: Path, run_cli: CliRunner
) -> None:
    setup(run_cli, "migrate", "-C", str(make_project), "--session", SESSION)
    recorded = events(make_project)
    assert not [event for event in recorded if event["type"].startswith("check.")]
    changed = {
        "type": "file.mutated",
        "callId": None,
        "path": "app.py",
        "pre": None,
        "post": "p",
    }
    stream = [
        {"seq": 1, "type": "session.started", "workspace": str(make_project)},
        {"seq": 2, **changed},
        *({**event, "seq": 3 + index} for index, event in enumerate(recorded)),
    ]
    document, _ = build_report(stream)
    assert [item["verdict"] for item in document["files"]] == ["UNCHECKED"]
    # The control: the same stream with the run spelt as a passing check (its start and its
    # completion) counts.
    forged = {**recorded[-1], "type": "check.completed", "kind": "test", "scope": "."}
    forged["verdict"] = "passed"
    start = {key: forged.get(key) for key in ("kind", "project", "scope", "recipeId")}
    document, _ = build_report(
        [*stream[:-1], {"type": "check.started", **start, "seq": 98}, {**forged, "seq": 99}]
    )
    assert [item["verdict"] for item in document["files"]] == ["CHECKED"]


def test_a_setup_event_cannot_claim_a_pass() -> None:
    with pytest.raises(UsageError, match="verdict"):
        parse_stored(
            {
                "v": 1,
                "seq": 1,
                "ts": "2026-12-01T00:00:00.000Z",
                "session": SESSION,
                "type": "setup.completed",
                "intent": "install",
                "project": ".",
                "recipeId": "setup.npm-ci@.",
                "verdict": "passed",
                "exitCode": 0,
                "termination": "exited",
                "reason": None,
            }
        )


def _npm_ready(workspace: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed on this machine")
    write(
        workspace, {"package.json": json.dumps({**PACKAGE, "dependencies": {"is-number": "7.0.0"}})}
    )
    try:
        locked = subprocess.run(
            ["npm", "install", "--package-lock-only", "--no-audit", "--no-fund"],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("npm could not reach its registry within 120 s")
    if locked.returncode != 0 or not (workspace / "package-lock.json").is_file():
        pytest.skip(f"npm could not reach its registry: {locked.stderr.strip()[-300:]}")


@pytest.mark.slow
def test_install_on_a_real_npm_project_with_a_lockfile(workspace: Path, run_cli: CliRunner) -> None:
    _npm_ready(workspace)
    code, result, stderr = setup(run_cli, "install", "-C", str(workspace), "--session", SESSION)
    assert code == 0, stderr
    assert result["recipe"] == {"id": "setup.npm-ci@.", "command": "npm ci"}
    assert result["files"] == ["package.json", "package-lock.json"]
    assert (workspace / "node_modules" / "is-number" / "package.json").is_file()
    assert [event["type"] for event in events(workspace)] == ["setup.started", "setup.completed"]


@pytest.mark.slow
def test_install_on_a_python_project_with_a_requirements_lock(
    workspace: Path, run_cli: CliRunner
) -> None:
    write(workspace, {"requirements.txt": "iniconfig==2.3.1\n"})
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=workspace, check=True)
    venv_python = workspace / ".venv" / "bin" / "python"
    code, result, stderr = setup(run_cli, "install", "-C", str(workspace), "--session", SESSION)
    if code == 1 and "No matching distribution" in json.dumps(result):
        pytest.skip("pip's configured index does not hold iniconfig 2.3.1")
    assert code == 0, (stderr, result)
    assert result["recipe"]["command"] == (
        "./.venv/bin/python -m pip install --no-input -r requirements.txt"
    )
    shown = subprocess.run(
        [
            str(venv_python),
            "-c",
            "import iniconfig, os; print(os.path.realpath(iniconfig.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.startswith(os.path.realpath(workspace / ".venv"))


def test_a_setup_that_changed_since_its_approval_is_refused_and_spawns_nothing(
    make_project: Path, run_cli: CliRunner
) -> None:
    plan = json.loads(
        run_cli(main, ["setup", "migrate", "-C", str(make_project), "--dry-run", "--json"]).stdout
    )
    (make_project / "Makefile").write_text("migrate:\n\techo other > migrated.txt\n")
    argv = ["setup", "migrate", "-C", str(make_project), "--session", SESSION]
    result = run_cli(main, [*argv, "--expect-key", plan["replayKey"]])
    assert result.exit_code == 1
    assert "changed since it was approved" in result.stderr
    assert not (make_project / "migrated.txt").exists()
    assert events(make_project) == []
