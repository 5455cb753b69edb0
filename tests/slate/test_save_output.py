"""``ax-slate save-output``: a step's full output kept for recall (ax-agent's process seam)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from axtest import CliRunner

from ax_slate.cli import main

pytestmark = pytest.mark.usefixtures("started")


def test_save_output_keeps_the_text_redacted_and_prints_its_path(
    run_cli: CliRunner, workspace: Path
) -> None:
    text = "line one\nAPI_KEY=abcdef123456\n"
    args = ["save-output", "--session", "s1", "-C", str(workspace)]
    result = run_cli(main, args, stdin=text)
    assert result.exit_code == 0, result.stderr
    path = Path(json.loads(result.stdout)["path"])
    assert path.read_text() == "line one\nAPI_KEY=[REDACTED]\n"
    again = run_cli(main, args, stdin=text)
    assert json.loads(again.stdout)["path"] == str(path)


def test_save_output_refuses_a_terminal(run_cli: CliRunner, workspace: Path) -> None:
    result = run_cli(main, ["save-output", "--session", "s1", "-C", str(workspace)], isatty=True)
    assert result.exit_code == 2
    assert "stdin is a terminal" in result.stderr
