"""The ax-report command line: stdin, --session, --json, --section and exit statuses."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from axtest import CliRunner

from ax_log import append_events
from ax_report.cli import main
from libcommon.paths import state_layout

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str) -> str:
    return (GOLDEN / f"{name}.jsonl").read_text()


def test_markdown_from_stdin_matches_the_golden(run_cli: CliRunner) -> None:
    result = run_cli(main, [], stdin=golden("scope"))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (GOLDEN / "scope.md").read_text()
    assert result.stderr == ""


def test_json_from_stdin_matches_the_golden(run_cli: CliRunner) -> None:
    result = run_cli(main, ["--json"], stdin=golden("veto"))
    assert result.exit_code == 0
    assert result.stdout == (GOLDEN / "veto.json").read_text()
    assert json.loads(result.stdout)["files"][0]["verdict"] == "UNCHECKED"


def test_section_flag_selects_sections(run_cli: CliRunner) -> None:
    result = run_cli(
        main, ["--json", "--section", "files", "--section", "undo"], stdin=golden("undo")
    )
    assert result.exit_code == 0
    assert list(json.loads(result.stdout)) == ["format", "events", "files", "undo"]


def test_unknown_section_exits_2_naming_it(run_cli: CliRunner) -> None:
    result = run_cli(main, ["--section", "plan"], stdin=golden("undo"))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "unknown report section 'plan'" in result.stderr


def test_invalid_lines_among_valid_ones_are_reported_and_exit_0(run_cli: CliRunner) -> None:
    result = run_cli(main, ["--json"], stdin=golden("invalid"))
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["events"] == {"read": 5, "invalid": 8}


def test_nothing_readable_exits_2_and_still_shows_why(run_cli: CliRunner) -> None:
    result = run_cli(main, [], stdin='not json\n{"no": "type"}\n')
    assert result.exit_code == 2
    assert "- line 1: not valid JSON" in result.stdout
    assert "- line 2: field 'type' is missing" in result.stdout
    assert "no readable event arrived" in result.stderr


def test_empty_stdin_exits_2(run_cli: CliRunner) -> None:
    result = run_cli(main, ["--json"], stdin="")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["events"] == {"read": 0, "invalid": 0}


def test_a_terminal_on_stdin_is_refused(run_cli: CliRunner) -> None:
    result = run_cli(main, [], stdin="", isatty=True)
    assert result.exit_code == 2
    assert "stdin is a terminal" in result.stderr
    assert result.stdout == ""


def test_same_input_gives_byte_identical_output_across_processes(
    tool_path: Callable[[str], str],
) -> None:
    outputs = {
        subprocess.run(
            [tool_path("report"), *flags],
            input=golden("approvals"),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for flags in ([], [], ["--json"], ["--json"])
    }
    assert len(outputs) == 2  # one Markdown, one JSON


def _session(workspace: Path, session: str) -> Path:
    layout = state_layout(workspace)
    append_events(
        layout,
        session,
        [
            {"type": "session.started", "workspace": str(workspace)},
            {
                "type": "file.mutated",
                "callId": "c1",
                "path": "api/a.py",
                "pre": None,
                "post": "a" * 64,
            },
            {
                "type": "command.started",
                "callId": "c2",
                "command": "pytest",
                "cwd": str(workspace / "api"),
                "sandbox": "none",
            },
            {
                "type": "command.ended",
                "callId": "c2",
                "termination": "exited",
                "exitCode": 0,
                "durationMs": 10,
            },
        ],
    )
    return layout.session_log(session)


def test_session_flag_reads_the_log(run_cli: CliRunner, workspace: Path) -> None:
    _session(workspace, "s-1")
    result = run_cli(main, ["--json", "--session", "s-1", "-C", str(workspace)])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["header"]["session"] == "s-1"
    assert [(f["path"], f["verdict"]) for f in document["files"]] == [("api/a.py", "CHECKED")]


def test_pipeline_from_ax_log_equals_reading_the_session(
    workspace: Path, tool_path: Callable[[str], str]
) -> None:
    _session(workspace, "s-pipe")
    events = subprocess.run(
        [tool_path("log"), "events", "--session", "s-pipe", "-C", str(workspace)],
        capture_output=True,
        check=True,
    ).stdout
    piped = subprocess.run(
        [tool_path("report")], input=events, capture_output=True, check=True
    ).stdout
    direct = subprocess.run(
        [tool_path("report"), "--session", "s-pipe", "-C", str(workspace)],
        capture_output=True,
        check=True,
    ).stdout
    assert piped == direct
    assert b"**CHECKED**: check ran, exit 0: command `pytest` in `api`" in direct


def test_a_corrupt_line_in_the_log_is_reported_not_skipped(
    run_cli: CliRunner, workspace: Path
) -> None:
    log = _session(workspace, "s-bad")
    lines = log.read_bytes().splitlines(keepends=True)
    lines.insert(2, b"{torn\n")
    log.write_bytes(b"".join(lines))
    result = run_cli(main, ["--json", "--session", "s-bad", "-C", str(workspace)])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["events"]["invalid"] == 1
    assert document["problems"]["listed"][0]["line"] == 3
    assert "not valid JSON" in document["problems"]["listed"][0]["problem"]


def test_a_session_without_a_log_is_an_error(run_cli: CliRunner, workspace: Path) -> None:
    result = run_cli(main, ["--session", "nope", "-C", str(workspace)])
    assert result.exit_code == 1
    assert "no event log for session nope" in result.stderr
    assert result.stdout == ""


def test_a_malformed_session_id_is_refused(run_cli: CliRunner, workspace: Path) -> None:
    result = run_cli(main, ["--session", "../etc", "-C", str(workspace)])
    assert result.exit_code == 2
    assert "invalid session id" in result.stderr


def test_a_log_from_a_newer_schema_is_refused_with_exit_5(
    run_cli: CliRunner, workspace: Path
) -> None:
    log = _session(workspace, "s-new")
    newer = b'{"v":2,"seq":5,"ts":"2026-11-30T10:00:00.000Z","session":"s-new","type":"custom"}\n'
    log.write_bytes(log.read_bytes() + newer)
    result = run_cli(main, ["--session", "s-new", "-C", str(workspace)])
    assert result.exit_code == 5
    assert "newer" in result.stderr
