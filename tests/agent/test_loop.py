"""The turn loop end to end through the script provider: every branch, real tools, real log."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from agenttest import (
    BAD_FACT,
    ECHO,
    EXPLODE,
    NESTED,
    ScriptedApprover,
    call,
    events_of,
    first,
    of_type,
    open_session,
    real_tools,
    sandbox_enforced,
    types,
    with_tools,
    write_script,
)

from ax_agent.approvals import AnnouncingApprover
from ax_agent.loop import LOOP_STOP_AT, LOOP_WARN_AT, UNPARSEABLE_STOP_AT, run_turn
from ax_agent.providers import ToolResultBlock
from ax_slate import read_trail

FIRST_RECORDS = [
    "session.started",
    "trust.verified",
    "config.loaded",
    "sandbox.status",
    "git.context",
    "memory.loaded",
    "map.built",
]


def results_of(session) -> list[ToolResultBlock]:  # type: ignore[no-untyped-def]
    return [
        block
        for message in session.messages
        if message.role == "user"
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


def test_a_plain_answer_and_the_first_records_in_order(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json", [{"text": "Hello there.", "usage": {"inputTokens": 7}}]
    )
    session = open_session(workspace, script, tools=real_tools())
    result = run_turn(session, "hi")
    session.end("done")
    assert (result.stop_reason, result.text, result.steps, result.is_error) == (
        "end_turn",
        "Hello there.",
        1,
        False,
    )
    events = events_of(session)
    assert types(events)[:7] == FIRST_RECORDS
    assert types(events)[7:] == [
        "user.message",
        "assistant.message",
        "turn.completed",
        "session.ended",
    ]
    started = events[0]
    assert (started["provider"], started["model"], started["resumed"]) == (
        "script",
        "scripted",
        False,
    )
    assert events[1]["basis"] == "once"
    assert first(events, "assistant.message")["usage"]["inputTokens"] == 7
    assert first(events, "git.context")["repo"] is False


def test_reads_and_writes_inside_the_workspace_run_with_a_snapshot_and_a_trail(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("one\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("read_file", path="a.txt")]},
            {
                "expect": "one",
                "toolCalls": [call("write_file", id="w1", path="sub/b.txt", content="two\n")],
            },
            {"text": "done"},
        ],
    )
    session = open_session(workspace, script, tools=real_tools())
    result = run_turn(session, "go")
    assert result.stop_reason == "end_turn"
    assert (workspace / "sub" / "b.txt").read_text() == "two\n"
    events = events_of(session)
    decisions = of_type(events, "policy.decision")
    assert [d["verdict"] for d in decisions] == ["allow", "allow"]
    assert decisions[1]["rule"] == "write-inside-workspace"
    call_events = [e["type"] for e in events if e.get("callId") == "w1"]
    assert call_events == [
        "tool.requested",
        "policy.decision",
        "snapshot.stored",
        "file.mutated",
        "tool.completed",
    ]
    mutated = first(events, "file.mutated")
    assert (mutated["path"], mutated["pre"], mutated["createdDirs"]) == ("sub/b.txt", None, ["sub"])
    trail = read_trail(session.layout, session.id)
    assert [entry.tool for entry in trail] == ["read_file", "write_file"]
    assert [entry.step for entry in trail] == [1, 2]


def test_a_denied_call_is_answered_with_the_rule_and_nothing_runs(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".git").mkdir()
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("write_file", path=".git/config", content="x")]},
            {"expect": "Denied by policy", "text": "ok"},
        ],
    )
    session = open_session(workspace, script, tools=real_tools())
    assert run_turn(session, "go").stop_reason == "end_turn"
    assert not (workspace / ".git" / "config").exists()
    events = events_of(session)
    assert first(events, "policy.decision")["verdict"] == "deny"
    completed = first(events, "tool.completed")
    assert (completed["ok"], completed["outcome"]) == (False, "denied")
    assert "snapshot.stored" not in types(events)
    assert read_trail(session.layout, session.id) == []


def test_a_sensitive_read_asks_and_a_session_grant_answers_the_next_one(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".env").write_text("NAME=value\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("read_file", path=".env")]},
            {"toolCalls": [call("read_file", path=".env", limit=5)]},
            {"text": "ok"},
        ],
    )
    approver = ScriptedApprover(["session"])
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    assert len(approver.asked) == 1
    assert approver.asked[0].offers == ("no", "once", "session")
    events = events_of(session)
    assert [d["rule"] for d in of_type(events, "policy.decision")] == [
        "read-sensitive",
        "read-session-grant",
    ]
    resolved = first(events, "approval.resolved")
    assert (resolved["answer"], resolved["scope"], resolved["approver"]) == (
        "yes",
        "session",
        "test",
    )
    assert all(e["ok"] for e in of_type(events, "tool.completed"))


@pytest.mark.parametrize(("answer", "ran"), [("once", True), ("no", False)])
def test_a_command_that_asks_runs_only_on_yes(
    workspace: Path, tmp_path: Path, answer: str, ran: bool
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("run_command", command="touch made.txt")]},
            {"text": "ok"},
        ],
    )
    approver = ScriptedApprover([answer])  # type: ignore[list-item]
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    assert (workspace / "made.txt").exists() is ran
    events = events_of(session)
    decision = first(events, "policy.decision")
    assert (decision["verdict"], decision["boundary"]) == ("ask", "unsandboxed")
    assert approver.asked[0].offers == ("no", "once")  # a command is never session-grantable
    assert first(events, "approval.resolved")["answer"] == ("yes" if answer == "once" else "no")
    assert ("command.started" in types(events)) is ran
    if ran:
        ended = first(events, "command.ended")
        assert (ended["termination"], ended["exitCode"]) == ("exited", 0)
        assert first(events, "command.started")["sandbox"]["profile"] == "none"
    else:
        assert first(events, "tool.completed")["outcome"] == "declined"


def test_a_read_only_command_runs_unasked_only_inside_an_enforced_sandbox(
    workspace: Path, tmp_path: Path
) -> None:
    if not sandbox_enforced():
        pytest.skip("no enforced sandbox on this machine: every command asks")
    script = write_script(
        tmp_path / "s.json", [{"toolCalls": [call("run_command", command="ls")]}, {"text": "ok"}]
    )
    session = open_session(workspace, script, tools=real_tools())
    run_turn(session, "go")
    events = events_of(session)
    decision = first(events, "policy.decision")
    assert (decision["verdict"], decision["boundary"], decision["sandboxProfile"]) == (
        "allow",
        "sandboxed",
        "read-only",
    )
    started = first(events, "command.started")
    assert started["sandbox"]["enforced"] is True
    assert started["sandbox"]["profile"] == "read-only"


def test_off_a_terminal_every_ask_is_a_deny(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("run_command", command="touch x")]},
            {"expect": "declined", "text": "ok"},
        ],
    )
    session = open_session(workspace, script, tools=real_tools())
    run_turn(session, "go")
    resolved = first(events_of(session), "approval.resolved")
    assert (resolved["answer"], resolved["scope"], resolved["approver"]) == (
        "no",
        "deny",
        "non-interactive",
    )
    assert not (workspace / "x").exists()


def test_eof_at_a_question_denies_and_stops_the_turn(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "toolCalls": [
                    call("run_command", command="touch x"),
                    call("write_file", path="y.txt", content="y"),
                ]
            }
        ],
    )
    session = open_session(
        workspace, script, tools=real_tools(), approver=ScriptedApprover(["stop"])
    )
    result = run_turn(session, "go")
    assert result.stop_reason == "approval-ended"
    assert result.is_error
    assert not (workspace / "y.txt").exists()
    outcomes = [e["outcome"] for e in of_type(events_of(session), "tool.completed")]
    assert outcomes == ["declined", "skipped"]


def test_the_demo_approver_says_what_it_answered(workspace: Path, tmp_path: Path) -> None:
    said: list[str] = []
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("run_command", command="touch x")]}, {"text": "k"}],
    )
    approver = AnnouncingApprover("allow-all", said.append, "--dangerously-allow-all")
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    assert (workspace / "x").exists()
    assert len(said) == 1 and "answered yes once to run_command" in said[0]
    assert first(events_of(session), "approval.resolved")["approver"] == "allow-all"


def test_unknown_tools_and_unusable_input_are_answered_and_repeated_ones_stop(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("no_such_tool")]},
            {"expect": "There is no tool", "toolCalls": [call("read_file", nope=1)]},
            {"expect": "not valid", "toolCalls": [{"name": "read_file", "input": "not json"}]},
        ],
    )
    session = open_session(workspace, script, tools=real_tools())
    result = run_turn(session, "go")
    assert result.stop_reason == "unparseable-input"
    assert UNPARSEABLE_STOP_AT == 3
    completed = of_type(events_of(session), "tool.completed")
    assert [c["outcome"] for c in completed] == ["refused-input"] * 3
    assert "policy.decision" not in types(events_of(session))


def test_a_json_string_is_decoded_once_and_the_log_keeps_the_original(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [{"name": "read_file", "input": '{"path": "a.txt"}'}]},
            {"toolCalls": [{"name": "nested", "input": {"options": '{"a": 1}'}}]},
            {"expect": "'a': 1", "text": "ok"},
        ],
    )
    session = open_session(workspace, script, tools=with_tools(NESTED))
    assert run_turn(session, "go").stop_reason == "end_turn"
    events = events_of(session)
    requested = of_type(events, "tool.requested")
    assert requested[0]["input"] == '{"path": "a.txt"}'
    assert requested[1]["input"] == {"options": '{"a": 1}'}
    assert all(c["ok"] for c in of_type(events, "tool.completed"))


def test_identical_calls_are_annotated_then_stopped(workspace: Path, tmp_path: Path) -> None:
    turns = [{"toolCalls": [call("echo", text="same")]} for _ in range(LOOP_STOP_AT)]
    script = write_script(tmp_path / "s.json", turns)
    session = open_session(workspace, script, tools=[ECHO])
    result = run_turn(session, "go")
    assert result.stop_reason == "loop-detected"
    contents = [r.content for r in results_of(session)]
    assert [("in a row" in c) for c in contents] == [False, False, True, True, True]
    assert contents[LOOP_WARN_AT - 1].startswith("echo:")
    assert contents[-1].startswith("Not run")
    assert [c["outcome"] for c in of_type(events_of(session), "tool.completed")][
        -1
    ] == "loop-stopped"


def test_the_step_limit_stops_the_turn(workspace: Path, tmp_path: Path) -> None:
    turns = [{"toolCalls": [call("echo", text=str(n))]} for n in range(5)]
    session = open_session(
        workspace, write_script(tmp_path / "s.json", turns), tools=[ECHO], max_steps=2
    )
    result = run_turn(session, "go")
    assert (result.stop_reason, result.steps, result.is_error) == ("max-steps", 2, True)
    assert first(events_of(session), "turn.completed")["stopReason"] == "max-steps"


def test_tool_calls_cut_by_max_tokens_are_answered_not_run(workspace: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "toolCalls": [call("write_file", path="x.txt", content="x")],
                "stopReason": "max_tokens",
            }
        ],
    )
    session = open_session(workspace, script, tools=real_tools())
    result = run_turn(session, "go")
    assert result.stop_reason == "max_tokens"
    assert not (workspace / "x.txt").exists()
    assert [r.is_error for r in results_of(session)] == [True]
    assert first(events_of(session), "tool.completed")["outcome"] == "skipped"


def test_a_failing_tool_and_a_throwing_fact_do_not_end_the_session(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("explode"), call("bad_fact")]},
            {"expect": "the tool broke", "text": "ok"},
        ],
    )
    session = open_session(workspace, script, tools=[EXPLODE, BAD_FACT])
    assert run_turn(session, "go").stop_reason == "end_turn"
    events = events_of(session)
    decisions = of_type(events, "policy.decision")
    assert [d["rule"] for d in decisions] == ["internal", "fact-error"]
    assert [c["ok"] for c in of_type(events, "tool.completed")] == [False, False]


def test_a_provider_failure_and_a_script_that_runs_out_end_the_turn_as_errors(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"error": {"message": "overloaded"}}])
    session = open_session(workspace, script, tools=[ECHO])
    result = run_turn(session, "go")
    assert (result.stop_reason, result.detail) == ("error", "overloaded")
    again = run_turn(session, "more")
    assert again.stop_reason == "error"
    assert "has 1 turns" in (again.detail or "")


def test_abort_mid_command_kills_it_and_answers_the_skipped_calls(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "toolCalls": [
                    call("run_command", command="sleep 30"),
                    call("write_file", path="after.txt", content="x"),
                ]
            }
        ],
    )
    approver = AnnouncingApprover("test", lambda line: None, "test")
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    abort = threading.Event()
    timer = threading.Timer(0.7, abort.set)
    timer.start()
    begun = time.monotonic()
    result = run_turn(session, "go", abort)
    took = time.monotonic() - begun
    timer.cancel()
    assert result.aborted and result.stop_reason == "aborted"
    assert took < 10
    assert not (workspace / "after.txt").exists()
    events = events_of(session)
    ended = first(events, "command.ended")
    assert (ended["termination"], ended["exitCode"]) == ("aborted", None)
    assert first(events, "turn.aborted")["phase"] == "tool"
    assert [c["outcome"] for c in of_type(events, "tool.completed")] == ["ran", "skipped"]
    # The history stays valid: every tool_use has its result.
    assert [r.tool_use_id for r in results_of(session)] == ["toolu_script_1", "toolu_script_2"]


def test_abort_while_the_model_is_answering(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "thinking", "hang": True}])
    session = open_session(workspace, script, tools=[ECHO])
    abort = threading.Event()
    threading.Timer(0.2, abort.set).start()
    result = run_turn(session, "go", abort)
    assert result.aborted
    events = events_of(session)
    assert first(events, "turn.aborted")["phase"] == "model"
    assert "assistant.message" not in types(events)


def test_a_snapshot_that_cannot_be_taken_turns_the_write_into_a_no_undo_ask(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "folder").mkdir()
    script = write_script(
        tmp_path / "s.json",
        [{"toolCalls": [call("write_file", path="folder", content="x")]}, {"text": "ok"}],
    )
    approver = ScriptedApprover(["no"])
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    assert len(approver.asked) == 1
    assert "snapshot failed" in (approver.asked[0].no_undo or "")
    assert first(events_of(session), "policy.decision")["verdict"] == "allow"
    assert first(events_of(session), "tool.completed")["outcome"] == "declined"


def test_a_check_runs_under_the_boundary_its_decision_names(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (workspace / "Makefile").write_text("test:\n\ttouch made-by-check\n")
    script = write_script(
        tmp_path / "s.json", [{"toolCalls": [call("run_check", kind="test")]}, {"text": "ok"}]
    )
    approver = ScriptedApprover(["once"])
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    events = events_of(session)
    decision = first(events, "policy.decision")
    completed = first(events, "check.completed")
    assert completed["verdict"] == "passed"
    if sandbox_enforced():
        assert (decision["verdict"], decision["sandboxProfile"]) == ("allow", "workspace-write")
        assert approver.asked == []
    else:
        assert (decision["verdict"], decision["boundary"]) == ("ask", "unsandboxed")
    assert (workspace / "made-by-check").exists()


def test_always_on_a_check_binds_a_durable_grant_to_its_replay_key(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulated: with an enforced sandbox the check would run unasked, so the probe is
    # replaced with what a machine without one reports; everything else is real.
    from ax_agent import session as session_module
    from ax_agent.context import SandboxFacts
    from ax_check import detect
    from ax_policy import SandboxStatus, list_durable_grants

    monkeypatch.setattr(
        session_module, "probe_sandbox", lambda: SandboxFacts(policy=SandboxStatus())
    )
    (workspace / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (workspace / "Makefile").write_text("test:\n\ttrue\n")
    (unit,) = detect(workspace).units
    key = next(k.replay_key for k in unit.kinds if k.kind == "test")
    script = write_script(
        tmp_path / "s.json",
        [
            {"toolCalls": [call("run_check", kind="test")]},
            {"toolCalls": [call("run_check", kind="test", project=".")]},
            {"text": "ok"},
        ],
    )
    approver = ScriptedApprover(["always"])
    session = open_session(workspace, script, tools=real_tools(), approver=approver)
    run_turn(session, "go")
    assert approver.asked[0].offers == ("no", "once", "always")
    assert len(approver.asked) == 1  # the second, identical check runs under the grant
    (grant,) = list_durable_grants(session.layout.root, workspace)
    assert (grant.kind, grant.replay_key) == ("check-replay", key)
    events = events_of(session)
    assert first(events, "approval.resolved")["scope"] == "always"
    assert [d["verdict"] for d in of_type(events, "policy.decision")] == ["ask", "allow"]
    assert [c["verdict"] for c in of_type(events, "check.completed")] == ["passed", "passed"]
