"""ax-check on the Node fixture: package.json scripts through npm, no install needed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner

from ax_check.cli import main

Project = Callable[[str], Path]


@pytest.fixture
def nodepkg(project: Project, require: Callable[[str], str]) -> Path:
    require("node")
    require("npm")
    return project("nodepkg")


def check(run_cli: CliRunner, *argv: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(main, [*argv, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_npm_test_script_passes_with_counts(nodepkg: Path, run_cli: CliRunner) -> None:
    code, result = check(run_cli, "test", "-C", str(nodepkg))
    assert code == 0, result
    assert result["recipe"] == {"id": "node.script-test@.", "command": "npm run test"}
    assert result["summary"]["tool"] == "node"
    assert (result["summary"]["passed"], result["summary"]["failed"]) == (2, 0)
    assert result["signals"] == []


def test_failing_node_test_is_named(nodepkg: Path, run_cli: CliRunner) -> None:
    (nodepkg / "index.js").write_text("exports.greet = (name) => `bye ${name}`;\n")
    code, result = check(run_cli, "test", "-C", str(nodepkg))
    assert (code, result["verdict"], result["exitCode"]) == (1, "failed", 1)
    assert result["summary"]["failed"] == 2
    assert {"name": "test-failed", "detail": "greets by name"} in result["signals"]


def test_targeted_build_and_lint_scripts(nodepkg: Path, run_cli: CliRunner) -> None:
    code, result = check(run_cli, "test-targeted", "-C", str(nodepkg), "-t", "test/greet.test.js")
    assert (code, result["verdict"]) == (0, "passed")
    assert result["recipe"]["command"] == "npm run test -- test/greet.test.js"
    assert check(run_cli, "build", "-C", str(nodepkg))[0] == 0
    assert check(run_cli, "lint", "-C", str(nodepkg))[0] == 0
    (nodepkg / "index.js").write_text("debugger;\n")
    code, result = check(run_cli, "lint", "-C", str(nodepkg))
    assert (code, result["verdict"]) == (1, "failed")
    assert "debugger statement" in result["output"]["head"]


def test_kind_without_a_script_is_no_recipe(nodepkg: Path, run_cli: CliRunner) -> None:
    code, result = check(run_cli, "format", "-C", str(nodepkg))
    assert (code, result["verdict"], result["reason"]) == (5, "unsupported", "no-recipe")


def test_declared_dependencies_not_installed_is_curable(nodepkg: Path, run_cli: CliRunner) -> None:
    package = json.loads((nodepkg / "package.json").read_text())
    package["devDependencies"] = {"left-pad": "1.3.0"}
    (nodepkg / "package.json").write_text(json.dumps(package))
    (nodepkg / "package-lock.json").write_text("{}")
    code, result = check(run_cli, "test", "-C", str(nodepkg))
    assert (code, result["reason"], result["cure"]) == (5, "precondition-curable", "run npm ci")
    assert not (nodepkg / "node_modules").exists()


def test_broken_package_json_is_a_precondition(nodepkg: Path, run_cli: CliRunner) -> None:
    (nodepkg / "package.json").write_text('{"scripts": {"test": ')
    code, result = check(run_cli, "test", "-C", str(nodepkg))
    assert (code, result["reason"]) == (5, "precondition")
    assert "not valid JSON" in result["message"]


def test_missing_npm_is_toolchain_unavailable(
    nodepkg: Path,
    run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    path_without: Callable[..., str],
) -> None:
    monkeypatch.setenv("PATH", path_without("npm"))
    code, result = check(run_cli, "test", "-C", str(nodepkg))
    assert (code, result["verdict"], result["reason"]) == (
        5,
        "unsupported",
        "toolchain-unavailable",
    )
    assert "is not on PATH" in result["message"]


def test_a_changed_script_changes_the_replay_key(nodepkg: Path, run_cli: CliRunner) -> None:
    first = check(run_cli, "test", "-C", str(nodepkg))[1]
    again = check(run_cli, "test", "-C", str(nodepkg))[1]
    assert first["replayKey"] == again["replayKey"]
    package = json.loads((nodepkg / "package.json").read_text())
    package["scripts"]["test"] = "node --test test/"
    (nodepkg / "package.json").write_text(json.dumps(package))
    changed = check(run_cli, "test", "-C", str(nodepkg))[1]
    assert changed["recipe"]["command"] == first["recipe"]["command"] == "npm run test"
    assert changed["replayKey"] != first["replayKey"]
