"""Unsupported projects, bad requests, detect and recipes; in-process and installed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner

from ax_check.cli import main
from libcommon.paths import state_layout

Project = Callable[[str], Path]


def check(run_cli: CliRunner, *argv: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli(main, [*argv, "--json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout else {}, result.stderr


def test_cmake_only_is_detected_without_recipes(project: Project, run_cli: CliRunner) -> None:
    ws = project("cmakeonly")
    for kind in ("build", "test", "lint"):
        code, result, stderr = check(run_cli, kind, "-C", str(ws))
        assert (code, result["verdict"], result["reason"]) == (5, "unsupported", "no-recipe")
        assert "CMake projects are detected" in result["message"]
        assert "(no-recipe)" in stderr


def test_missing_toolchain_is_named(
    project: Project,
    run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    path_without: Callable[..., str],
) -> None:
    ws = project("gomod")
    # go is absent on this machine; the PATH is narrowed so the test holds where it is not.
    monkeypatch.setenv("PATH", path_without("go"))
    for kind in ("build", "test", "lint", "static-analysis"):
        code, result, _ = check(run_cli, kind, "-C", str(ws), "--session", "s-go")
        assert (code, result["reason"], result["message"]) == (
            5,
            "toolchain-unavailable",
            "go is not on PATH",
        )
    code, result, _ = check(run_cli, "format", "-C", str(ws))
    assert (code, result["reason"]) == (5, "no-recipe")
    log = [
        json.loads(line) for line in state_layout(ws).session_log("s-go").read_text().splitlines()
    ]
    assert [event["type"] for event in log] == ["check.completed"] * 4
    # The event holds no message: the missing toolchain rides as a signal, for the
    # verification gate's caveat.
    assert log[0]["signals"] == [{"name": "toolchain-unavailable", "detail": "go is not on PATH"}]


def test_two_units_need_a_project(project: Project, run_cli: CliRunner) -> None:
    ws = project("twounits")
    code, result, stderr = check(run_cli, "test", "-C", str(ws), "--session", "s-two")
    assert code == 2
    assert "2 units (api, web)" in stderr and "--project" in stderr
    assert (result["verdict"], result["reason"], result["project"]) == (
        "unsupported",
        "bad-request",
        None,
    )
    # A caller mistake is never evidence: nothing was written.
    assert not state_layout(ws).session_log("s-two").exists()
    code, result, _ = check(run_cli, "test", "-C", str(ws), "--project", "api")
    assert (code, result["verdict"], result["project"]) == (0, "passed", "api")
    assert result["recipe"]["id"] == "python.pytest@api"
    code, result, stderr = check(run_cli, "test", "-C", str(ws), "--project", "mobile")
    assert code == 2 and "no unit 'mobile'" in stderr and "api, web" in stderr


def test_targeted_scope_is_workspace_relative(project: Project, run_cli: CliRunner) -> None:
    ws = project("twounits")
    code, result, _ = check(
        run_cli, "test-targeted", "-C", str(ws), "-p", "api", "-t", "tests/test_api.py::test_api"
    )
    assert code == 0
    assert result["scope"] == ["api/tests/test_api.py::test_api"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["test-targeted"], "needs at least one --target"),
        (["test-targeted", "-t", "--collect-only"], "would be read as an option"),
        (["test-targeted", "-t", "a\nb"], "control character"),
        (["test", "-t", "tests/test_pass.py"], "applies only to test-targeted"),
        (["test", "--timeout", "0"], "--timeout must be"),
        (["test", "--session", "../escape"], "invalid session id"),
    ],
)
def test_bad_requests_exit_2_and_write_nothing(
    project: Project, run_cli: CliRunner, argv: list[str], message: str, state_dir: Path
) -> None:
    ws = project("pyproj")
    result = run_cli(main, [*argv, "-C", str(ws)])
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""
    assert list(state_dir.iterdir()) == []


def test_unknown_kind_is_a_usage_error(run_cli: CliRunner, workspace: Path) -> None:
    result = run_cli(main, ["fuzz", "-C", str(workspace)])
    assert result.exit_code == 2
    assert "fuzz" in result.stderr


def test_workspace_without_a_manifest_is_no_recipe(workspace: Path, run_cli: CliRunner) -> None:
    code, result, _ = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["project"], result["reason"]) == (5, ".", "no-recipe")


def test_detect_reports_units_recipes_and_toolchains(project: Project, run_cli: CliRunner) -> None:
    ws = project("twounits")
    result = run_cli(main, ["detect", "-C", str(ws), "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["workspace"] == str(ws)
    assert [(u["id"], u["manifests"], u["ecosystems"]) for u in report["units"]] == [
        ("api", ["pyproject.toml"], ["python"]),
        ("web", ["package.json"], ["node"]),
    ]
    api = {item["kind"]: item for item in report["units"][0]["kinds"]}
    assert api["test"]["status"] == "ready"
    assert api["test"]["recipe"]["id"] == "python.pytest@api"
    assert len(api["test"]["replayKey"]) == 64
    assert api["test-targeted"]["recipe"]["command"].endswith("-m pytest <target>")
    assert api["test-targeted"]["replayKey"] is None
    assert api["static-analysis"] == {
        "kind": "static-analysis",
        "status": "unsupported",
        "recipe": None,
        "replayKey": None,
        "reason": "no-recipe",
        "message": "no recipe for static-analysis in unit api (python)",
        "cure": None,
        "wouldRun": None,
    }
    names = [tool["name"] for tool in report["toolchains"]]
    assert {"node", "cargo", "go", "npm"} <= set(names)
    text = run_cli(main, ["detect", "-C", str(ws)])
    assert "unit api  [python]  (pyproject.toml)" in text.stdout
    assert "python.pytest@api" in text.stdout


def test_detect_spawns_nothing(
    tmp_path: Path, workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fake toolchains on PATH would leave a mark if anything ran them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "ran"
    for name in ("cargo", "rustc", "cargo-clippy", "cargo-fmt", "go", "node", "npm", "make"):
        program = bin_dir / name
        program.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (workspace / "Cargo.toml").write_text("[package]\nname='c'\n")
    (workspace / "web").mkdir()
    (workspace / "web" / "package.json").write_text('{"scripts": {"test": "x"}}')
    (workspace / "Makefile").write_text("test:\n\ttrue\n")
    result = run_cli(main, ["detect", "-C", str(workspace), "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    cargo = {t["name"]: t["path"] for t in report["toolchains"]}["cargo"]
    assert cargo == str(bin_dir / "cargo")
    root = {item["kind"]: item for item in report["units"][0]["kinds"]}
    assert root["test"]["recipe"]["command"] == "cargo test"
    assert not marker.exists()


def test_recipes_table(run_cli: CliRunner) -> None:
    text = run_cli(main, ["recipes"])
    assert text.exit_code == 0
    assert "python.pytest\n  kind test, python" in text.stdout
    rows = json.loads(run_cli(main, ["recipes", "--json"]).stdout)
    ids = [row["id"] for row in rows]
    # The project's own task rows come before the guessed tool for the same kind.
    assert ids.index("python.just-test") < ids.index("python.pytest")
    assert ids.index("node.script-typecheck") < ids.index("node.tsc")
    hole = next(row for row in rows if row["id"] == "go.no-format")
    assert hole["command"].startswith("none: gofmt -l exits 0")


def test_installed_script_runs_a_check(project: Project, tool_path: Callable[[str], str]) -> None:
    ws = project("pyproj")
    proc = subprocess.run(
        [tool_path("check"), "test-targeted", "-C", str(ws), "-t", "tests/test_pass.py", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["verdict"], result["summary"]["passed"]) == ("passed", 2)
    proc = subprocess.run(
        [tool_path("check"), "test", "-C", str(ws)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "test failed" in proc.stderr


def test_installed_script_detect_and_ambiguity(
    project: Project, tool_path: Callable[[str], str]
) -> None:
    ws = project("twounits")
    proc = subprocess.run(
        [tool_path("check"), "detect", "-C", str(ws), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert [unit["id"] for unit in json.loads(proc.stdout)["units"]] == ["api", "web"]
    proc = subprocess.run(
        [tool_path("check"), "lint", "-C", str(ws)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "ax-check: error: the workspace holds 2 units (api, web)" in proc.stderr


def test_unrecordable_evidence_still_prints_the_result_and_fails(
    project: Project, run_cli: CliRunner
) -> None:
    ws = project("cmakeonly")
    log = state_layout(ws).session_log("s-broken")
    log.parent.mkdir(parents=True)
    log.write_text("this is not an event\n")
    code, result, stderr = check(run_cli, "build", "-C", str(ws), "--session", "s-broken")
    assert code == 1
    assert (result["verdict"], result["reason"]) == ("unsupported", "no-recipe")
    assert "evidence was not recorded" in stderr
    assert log.read_text() == "this is not an event\n"
