"""``ax-exec run --request``: the whole ExecSpec as JSON on stdin, for programs (ax-agent's seam)."""

from __future__ import annotations

import json
from pathlib import Path

from axtest import CliRunner

from ax_exec.cli import main


def test_a_spec_on_stdin_runs_and_mirrors_the_exit_status(
    run_cli: CliRunner, workspace: Path
) -> None:
    spec = {"shell": "echo $GREETING; exit 3", "cwd": str(workspace), "env": {"GREETING": "hi"}}
    result = run_cli(main, ["run", "--request"], stdin=json.dumps(spec))
    assert result.exit_code == 3
    outcome = json.loads(result.stdout)
    assert (outcome["termination"], outcome["exitCode"]) == ("exited", 3)
    assert outcome["stdout"]["head"] == "hi\n"


def test_request_mode_refuses_other_flags_and_bad_specs(run_cli: CliRunner) -> None:
    mixed = run_cli(main, ["run", "--request", "--timeout", "5"], stdin='{"argv": ["true"]}')
    assert mixed.exit_code == 2 and "give no other run flags" in mixed.stderr
    both = run_cli(main, ["run", "--request"], stdin='{"argv": ["true"], "shell": "true"}')
    assert both.exit_code == 2 and "exactly one of argv and shell" in both.stderr
    unknown = run_cli(main, ["run", "--request"], stdin='{"argv": ["true"], "colour": 1}')
    assert unknown.exit_code == 2 and "'colour': unknown field" in unknown.stderr
