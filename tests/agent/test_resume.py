"""Resume and ownership: the conversation from the log alone, leases, a real crash, undo."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agenttest import call, events_of, iter_lines, of_type, open_session, real_tools, write_script
from axtest import CliRunner

from ax_agent.cli import main
from ax_agent.loop import run_turn
from ax_agent.providers import TextBlock, ToolResultBlock, ToolUseBlock
from ax_log import read_events
from libcommon import jsonio
from libcommon.locks import OwnerLease
from libcommon.paths import state_layout

# How long a subprocess test waits for the agent to reach the point it kills it at.
WAIT_S = 20.0


def test_resume_rebuilds_the_same_conversation_from_the_log(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "Reading.", "toolCalls": [call("read_file", path="a.txt")]},
            {"toolCalls": [call("write_file", path="b.txt", content="beta\n")]},
            {"text": "Done."},
        ],
    )
    first = open_session(workspace, script, tools=real_tools())
    run_turn(first, "do it")
    first.end("completed")
    original = first.messages

    again = open_session(
        workspace, write_script(tmp_path / "t.json", []), tools=real_tools(), resume=first.id
    )
    again.end("completed")
    assert again.resumed
    assert again.messages == original
    kinds = [type(block) for message in again.messages for block in message.content]
    assert kinds.count(ToolUseBlock) == 2 and kinds.count(ToolResultBlock) == 2
    started = of_type(events_of(again), "session.started")
    assert [event["resumed"] for event in started] == [False, True]


def test_continue_picks_the_newest_session(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "one"}])
    base = ["-C", str(workspace), "--provider", "script", "--trust-this-workspace"]
    first = run_cli(main, [*base, "--script", str(script), "-p", "a", "--output-format", "json"])
    session = jsonio.loads(first.stdout)["session"]
    second_script = write_script(tmp_path / "t.json", [{"expect": "b", "text": "two"}])
    again = run_cli(
        main,
        [*base, "--script", str(second_script), "--continue", "-p", "b", "--output-format", "json"],
    )
    assert again.exit_code == 0, again.stderr
    assert jsonio.loads(again.stdout)["session"] == session
    missing = run_cli(main, [*base, "--script", str(script), "--resume", "s-nope", "-p", "x"])
    assert missing.exit_code == 1 and "no event log for session s-nope" in missing.stderr


def test_a_dangling_call_is_answered_from_its_recorded_completion(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("write_file", id="w1", path="b.txt", content="x")]}, {"text": "k"}],
    )
    session = open_session(workspace, script, tools=real_tools())
    run_turn(session, "go")
    session.end("completed")
    log = session.layout.session_log(session.id)
    # Cut the log back to just after file.mutated: the process "died" before tool.completed.
    lines = log.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"file.mutated"' in line)
    log.write_bytes(b"".join(lines[: cut + 1]))
    (log.parent / f".{session.id}.index").unlink()

    again = open_session(
        workspace, write_script(tmp_path / "t.json", []), tools=real_tools(), resume=session.id
    )
    again.end("completed")
    repaired = [e for e in of_type(events_of(again), "tool.completed") if e["callId"] == "w1"]
    assert [e["outcome"] for e in repaired] == ["interrupted"]
    assert "Its change was applied and recorded: b.txt" in repaired[0]["content"]
    result = again.messages[-1].content[0]
    assert isinstance(result, ToolResultBlock) and result.is_error


def _agent(*args: str, env: dict[str, str], **kwargs: object) -> subprocess.Popen[str]:
    exe = Path(sys.executable).parent / "ax-agent"
    return subprocess.Popen(
        [str(exe), *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )  # type: ignore[call-overload]


def _wait_for_event(path: Path, session: str, kind: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if path.exists() and any(e["type"] == kind for e in read_events(path, session)):
            return
        time.sleep(0.05)
    pytest.fail(f"no {kind} in {path} within {WAIT_S}s")


def test_sigkill_mid_command_then_resume_says_its_effects_are_unknown(
    workspace: Path, tmp_path: Path, state_dir: Path, run_cli: CliRunner
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("run_command", id="long", command="sleep 3")]}, {"text": "never"}],
    )
    env = {**os.environ, "AX_STATE_DIR": str(state_dir)}
    process = _agent(
        "-C", str(workspace), "--provider", "script", "--script", str(script), "-p", "go",
        "--trust-this-workspace", "--dangerously-allow-all", "--output-format", "stream-json",
        env=env,
    )  # fmt: skip
    assert process.stdout is not None
    session = jsonio.loads(process.stdout.readline())["session"]
    log = state_layout(workspace).session_log(session)
    _wait_for_event(log, session, "command.started")
    process.send_signal(signal.SIGKILL)
    process.wait()
    lease = OwnerLease(state_layout(workspace).session_lease(session))
    holder = lease.holder()
    assert holder is not None and not holder.is_alive()  # the dead owner's lease is still there

    resume_script = write_script(tmp_path / "t.json", [{"text": "Resumed and checked."}])
    result = run_cli(
        main,
        ["-C", str(workspace), "--provider", "script", "--script", str(resume_script),
         "--resume", session, "-p", "what happened?", "--trust-this-workspace"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Resumed and checked.\n"
    events = list(read_events(log, session))
    repaired = [e for e in events if e["type"] == "tool.completed" and e["callId"] == "long"]
    assert [e["outcome"] for e in repaired] == ["interrupted"]
    assert "effects are unknown" in repaired[0]["content"]
    assert lease.holder() is None  # reclaimed, then released at the end


def test_a_second_live_process_is_refused_with_exit_4(
    workspace: Path, tmp_path: Path, state_dir: Path, run_cli: CliRunner
) -> None:
    hang = write_script(tmp_path / "s.json", [{"text": "thinking", "hang": True}])
    env = {**os.environ, "AX_STATE_DIR": str(state_dir)}
    process = _agent(
        "-C", str(workspace), "--provider", "script", "--script", str(hang), "-p", "go",
        "--trust-this-workspace", "--output-format", "stream-json", env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        session = jsonio.loads(process.stdout.readline())["session"]
        _wait_for_event(state_layout(workspace).session_log(session), session, "user.message")
        other = write_script(tmp_path / "t.json", [{"text": "no"}])
        result = run_cli(
            main,
            ["-C", str(workspace), "--provider", "script", "--script", str(other),
             "--resume", session, "-p", "x", "--trust-this-workspace"],
        )  # fmt: skip
        assert result.exit_code == 4
        assert f"owned by live process {process.pid}" in result.stderr
        # SIGINT ends the hanging turn cleanly: 130, the turn recorded as aborted.
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=WAIT_S) == 130
        tail = list(iter_lines(process.stdout.read()))
        assert [e["type"] for e in tail][-2:] == ["turn.aborted", "session.ended"]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_undo_after_edits_restores_the_files(
    workspace: Path, tmp_path: Path, tool_path: object
) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "toolCalls": [
                    call("edit_file", path="calc.py", old_string="a - b", new_string="a + b"),
                    call("write_file", path="notes/new.txt", content="new\n"),
                ]
            },
            {"text": "done"},
        ],
    )
    session = open_session(workspace, script, tools=real_tools())
    run_turn(session, "go")
    session.end("completed")
    assert "a + b" in (workspace / "calc.py").read_text()
    undone = subprocess.run(
        [tool_path("log"), "undo", "--session", session.id, "--all", "-C", str(workspace)],  # type: ignore[operator]
        capture_output=True,
        text=True,
        check=False,
    )
    assert undone.returncode == 0, undone.stderr
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert not (workspace / "notes").exists()
    assert of_type(
        list(read_events(session.layout.session_log(session.id), session.id)), "undo.applied"
    )


def test_text_blocks_survive_resume(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "first answer"}])
    session = open_session(workspace, script, tools=[])
    run_turn(session, "q")
    session.end("completed")
    again = open_session(
        workspace, write_script(tmp_path / "t.json", []), tools=[], resume=session.id
    )
    again.end("completed")
    assert [m.role for m in again.messages] == ["user", "assistant"]
    assert again.messages[1].content == [TextBlock("first answer")]


def test_resume_after_a_torn_last_line_streams_from_the_recovery(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "one"}])
    base = ["-C", str(workspace), "--provider", "script", "--trust-this-workspace"]
    first = run_cli(main, [*base, "--script", str(script), "-p", "a", "--output-format", "json"])
    session = jsonio.loads(first.stdout)["session"]
    log = state_layout(workspace).session_log(session)
    count = len(log.read_bytes().splitlines())
    with log.open("ab") as handle:
        handle.write(b'{"v":1,"seq":')  # a writer killed mid-line
    again = run_cli(
        main,
        [*base, "--script", str(write_script(tmp_path / "t.json", [{"text": "two"}])),
         "--resume", session, "-p", "b", "--output-format", "stream-json"],
    )  # fmt: skip
    assert again.exit_code == 0, again.stderr
    streamed = list(iter_lines(again.stdout))
    assert streamed[0]["type"] == "log.recovered"
    assert [e["seq"] for e in streamed] == list(range(count + 1, count + 1 + len(streamed)))
    assert streamed[1]["type"] == "session.started" and streamed[1]["resumed"] is True
