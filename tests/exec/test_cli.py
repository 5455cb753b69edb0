"""The ax-exec CLI: in-process for flags and output, as a real process for signals."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from axtest import CliRunner, files_holding_secrets, secrets_file, tool_path

from ax_exec.cli import main

from .helpers import pid_alive, read_pid


def test_run_prints_the_outcome_and_mirrors_the_exit_code(run_cli: CliRunner) -> None:
    result = run_cli(main, ["run", "--timeout", "5", "--", "sh", "-c", "echo hi; exit 3"])
    assert result.exit_code == 3
    outcome = json.loads(result.stdout)
    assert outcome["termination"] == "exited"
    assert outcome["exitCode"] == 3
    assert outcome["stdout"]["head"] == "hi\n"
    assert outcome["sandbox"]["backend"] == "none"


def test_arguments_after_the_command_are_not_taken_as_options(run_cli: CliRunner) -> None:
    result = run_cli(main, ["run", "echo", "--timeout", "-x"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["stdout"]["head"] == "--timeout -x\n"


def test_shell_keeps_the_exit_code(run_cli: CliRunner) -> None:
    result = run_cli(main, ["run", "--shell", "true && exit 42"])
    assert result.exit_code == 42
    assert json.loads(result.stdout)["argv"][-1] == "true && exit 42"


def test_timeout_is_124_with_no_exit_code(run_cli: CliRunner) -> None:
    result = run_cli(main, ["run", "--timeout", "0.3", "--", "sleep", "30"])
    assert result.exit_code == 124
    outcome = json.loads(result.stdout)
    assert outcome["termination"] == "timeout" and outcome["exitCode"] is None
    assert outcome["kill"]["attempted"] and outcome["kill"]["verified"]


def test_spawn_error_is_127(run_cli: CliRunner) -> None:
    result = run_cli(main, ["run", "--", "ax-no-such-binary-xyz"])
    assert result.exit_code == 127
    assert json.loads(result.stdout)["termination"] == "spawn-error"
    assert "ax-no-such-binary-xyz" in result.stderr


def test_killed_by_a_signal_exits_like_a_shell(run_cli: CliRunner) -> None:
    result = run_cli(main, ["run", "--shell", "kill -KILL $$"])
    assert result.exit_code == 128 + signal.SIGKILL
    assert json.loads(result.stdout)["exitCode"] is None


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["run"], "give a command"),
        (["run", "--shell", "ls", "--", "ls"], "not both"),
        (["run", "--timeout", "0", "--", "ls"], "--timeout"),
        (["run", "--max-output", "10", "--", "ls"], "--max-output"),
        (["run", "--sandbox", "strict", "--", "ls"], "--sandbox"),
        (["run", "--cwd", "/no/such/dir", "--", "ls"], "/no/such/dir"),
    ],
)
def test_bad_input_is_a_usage_error(run_cli: CliRunner, argv: list[str], problem: str) -> None:
    result = run_cli(main, argv)
    assert result.exit_code == 2
    assert problem in result.stderr
    assert result.stdout == ""


def test_live_streams_to_stderr_and_keeps_stdout_json(run_cli: CliRunner) -> None:
    result = run_cli(main, ["run", "--live", "--shell", "echo streamed; echo also >&2"])
    assert result.exit_code == 0
    assert "streamed\n" in result.stderr and "also\n" in result.stderr
    assert json.loads(result.stdout)["stdout"]["head"] == "streamed\n"


def test_spill_goes_under_the_state_root(
    run_cli: CliRunner, state_dir: Path, workspace: Path
) -> None:
    result = run_cli(
        main,
        ["run", "-C", str(workspace), "--spill", "--max-output", "1024", "--", "seq", "5000"],
    )
    assert result.exit_code == 0
    spill = Path(json.loads(result.stdout)["spillPath"])
    assert spill.is_relative_to(state_dir) and spill.parent.name == "objects"
    assert spill.read_text().splitlines()[-1] == "5000"


def test_a_spilled_secret_never_reaches_the_state_root(state_dir: Path, workspace: Path) -> None:
    (workspace / ".env").write_text(secrets_file(filler_bytes=200_000))
    argv = [tool_path("exec"), "run", "-C", str(workspace), "--spill", "--max-output", "1024"]
    result = subprocess.run(
        [*argv, "--", "cat", str(workspace / ".env")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert files_holding_secrets(state_dir) == []
    spill = Path(json.loads(result.stdout)["spillPath"])
    data = spill.read_bytes()
    assert spill.name == hashlib.sha256(data).hexdigest()
    assert data.count(b"[REDACTED:anthropic-key]") == 3
    assert data.count(b"[REDACTED:github-token]") == 3
    assert data.count(b"[REDACTED:private-key]") == 3
    assert b"SETTING_01000=plain value 1000\n" in data


def test_probe_json_and_text(run_cli: CliRunner) -> None:
    as_json = run_cli(main, ["probe", "--json"])
    assert as_json.exit_code == 0
    report = json.loads(as_json.stdout)
    assert [b["backend"] for b in report["backends"]] == ["landlock", "none"]
    text = run_cli(main, ["probe"])
    assert text.exit_code == 0
    assert text.stdout.startswith(f"selected: {report['selected']}\n")
    assert report["uid"] == os.geteuid()
    assert f"probed as: uid {os.geteuid()} (" in text.stdout
    assert "none: available, not enforced" in text.stdout


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_ax_exec_kills_the_tree_first(tmp_path: Path, signum: int) -> None:
    pid_file = tmp_path / "child.pid"
    process = subprocess.Popen(
        [tool_path("exec"), "run", "--shell", f"sleep 300 & echo $! > {pid_file}; wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    child = read_pid(pid_file, timeout=20)
    assert pid_alive(child)
    process.send_signal(signum)
    stdout, _ = process.communicate(timeout=20)
    assert process.returncode == 130
    outcome = json.loads(stdout)
    assert outcome["termination"] == "aborted" and outcome["exitCode"] is None
    assert outcome["kill"]["verified"]
    deadline = time.monotonic() + 2
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pid_alive(child)


def test_pipeline_into_jq_style_consumer(tmp_path: Path) -> None:
    done = subprocess.run(
        [tool_path("exec"), "run", "--timeout", "5", "--", "ls", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert {"termination": "exited", "exitCode": 0}.items() <= json.loads(done.stdout).items()


def test_help_stays_lean() -> None:
    code = (
        "import sys\nfrom ax_exec.cli import main\n"
        "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('anthropic', 'httpx', 'rich') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_deny_env_withholds_more_names(run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORP_VAULT_ADDR", "https://vault.local")
    monkeypatch.setenv("GITHUB_TOKEN", "value-never-passed")
    result = run_cli(main, ["run", "--deny-env", "*VAULT*", "--", "env"])
    outcome = json.loads(result.stdout)
    assert "vault.local" not in outcome["stdout"]["head"]
    assert "value-never-passed" not in outcome["stdout"]["head"]
    assert {"CORP_VAULT_ADDR", "GITHUB_TOKEN"} <= set(outcome["envRemoved"])
