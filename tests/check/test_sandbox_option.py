"""``ax-check KIND --sandbox PROFILE``: the check's command runs under an ax-exec profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from axtest import CliRunner

from ax_check.cli import main
from ax_exec import probe_sandbox


def _project(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (workspace / "Makefile").write_text("test:\n\ttouch inside && touch $(OUTSIDE)/escaped\n")


def test_an_unknown_profile_is_a_bad_request(run_cli: CliRunner, workspace: Path) -> None:
    _project(workspace)
    result = run_cli(main, ["test", "-C", str(workspace), "--sandbox", "roomy"])
    assert result.exit_code == 2
    assert "unknown sandbox profile 'roomy'" in result.stderr


def test_workspace_write_keeps_the_check_inside_the_workspace(
    run_cli: CliRunner, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if probe_sandbox().selected == "none":
        pytest.skip("no enforcing sandbox backend on this machine")
    _project(workspace)
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("OUTSIDE", str(outside))
    result = run_cli(main, ["test", "-C", str(workspace), "--sandbox", "workspace-write", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["verdict"] == "failed"
    assert (workspace / "inside").exists()
    assert not (outside / "escaped").exists()
