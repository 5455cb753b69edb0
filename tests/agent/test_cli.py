"""The headless command line, in-process: output formats, prompts, exit statuses, trust."""

from __future__ import annotations

from pathlib import Path

import pytest
from agenttest import call, iter_lines, write_script
from axtest import CliRunner

from ax_agent.cli import main
from ax_log import read_events, session_logs
from libcommon import jsonio
from libcommon.paths import state_layout

FIRST_RECORDS = [
    "session.started",
    "trust.verified",
    "config.loaded",
    "sandbox.status",
    "git.context",
    "memory.loaded",
    "map.built",
]


def argv(workspace: Path, script: Path, *extra: str) -> list[str]:
    return ["-C", str(workspace), "--provider", "script", "--script", str(script), *extra]


def answer_script(tmp_path: Path, text: str = "All good.") -> Path:
    return write_script(tmp_path / "s.json", [{"text": text, "usage": {"outputTokens": 3}}])


def test_text_output_is_the_answer_on_stdout_and_chrome_on_stderr(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    result = run_cli(
        main, argv(workspace, answer_script(tmp_path), "-p", "hi", "--trust-this-workspace")
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "All good.\n"
    assert "ax-agent: session s-" in result.stderr


def test_json_output_is_one_object(workspace: Path, tmp_path: Path, run_cli: CliRunner) -> None:
    result = run_cli(
        main,
        argv(
            workspace,
            answer_script(tmp_path),
            "-p",
            "hi",
            "--output-format",
            "json",
            "--trust-this-workspace",
        ),
    )
    assert result.exit_code == 0, result.stderr
    document = jsonio.loads(result.stdout)
    assert set(document) == {"session", "result", "isError", "turns", "usage", "stopReason"}
    assert (document["result"], document["isError"], document["turns"]) == ("All good.", False, 1)
    assert document["usage"]["outputTokens"] == 3
    assert document["stopReason"] == "end_turn"


def test_stream_json_is_the_sessions_events_as_they_happen(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("write_file", path="a.txt", content="x")]}, {"text": "done"}],
    )
    result = run_cli(
        main,
        argv(
            workspace,
            script,
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--trust-this-workspace",
        ),
    )
    assert result.exit_code == 0, result.stderr
    streamed = list(iter_lines(result.stdout))
    assert [e["type"] for e in streamed][:7] == FIRST_RECORDS
    assert streamed[-1]["type"] == "session.ended"
    session = streamed[0]["session"]
    stored = list(read_events(state_layout(workspace).session_log(session), session))
    assert [e["seq"] for e in streamed] == [e["seq"] for e in stored]


def test_the_prompt_can_come_on_stdin(workspace: Path, tmp_path: Path, run_cli: CliRunner) -> None:
    script = write_script(tmp_path / "s.json", [{"expect": "from stdin", "text": "got it"}])
    result = run_cli(main, argv(workspace, script, "--trust-this-workspace"), stdin="from stdin\n")
    assert (result.exit_code, result.stdout) == (0, "got it\n")


