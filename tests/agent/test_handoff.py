"""Fresh-session handoff (issue 26), end to end through ``ax-agent`` and the script provider.

Purposes and their retry, the successor-bound entry, adoption and its pause, ``resume``,
a kickoff claimed and never sent twice (a real process killed between the claim and the
send), the context-budget pause, the failover, and the kickoff template's trust.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agenttest import call, events_of, of_type, open_session, write_script
from axtest import CliRunner, tool_path

from ax_agent.cli import main
from ax_agent.handoff import flow
from ax_agent.handoff.records import Request, adoption, parse_request, pending_purpose
from ax_agent.handoff.snapshot import (
    KICKOFF_TEMPLATE_MAX_BYTES,
    USER_TEMPLATE_NAME,
    WORKSPACE_TEMPLATE,
    build_snapshot,
    load_template,
)
from ax_agent.loop import run_turn
from ax_log import append_events, read_events
from libcommon import jsonio
from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import state_layout

# How long a subprocess test waits for the agent to reach the point it kills it at.
WAIT_S = 20.0
# Holds a session's owner lease until its stdin closes.
HOLD_LEASE = """
import sys
from pathlib import Path
from libcommon.locks import OwnerLease
lease = OwnerLease(Path(sys.argv[1]))
lease.acquire()
print("held", flush=True)
sys.stdin.read()
lease.release()
"""
TAKEOVER = [{"expect": "Handed over from session", "text": "taking over"}]


def _log(workspace: Path, session: str) -> list[dict[str, Any]]:
    return list(read_events(state_layout(workspace).session_log(session), session))


def _base(workspace: Path, script: Path) -> list[str]:
    return ["-C", str(workspace), "--provider", "script", "--script", str(script),
            "--trust-this-workspace", "--output-format", "json"]  # fmt: skip


def _first_session(workspace: Path, tmp_path: Path, run_cli: CliRunner, *extra: str) -> str:
    (workspace / "a.txt").write_text("alpha\n")
    script = write_script(
        tmp_path / "first.json",
        [{"text": "Reading.", "toolCalls": [call("read_file", path="a.txt")]}, {"text": "ok"}],
    )
    result = run_cli(main, [*_base(workspace, script), *extra, "-p", "start"])
    assert result.exit_code == 0, result.stderr
    return str(jsonio.loads(result.stdout)["session"])


def _handoff(
    workspace: Path, tmp_path: Path, run_cli: CliRunner, session: str, *args: str
) -> tuple[int, dict[str, Any] | None, str]:
    script = write_script(tmp_path / "takeover.json", TAKEOVER)
    result = run_cli(main, ["handoff", *_base(workspace, script), "--session", session, *args])
    out = jsonio.loads(result.stdout) if result.stdout.strip() else None
    return result.exit_code, out, result.stderr


def _purposes(workspace: Path, session: str) -> list[tuple[str, bool]]:
    return [
        (e["purpose"], e["retry"]) for e in of_type(_log(workspace, session), "handoff.purpose")
    ]


def _entry(workspace: Path, session: str) -> dict[str, Any]:
    (entry,) = of_type(_log(workspace, session), "handoff.entry")
    return entry


def test_a_handoff_for_each_purpose_carries_it_apart_from_focus_and_kickoff(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    session = _first_session(workspace, tmp_path, run_cli)
    for option in ("--track-boundary", "--post-check", "--context-budget", "--user-request", ""):
        code, out, err = _handoff(
            workspace, tmp_path, run_cli, session, *([option] if option else []), "the docs"
        )
        assert code == 0, err
        assert out is not None and out["result"] == "taking over"
        purpose = option[2:] or "user-request"
        # Session-bound: recorded once in the old log, apart from the focus, and consumed.
        assert _purposes(workspace, session) == [(purpose, False)]
        (recorded,) = of_type(_log(workspace, session), "handoff.purpose")
        assert recorded["focus"] == "the docs"
        assert pending_purpose(_log(workspace, session)) is None
        successor = str(out["session"])
        entry = _entry(workspace, successor)
        assert entry["sessionId"] == successor and entry["purpose"] == purpose
        assert entry["predecessor"] == session and entry["model"] == "scripted"
        assert "Focus: the docs" in entry["kickoff"] and "read_file" in entry["kickoff"]
        assert [e["resumed"] for e in of_type(_log(workspace, successor), "session.started")] == [
            False
        ]
        # The successor never inherits the purpose: its own log holds none.
        assert pending_purpose(_log(workspace, successor)) is None
        assert not of_type(_log(workspace, successor), "handoff.purpose")
        session = successor


def test_the_successor_adopts_the_plan_and_notes_but_not_the_approval(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    from ax_agent.plans.store import plan_state, read_plan

    plan = {
        "goal": "Split the parser",
        "tasks": [{"id": "explore", "title": "Map it", "role": "explorer"}],
    }
    script = write_script(
        tmp_path / "first.json",
        [{"toolCalls": [call("plan_write", **plan), call("slate_note", key="todo", text="docs")]},
         {"text": "ok"}],
    )  # fmt: skip
    result = run_cli(main, [*_base(workspace, script), "-p", "plan it"])
    assert result.exit_code == 0, result.stderr
    session = str(jsonio.loads(result.stdout)["session"])
    layout = state_layout(workspace)
    approved = run_cli(main, ["plan", "approve", "-C", str(workspace), "--session", session])
    assert approved.exit_code == 0, approved.stderr
    assert plan_state(layout, session, _log(workspace, session)).standing == "approved"
    code, out, err = _handoff(workspace, tmp_path, run_cli, session)
    assert code == 0 and out is not None, err
    successor = str(out["session"])
    before, after = read_plan(layout, session), read_plan(layout, successor)
    assert before is not None and after is not None and after.sha256 == before.sha256
    assert after.document.session == successor
    events = _log(workspace, successor)
    assert plan_state(layout, successor, events).standing == "draft"
    (state,) = of_type(events, "handoff.state")
    assert state["snapshot"]["notes"] == {"todo": "docs"}
    assert "plan: restored as your plan" in _entry(workspace, successor)["kickoff"]


def test_a_retry_without_an_option_keeps_the_pending_purpose(
    workspace: Path, tmp_path: Path, run_cli: CliRunner, state_dir: Path
) -> None:
    session = _first_session(workspace, tmp_path, run_cli)
    # The idle wait fails: another live process owns the session. Exit 4.
    path = state_layout(workspace).session_lease(session)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        code, _, err = _handoff(workspace, tmp_path, run_cli, session, "--post-check")
    finally:
        holder.communicate("")
    assert code == 4, err
    # The replacement fails: the user's kickoff template is over its cap. Exit 1.
    (state_dir / USER_TEMPLATE_NAME).write_text("x" * (KICKOFF_TEMPLATE_MAX_BYTES + 1))
    code, _, err = _handoff(workspace, tmp_path, run_cli, session)
    assert code == 1 and f"larger than {KICKOFF_TEMPLATE_MAX_BYTES} bytes" in err
    (state_dir / USER_TEMPLATE_NAME).unlink()
    stages = [e["stage"] for e in of_type(_log(workspace, session), "handoff.failed")]
    assert stages == ["idle-wait", "replacement"]
    assert _purposes(workspace, session) == [("post-check", False), ("post-check", True)]
    # The second retry keeps it again, and succeeds: the purpose is consumed.
    code, out, err = _handoff(workspace, tmp_path, run_cli, session)
    assert code == 0, err
    assert out is not None and _entry(workspace, str(out["session"]))["purpose"] == "post-check"
    assert _purposes(workspace, session)[-1] == ("post-check", True)
    assert pending_purpose(_log(workspace, session)) is None


def test_user_request_replaces_a_pending_purpose() -> None:
    events = [{"type": "handoff.purpose", "attemptId": "h-1", "purpose": "post-check"}]
    pending = pending_purpose(events)
    assert pending is not None and pending.purpose == "post-check"
    from ax_agent.handoff.records import choose_purpose

    assert choose_purpose(parse_request([]), pending) == ("post-check", True)
    assert choose_purpose(parse_request(["--user-request"]), pending) == ("user-request", False)
    assert choose_purpose(parse_request(["fix", "it"]), None) == ("user-request", False)
    assert parse_request(["--track-boundary", "a", "b"]) == Request("track-boundary", "a b")
    with pytest.raises(UsageError, match="unknown handoff option --later"):
        parse_request(["--later"])
    with pytest.raises(UsageError, match="must come first"):
        parse_request(["focus", "--post-check"])


def test_two_purposes_are_refused_and_nothing_is_written(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    session = _first_session(workspace, tmp_path, run_cli)
    code, _, err = _handoff(workspace, tmp_path, run_cli, session, "--post-check", "--user-request")
    assert code == 2 and "give one purpose" in err
    code, _, err = _handoff(workspace, tmp_path, run_cli, session, "--effort", "extreme")
    assert code == 2 and "unknown --effort 'extreme'" in err
    assert not of_type(_log(workspace, session), "handoff.purpose")


def test_an_untrusted_workspace_is_refused_before_anything_is_written(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    session = _first_session(workspace, tmp_path, run_cli)
    script = write_script(tmp_path / "t.json", TAKEOVER)
    result = run_cli(
        main,
        ["handoff", "-C", str(workspace), "--provider", "script", "--script", str(script),
         "--session", session],
    )  # fmt: skip
    assert result.exit_code == 3, result.stderr
    assert not of_type(_log(workspace, session), "handoff.purpose")


def test_the_project_template_needs_trust_and_the_users_stays_active(
    workspace: Path, state_dir: Path
) -> None:
    layout = state_layout(workspace)
    assert load_template(layout, trusted=False).source == "builtin"
    (workspace / ".ax").mkdir()
    (workspace / WORKSPACE_TEMPLATE).write_text("PROJECT TEMPLATE")
    (state_dir / USER_TEMPLATE_NAME).write_text("MY TEMPLATE")
    trusted = load_template(layout, trusted=True)
    assert (trusted.text, trusted.source) == ("PROJECT TEMPLATE", "workspace")
    untrusted = load_template(layout, trusted=False)
    assert untrusted.text == "MY TEMPLATE"
    assert untrusted.source == f"user; {WORKSPACE_TEMPLATE} ignored: the workspace is not trusted"
    # A link planted in the workspace is refused, never followed.
    (workspace / WORKSPACE_TEMPLATE).unlink()
    (workspace / WORKSPACE_TEMPLATE).symlink_to(state_dir / USER_TEMPLATE_NAME)
    with pytest.raises(OperationFailed, match="symbolic link"):
        load_template(layout, trusted=True)


def test_adoption_pauses_on_a_model_not_permitted_then_resume_delivers_the_kickoff(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    session = _first_session(workspace, tmp_path, run_cli, "--model", "retired-model-9")
    code, out, err = _handoff(workspace, tmp_path, run_cli, session, "--post-check")
    assert code == 1 and out is not None and out["pauseReason"] == "adoption", err
    successor = str(out["session"])
    events = _log(workspace, successor)
    (state,) = of_type(events, "handoff.state")
    assert state["pauseReason"] == "adoption" and state["kickoffPending"]
    assert "'retired-model-9' is not permitted" in state["detail"]
    # No model turn started and the kickoff is not claimed.
    assert not of_type(events, "user.message") and not of_type(events, "handoff.kickoff_claimed")
    # A new prompt is refused while paused.
    script = write_script(tmp_path / "later.json", [{"text": "no"}])
    refused = run_cli(main, [*_base(workspace, script), "--resume", successor, "-p", "hi"])
    assert refused.exit_code == 1 and "paused (adoption)" in refused.stderr
    # /resume validates before it saves: the same model, or an effort it cannot take.
    base = _base(workspace, write_script(tmp_path / "takeover.json", TAKEOVER))
    again = run_cli(main, ["resume", *base, "--session", successor, "--model", "retired-model-9"])
    assert again.exit_code == 2 and "still paused" in again.stderr
    effort = run_cli(main, ["resume", *base, "--session", successor, "--effort", "high"])
    assert effort.exit_code == 2 and "takes no reasoning effort" in effort.stderr
    assert [e["pauseReason"] for e in of_type(_log(workspace, successor), "handoff.state")] == [
        "adoption"
    ]
    # A permitted model (the provider's default): unpaused state, then the kickoff, once.
    done = run_cli(main, ["resume", *base, "--session", successor])
    assert done.exit_code == 0, done.stderr
    assert jsonio.loads(done.stdout)["result"] == "taking over"
    events = _log(workspace, successor)
    kinds = [
        e["type"] for e in events if e["type"].startswith("handoff.") or e["type"] == "user.message"
    ]
    assert kinds == [
        "handoff.entry", "handoff.state", "handoff.state", "handoff.kickoff_claimed",
        "user.message",
    ]  # fmt: skip
    assert of_type(events, "handoff.state")[-1]["pauseReason"] is None
    # A reload never sends it again.
    more = write_script(tmp_path / "more.json", [{"text": "next"}])
    later = run_cli(main, [*_base(workspace, more), "--resume", successor, "-p", "and now?"])
    assert later.exit_code == 0, later.stderr
    assert len(of_type(_log(workspace, successor), "handoff.kickoff_claimed")) == 1


def test_a_failed_unpause_save_keeps_the_pause(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write_script(tmp_path / "s.json", [])
    session = open_session(workspace, script, tools=[])
    session.pause_reason = "adoption"
    real = session.record

    def refuse(*events: dict[str, Any]) -> list[dict[str, Any]]:
        if any(event.get("type") == "handoff.state" for event in events):
            raise OperationFailed("the disk is full")
        stored: list[dict[str, Any]] = real(*events)
        return stored

    monkeypatch.setattr(session, "record", refuse)
    from ax_agent.session import StartOptions

    options = StartOptions(provider="script", script=script)
    with pytest.raises(OperationFailed, match="disk is full"):
        flow.resume(session, options, None, None)
    assert session.pause_reason == "adoption"
    # Nothing changes in the process either: not the model, not the effort.
    with pytest.raises(OperationFailed, match="disk is full"):
        flow.resume(session, options, "claude-sonnet-4-5", "high")
    assert (session.pause_reason, session.model, session.effort) == ("adoption", "scripted", None)
    monkeypatch.setattr(session, "record", real)
    session.end("done")


def test_an_old_entry_without_a_purpose_is_adopted_without_an_invented_cause(
    workspace: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    layout = state_layout(workspace)
    old = "s-20260101T000000-0000aaaa"
    other = "s-20260101T000000-0000bbbb"
    # Written by hand as an entry from before purposes: no purpose, model or effort.
    append_events(
        layout,
        old,
        [{"type": "handoff.entry", "sessionId": old, "snapshot": {"notes": {"goal": "ship"}},
          "kickoff": "Continue the release."}],
    )  # fmt: skip
    # An entry addressed to another session id is never adopted.
    append_events(
        layout, other, [{"type": "handoff.entry", "sessionId": "s-someone-else", "snapshot": {}}]
    )
    script = write_script(
        tmp_path / "s.json",
        [{"expect": "Continue the release.", "text": "on it"}, {"text": "next"}],
    )
    result = run_cli(main, [*_base(workspace, script), "--resume", old, "-p", "go"])
    assert result.exit_code == 0, result.stderr
    events = _log(workspace, old)
    texts = [e["content"] for e in of_type(events, "user.message")]
    assert texts == ["Continue the release.", "go"]
    assert "Why:" not in texts[0]
    (state,) = of_type(events, "handoff.state")
    assert state["snapshot"]["notes"] == {"goal": "ship"}  # restored into the slate
    untouched = run_cli(
        main, [*_base(workspace, write_script(tmp_path / "o.json", [{"text": "hi"}])),
               "--resume", other, "-p", "hello"],
    )  # fmt: skip
    assert untouched.exit_code == 0, untouched.stderr
    assert not of_type(_log(workspace, other), "handoff.state")


def test_a_saved_state_wins_over_an_entry() -> None:
    entry = {"type": "handoff.entry", "sessionId": "s-1", "snapshot": {}, "kickoff": "k"}
    state: dict[str, Any] = {
        "type": "handoff.state",
        "snapshot": {},
        "pauseReason": None,
        "kickoffPending": False,
    }
    found = adoption("s-1", [entry, state])
    assert not found.unadopted and not found.kickoff_pending
    assert adoption("s-2", [entry]).entry is None


def test_the_snapshot_folds_threads_and_episodes_when_the_log_has_them(workspace: Path) -> None:
    layout = state_layout(workspace)
    assert build_snapshot(layout, "s-none", [])["threads"] == []
    events = [
        {"seq": 1, "type": "thread.started", "threadId": "t1", "title": "parser"},
        {"seq": 2, "type": "thread.started", "threadId": "t2", "title": "docs"},
        {"seq": 3, "type": "thread.ended", "threadId": "t1", "outcome": "done"},
        {"seq": 4, "type": "episode.recorded", "threadId": "t1", "summary": "parser fixed"},
    ]
    snapshot = build_snapshot(layout, "s-none", events)
    assert snapshot["threads"] == [
        {"threadId": "t2", "title": "docs", "last": "thread.started"},
        {"threadId": "t1", "title": "parser", "outcome": "done", "last": "thread.ended"},
    ]
    assert snapshot["episodes"] == [{"threadId": "t1", "summary": "parser fixed"}]


def test_a_long_scripted_session_reaches_the_context_budget_and_pauses(
    workspace: Path, tmp_path: Path, run_cli: CliRunner, state_dir: Path
) -> None:
    # The budget: what a first request holds (system prompt, tools), and a few reads more.
    probe = open_session(workspace, write_script(tmp_path / "p.json", [{"text": "x"}]))
    run_turn(probe, "read it all")
    assert probe.window is not None and probe.window.decision is not None
    budget = probe.window.decision.tokens_after + 3000
    probe.end("done")
    (state_dir / "config.json").write_text(jsonio.dumps({"contextBudget": budget}).decode())
    for part in range(40):
        text = "".join(f"part {part}, line {n} of a long file\n" for n in range(60))
        (workspace / f"part{part}.txt").write_text(text)
    reads = [{"toolCalls": [call("read_file", path=f"part{part}.txt")]} for part in range(40)]
    script = write_script(tmp_path / "long.json", [*reads, {"text": "never reached"}])
    result = run_cli(main, [*_base(workspace, script), "--max-steps", "60", "-p", "read it all"])
    assert result.exit_code == 1, result.stderr
    out = jsonio.loads(result.stdout)
    assert out["stopReason"] == "context-budget"
    session = str(out["session"])
    events = _log(workspace, session)
    (state,) = of_type(events, "handoff.state")
    assert (
        state["pauseReason"] == "context-budget"
        and f"context budget of {budget}" in state["detail"]
    )
    calls = len(of_type(events, "assistant.message"))
    assert 1 < calls < 40  # paused mid-work, well before the script's end
    # New prompts are refused while paused.
    refused = run_cli(main, [*_base(workspace, script), "--resume", session, "-p", "more"])
    assert refused.exit_code == 1 and "paused (context-budget)" in refused.stderr
    # A boundary handoff during the pause names both causes; the successor is not paused.
    code, handed, err = _handoff(workspace, tmp_path, run_cli, session, "--track-boundary")
    assert code == 0, err
    (purpose,) = of_type(_log(workspace, session), "handoff.purpose")
    assert (purpose["purpose"], purpose["pauseReason"]) == ("track-boundary", "context-budget")
    assert handed is not None and handed["pauseReason"] is None


def test_a_budget_pause_resumes_on_any_model_and_counts_again(
    workspace: Path, tmp_path: Path
) -> None:
    session = open_session(workspace, write_script(tmp_path / "s.json", [{"text": "ok"}]), tools=[])
    session.pause_reason = "context-budget"
    from ax_agent.session import StartOptions

    assert flow.resume(session, StartOptions(provider="script"), None, None) is None
    assert session.pause_reason is None
    assert run_turn(session, "go on").text == "ok"
    session.end("done")


def test_failover_continues_once_per_matching_attempt_and_never_when_aborted_or_paused(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"error": {"message": "overloaded", "retryable": True}}, {"text": "continuing"},
         {"text": "again"}],
    )  # fmt: skip
    session = open_session(workspace, script, tools=[])
    assert run_turn(session, "work").stop_reason == "error"
    result = flow.recover(session)
    assert result.text == "continuing"
    with pytest.raises(OperationFailed, match="nothing to recover"):
        flow.recover(session)
    events = events_of(session)
    (failover,) = of_type(events, "handoff.failover")
    assert [e["attemptId"] for e in of_type(events, "handoff.continued")] == [failover["attemptId"]]
    # An aborted attempt produces none.
    run_turn(session, "x", _set())
    aborted = flow.recover(session, _set())
    assert aborted.aborted
    # A paused session takes no failover at all.
    session.pause_reason = "context-budget"
    with pytest.raises(OperationFailed, match="paused"):
        flow.recover(session)
    session.pause_reason = None
    events = events_of(session)
    attempts = [e["attemptId"] for e in of_type(events, "handoff.failover")]
    assert len(attempts) == len(set(attempts)) == 2
    assert len(of_type(events, "handoff.continued")) == 1
    session.end("done")


def test_a_replaced_failover_attempt_produces_no_continuation(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "a"}, {"text": "b"}, {"text": "c"}])
    session = open_session(workspace, script, tools=[])
    probe = flow._StartProbe(session, session.provider, "f-old")
    session.failover_attempt = "f-new"  # a newer attempt replaced it
    from ax_agent.providers import Message, ProviderRequest, TextBlock

    request = ProviderRequest("", [Message("user", [TextBlock("x")])], [], session.model)
    probe.complete(request)
    assert not of_type(events_of(session), "handoff.continued")
    # The matching start: said at most once.
    session.failover_attempt = "f-old"
    probe.complete(request)
    probe.complete(request)
    assert [e["attemptId"] for e in of_type(events_of(session), "handoff.continued")] == ["f-old"]
    session.end("done")


def _set() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


def test_a_crash_between_claim_and_send_never_replays_the_kickoff(
    workspace: Path, tmp_path: Path, run_cli: CliRunner, state_dir: Path
) -> None:
    session = _first_session(workspace, tmp_path, run_cli)
    # A user-configured MCP server that never answers holds the first turn (up to its
    # start budget) after the claim and before the kickoff's message: the kill lands there.
    hang = {"command": sys.executable, "args": ["-c", "import time; time.sleep(10)"]}
    config = state_dir / "config.json"
    config.write_text(jsonio.dumps({"mcpServers": {"slow": hang}}).decode())
    script = write_script(tmp_path / "takeover.json", TAKEOVER)
    env = {**os.environ, "AX_STATE_DIR": str(state_dir)}
    process = subprocess.Popen(
        [tool_path("agent"), "handoff", *_base(workspace, script), "--session", session],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        successor = _wait_for_claim(workspace, session)
        assert not of_type(_log(workspace, successor), "user.message")
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    config.unlink()
    reload = write_script(tmp_path / "reload.json", [{"expect": "go on", "text": "continuing"}])
    result = run_cli(main, [*_base(workspace, reload), "--resume", successor, "-p", "go on"])
    assert result.exit_code == 0, result.stderr
    assert "claimed but never sent" in result.stderr
    events = _log(workspace, successor)
    assert len(of_type(events, "handoff.kickoff_claimed")) == 1
    assert [e["content"] for e in of_type(events, "user.message")] == ["go on"]
    assert len(of_type(events, "handoff.kickoff_failed")) == 1


def _wait_for_claim(workspace: Path, session: str) -> str:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        transferred = of_type(_log(workspace, session), "handoff.transferred")
        if transferred:
            successor = str(transferred[0]["successor"])
            if of_type(_log(workspace, successor), "handoff.kickoff_claimed"):
                return successor
        time.sleep(0.02)
    raise AssertionError("the successor never claimed its kickoff")


def test_a_cancelled_terminal_handoff_keeps_its_purpose_for_the_retry(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_agent.terminal import commands

    from .terminal.test_units import make

    session = open_session(workspace, write_script(tmp_path / "s.json", []), tools=[])
    screen, _, err = make(tty=False)
    context = commands.Context(session, None, screen, None)  # type: ignore[arg-type]

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(flow, "kickoff_text", interrupted)
        with pytest.raises(KeyboardInterrupt):
            commands.run_line(context, "/handoff --track-boundary parser")
    (cancelled,) = of_type(events_of(session), "handoff.failed")
    assert cancelled["stage"] == "cancelled"
    assert commands.run_line(context, "/handoff") == "handoff"
    assert context.successor is not None and "(track-boundary, a retry" in err.getvalue()
    assert [(e["purpose"], e["retry"]) for e in of_type(events_of(session), "handoff.purpose")] == [
        ("track-boundary", False),
        ("track-boundary", True),
    ]
    assert _entry(workspace, context.successor)["purpose"] == "track-boundary"
    session.end("done")


def test_a_send_that_fails_after_its_claim_is_reported_and_never_replayed(
    workspace: Path, tmp_path: Path
) -> None:
    session = open_session(workspace, write_script(tmp_path / "s.json", [{"text": "x"}]), tools=[])
    session.pause_reason = "context-budget"  # the send is refused after the claim
    with pytest.raises(OperationFailed, match="claimed but its send failed"):
        flow.deliver(session, "the kickoff")
    session.pause_reason = None
    with pytest.raises(OperationFailed, match="never sent twice"):
        flow.deliver(session, "the kickoff")
    events = events_of(session)
    assert len(of_type(events, "handoff.kickoff_claimed")) == 1
    (failure,) = of_type(events, "handoff.kickoff_failed")
    assert "paused" in failure["reason"]
    assert not of_type(events, "user.message")
    session.end("done")