def test_no_prompt_or_an_empty_one_is_a_usage_error(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    script = answer_script(tmp_path)
    empty = run_cli(main, argv(workspace, script, "--trust-this-workspace"), stdin="  \n")
    assert empty.exit_code == 2 and "the prompt is empty" in empty.stderr
    bad = run_cli(main, argv(workspace, script, "-p", "x", "--output-format", "yaml"))
    assert bad.exit_code == 2 and "--output-format" in bad.stderr
    assert session_logs(state_layout(workspace)) == {}


def test_an_untrusted_workspace_off_a_terminal_exits_3_and_writes_nothing(
    workspace: Path, tmp_path: Path, run_cli: CliRunner, state_dir: Path
) -> None:
    result = run_cli(main, argv(workspace, answer_script(tmp_path), "-p", "hi"))
    assert result.exit_code == 3
    assert "is not trusted" in result.stderr
    assert "--trust-this-workspace" in result.stderr
    assert not (state_dir / "projects").exists()


def test_recorded_trust_is_enough(workspace: Path, tmp_path: Path, run_cli: CliRunner) -> None:
    from ax_policy import grant_trust

    grant_trust(state_layout(workspace))
    result = run_cli(
        main, argv(workspace, answer_script(tmp_path), "-p", "hi", "--output-format", "json")
    )
    assert result.exit_code == 0, result.stderr
    session = jsonio.loads(result.stdout)["session"]
    events = list(read_events(state_layout(workspace).session_log(session), session))
    assert events[1]["type"] == "trust.verified" and events[1]["basis"] == "store"


def test_a_state_root_inside_the_workspace_is_refused(
    workspace: Path, tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AX_STATE_DIR", str(workspace / ".state"))
    result = run_cli(
        main, argv(workspace, answer_script(tmp_path), "-p", "hi", "--trust-this-workspace")
    )
    assert result.exit_code == 2
    assert "inside the workspace" in result.stderr
    assert not (workspace / ".state").exists()


def test_a_limit_exits_1(workspace: Path, tmp_path: Path, run_cli: CliRunner) -> None:
    script = write_script(
        tmp_path / "s.json", [{"toolCalls": [call("list_dir", path=".")]} for _ in range(3)]
    )
    result = run_cli(
        main,
        argv(
            workspace,
            script,
            "-p",
            "go",
            "--max-steps",
            "2",
            "--output-format",
            "json",
            "--trust-this-workspace",
        ),
    )
    assert result.exit_code == 1
    document = jsonio.loads(result.stdout)
    assert (document["stopReason"], document["isError"], document["turns"]) == (
        "max-steps",
        True,
        2,
    )
    assert "stopped (max-steps)" in result.stderr


def test_dangerously_allow_all_says_so_on_stderr_and_in_the_log(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("run_command", command="touch made")]}, {"text": "done"}],
    )
    result = run_cli(
        main,
        argv(
            workspace,
            script,
            "-p",
            "go",
            "--dangerously-allow-all",
            "--output-format",
            "stream-json",
            "--trust-this-workspace",
        ),
    )
    assert result.exit_code == 0, result.stderr
    assert "WARNING: --dangerously-allow-all" in result.stderr
    assert "answered yes once to run_command" in result.stderr
    events = list(iter_lines(result.stdout))
    custom = [e for e in events if e["type"] == "custom"]
    assert custom and "--dangerously-allow-all" in custom[0]["data"]["note"]
    resolved = [e for e in events if e["type"] == "approval.resolved"]
    assert [(e["answer"], e["approver"]) for e in resolved] == [("yes", "allow-all")]
    assert (workspace / "made").exists()


def test_a_failed_turn_exits_1_with_the_reason(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    script = write_script(tmp_path / "s.json", [{"error": {"message": "server overloaded"}}])
    result = run_cli(main, argv(workspace, script, "-p", "hi", "--trust-this-workspace"))
    assert result.exit_code == 1
    assert "server overloaded" in result.stderr
    assert result.stdout == ""


def test_stream_json_includes_events_other_tools_append(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (workspace / "Makefile").write_text("test:\n\ttrue\n")
    script = write_script(
        tmp_path / "s.json", [{"toolCalls": [call("run_check", kind="test")]}, {"text": "ok"}]
    )
    result = run_cli(
        main,
        argv(
            workspace,
            script,
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--trust-this-workspace",
            "--dangerously-allow-all",
        ),
    )
    assert result.exit_code == 0, result.stderr
    kinds = [e["type"] for e in iter_lines(result.stdout)]
    assert (
        kinds.index("check.started")
        < kinds.index("check.completed")
        < kinds.index("tool.completed")
    )
    assert [e["seq"] for e in iter_lines(result.stdout)] == list(range(1, len(kinds) + 1))


def test_on_a_terminal_the_trust_question_is_asked_and_yes_is_recorded(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    from ax_policy import check_trust

    script = answer_script(tmp_path)
    declined = run_cli(main, argv(workspace, script, "-p", "hi"), stdin="\n", isatty=True)
    assert declined.exit_code == 3
    assert "[y/N]" in declined.stderr and "was declined" in declined.stderr
    assert not check_trust(state_layout(workspace)).trusted
    accepted = run_cli(
        main,
        argv(workspace, script, "-p", "hi", "--output-format", "json"),
        stdin="y\n",
        isatty=True,
    )
    assert accepted.exit_code == 0, accepted.stderr
    assert check_trust(state_layout(workspace)).trusted
