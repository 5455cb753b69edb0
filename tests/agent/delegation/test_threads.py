"""Orchestrator mode and worker threads (issue 26), end to end.

The model is the script provider; the whitelisted MCP server is the installed
``ax-mcp`` (the server tests/mcptest.py drives) as a real subprocess of the
host session; the second parent is a real ``ax-agent`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agenttest import ScriptedApprover, call, of_type
from axtest import CliRunner, tool_path

from ax_agent.loop import PARALLEL_CALLS_REMINDER, run_turn
from ax_agent.mcp_servers import client as mcp_client
from ax_agent.orchestrator import ORCHESTRATOR_ONLY
from ax_agent.session import Session, StartOptions, start_session
from ax_agent.tools.registry import PARENT_ONLY
from ax_log import read_events
from libcommon import clock, jsonio

WRITERS = {"write_file", "edit_file", "run_command", "run_check", "project_setup"}
MCP_TOOL = "mcp__axmcp__check_detect"


@dataclass
class PrefixIds:
    """Deterministic ids, counted per prefix: the sessions are s-0001, s-0002, …"""

    counters: dict[str, int] = field(default_factory=dict)

    def new_id(self, prefix: str) -> str:
        self.counters[prefix] = self.counters.get(prefix, 0) + 1
        return f"{prefix}-{self.counters[prefix]:04d}"


@pytest.fixture(autouse=True)
def known_ids() -> Iterator[None]:
    with clock.use(ids=PrefixIds()):
        yield


@pytest.fixture(autouse=True)
def patient_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine is shared: let the server take its time to start, as a person would."""
    monkeypatch.setattr(mcp_client, "MCP_STARTUP_BUDGET_S", 30.0)


def configure(state: Path, workspace: Path, **extra: Any) -> None:
    server = {"command": tool_path("mcp"), "args": ["-C", str(workspace)]}
    (state / "config.json").write_text(json.dumps({"mcpServers": {"axmcp": server}, **extra}))


def script(path: Path, turns: list[dict[str, Any]], tasks: dict[str, Any]) -> Path:
    path.write_text(jsonio.dumps({"model": "scripted", "turns": turns, "tasks": tasks}).decode())
    return path


def start(workspace: Path, script_path: Path, answers: list[Any]) -> Session:
    return start_session(
        StartOptions(
            workspace=workspace,
            environ=dict(os.environ),
            provider="script",
            script=script_path,
            trust_once=True,
            approver=ScriptedApprover(list(answers)),
            orchestrator=True,
        )
    )


def log_of(session: Session, session_id: str | None = None) -> list[dict[str, Any]]:
    sid = session_id or session.id
    return list(read_events(session.layout.session_log(sid), sid))


def test_an_orchestrated_session_with_two_workers_one_handed_a_whitelisted_server(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    state = Path(os.environ["AX_STATE_DIR"])
    # The pattern is unanchored and names one tool: the server it belongs to is chosen.
    configure(state, workspace, workerExtensions=["check_det"])
    turns = [
        {"tool_calls": [call("thread", label="with-mcp", task="detect the checks")]},
        {
            "tool_calls": [
                call("thread", label="plain", task="read b.txt", extensions=[]),
            ]
        },
        {"text": "both dispatched"},
    ]
    plain = "s-0003"  # the parent is s-0001, then one id per worker (PrefixIds)
    turns += [
        {"tool_calls": [call("threads", action="send", thread=plain, message="look again")]},
        {"tool_calls": [call("threads", action="list")]},
        {"tool_calls": [call("episode", thread=plain, summary="b read", evidence=["b.txt"])]},
        {"text": "steered"},
    ]
    tasks = {
        "with-mcp": [
            {"tool_calls": [call(MCP_TOOL), call("read_file", path="a.txt")]},
            {"text": "the checks: none resolve", "expect": "[ax reminder]"},
        ],
        "plain": [
            {"tool_calls": [call(MCP_TOOL)]},
            {"tool_calls": [call("read_file", path="b.txt")]},
            {"text": "b says beta"},
            # The follow-up, in the same conversation.
            {"text": "still beta", "expect": "look again"},
        ],
    }
    # Two dispatches and a follow-up asked (a worker changes files), and the worker's
    # MCP call forwarded to the same person.
    session = start(workspace, script(tmp_path / "p1.json", turns, tasks), ["once"] * 4)
    try:
        # The orchestrator's registry: no writer, no server's tool, its own three.
        assert session.orchestrating
        assert not WRITERS & set(session.tools)
        assert set(session.tools) >= ORCHESTRATOR_ONLY
        result = run_turn(session, "do the work")
        assert result.stop_reason == "end_turn", result.detail
        assert result.text == "both dispatched"
        assert not any(name.startswith("mcp__") for name in session.tools)
        assert "axmcp: mcp__axmcp__" in session.system  # its instructions name the server
        parent = log_of(session)
        started = of_type(parent, "thread.started")
        assert [(e["label"], e["extensions"]) for e in started] == [
            ("with-mcp", ["axmcp"]),
            ("plain", []),
        ]
        with_mcp = started[0]["threadId"]
        assert started[1]["threadId"] == plain
        answers = of_type(parent, "thread.message")
        assert [a["text"] for a in answers] == ["the checks: none resolve", "b says beta"]

        # The whitelisted worker called the server's tool; the other had no such tool.
        first = log_of(session, with_mcp)
        done = {e["callId"]: e for e in of_type(first, "tool.completed")}
        mcp_call = next(e for e in of_type(first, "tool.requested") if e["tool"] == MCP_TOOL)
        assert done[mcp_call["callId"]]["ok"], done[mcp_call["callId"]]["content"]
        assert "mcp-result from MCP server axmcp" in done[mcp_call["callId"]]["content"]
        assert of_type(parent, "mcp.call")[0]["tool"] == "check_detect"
        second = log_of(session, plain)
        refused = next(e for e in of_type(second, "tool.completed") if e["outcome"] != "ran")
        assert refused["outcome"] == "refused-input"
        assert f"There is no tool {MCP_TOOL!r}" in refused["content"]
        # Every worker is told once per turn to batch independent calls, in its own log.
        assert [e["kind"] for e in of_type(first, "reminder.sent")] == ["parallel-calls"]
        assert len(of_type(second, "reminder.sent")) == 1

        # Steer: a follow-up continues the same worker's conversation.
        result = run_turn(session, "ask plain again")
        assert result.stop_reason == "end_turn", result.detail
        parent = log_of(session)
        assert of_type(parent, "thread.message")[-2:] == [
            {**of_type(parent, "thread.message")[-2], "sender": "parent", "text": "look again"},
            {**of_type(parent, "thread.message")[-1], "sender": "worker", "text": "still beta"},
        ]
        listed = [e for e in of_type(parent, "tool.completed") if "answer(s)" in e["content"]]
        assert f"{plain} plain: open, 2 answer(s); last: still beta" in listed[-1]["content"]
        # The worker's own question went to the same person, naming its thread.
        asked = session.approver.asked  # type: ignore[attr-defined]
        assert [(r.tool, r.task) for r in asked] == [
            ("thread", None),
            (MCP_TOOL, "with-mcp"),
            ("thread", None),
            ("threads", None),
        ]
        assert asked[1].task_kind == "a worker thread, in the workspace itself"
        rules = [e["rule"] for e in of_type(parent, "policy.decision")]
        # Each dispatch and the follow-up were a person's decision; the list and the
        # episode asked nobody.
        assert rules == ["delegate-mutating"] * 3 + ["delegate-none", "internal"]
        episode = of_type(parent, "episode.recorded")[0]
        assert (episode["threadId"], episode["evidence"]) == (plain, ["b.txt"])
        again = log_of(session, plain)
        assert [e["resumed"] for e in of_type(again, "session.started")] == [False, True]
    finally:
        session.end("test")

    # A new parent process takes the worker up again by id; its config whitelists nothing.
    configure(state, workspace)
    turns2 = [
        {"tool_calls": [call("threads", action="send", thread=plain, message="once more")]},
        {"text": "resumed it"},
    ]
    tasks2 = {"plain": [{"text": "beta, a third time", "expect": "once more"}]}
    path2 = script(tmp_path / "p2.json", turns2, tasks2)
    run = subprocess.run(
        [tool_path("agent"), "-C", str(workspace), "--provider", "script", "--script",
         str(path2), "--orchestrator", "--trust-this-workspace", "--dangerously-allow-all",
         "--output-format", "json",
         "-p", "carry on"],
        capture_output=True, text=True, timeout=60, env=dict(os.environ), check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["result"] == "resumed it"
    parent2 = list(read_events(session.layout.session_log(summary["session"]), summary["session"]))
    resumed = of_type(parent2, "thread.started")[0]
    assert (resumed["threadId"], resumed["resumed"], resumed["extensions"]) == (plain, True, [])
    assert (resumed["label"], resumed["task"]) == ("plain", "read b.txt")
    assert of_type(parent2, "thread.message")[-1]["text"] == "beta, a third time"
    worker = log_of(session, plain)
    # The whole conversation was sent again: the first task, both answers, the follow-ups.
    assert [e["content"] for e in of_type(worker, "user.message")] == [
        "read b.txt",
        "look again",
        "once more",
    ]


def test_no_worker_ever_obtains_the_orchestrators_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from ax_agent.delegation import roles
    from ax_agent.delegation.threads import worker_tools
    from ax_policy import DELEGATE_ROLES

    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = start(workspace, script(tmp_path / "s.json", [], {}), [])
    try:
        assert session.threads is not None
        # The parent's full set holds them, and the role names them.
        session.threads.full_tools.update(session.threads.own_tools)
        assert set(session.threads.full_tools) >= ORCHESTRATOR_ONLY
        worker = roles.ROLES["worker"]
        sneaky = replace(worker, tools=(*worker.tools, "thread", "threads", "episode"))
        monkeypatch.setitem(roles.ROLES, "worker", sneaky)
        tools = worker_tools(session, [])
        assert not set(tools) & PARENT_ONLY
        assert {"write_file", "run_command", "read_file"} <= set(tools)
        # And a role table naming one of them refuses to load.
        with pytest.raises(RuntimeError, match="worker holds parent-only tool"):
            roles.check_table(DELEGATE_ROLES)
    finally:
        session.end("test")


def test_orchestrator_off_gives_the_full_set_back_and_on_again_restricts(tmp_path: Path) -> None:
    from ax_agent.orchestrator import set_orchestrator

    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = start(workspace, script(tmp_path / "s.json", [], {}), [])
    try:
        set_orchestrator(session, False)
        assert {"write_file", "run_command"} <= set(session.tools)
        assert not ORCHESTRATOR_ONLY & set(session.tools)
        assert "orchestrator of this session" not in session.system
        set_orchestrator(session, True)
        assert not WRITERS & set(session.tools)
        assert "orchestrator of this session" in session.system
        # A prompt changed while it was off is the one "off" gives back later.
        set_orchestrator(session, False)
        set_orchestrator(session, False)
        session.system += "\nchanged while off"
        set_orchestrator(session, True)
        set_orchestrator(session, False)
        assert session.system.endswith("\nchanged while off")
    finally:
        session.end("test")


def test_the_reminder_never_reaches_the_persons_screen(tmp_path: Path) -> None:
    """A worker's log replayed through the terminal's renderer: its calls show, the
    reminder that follows them does not."""
    import io

    from ax_agent.terminal.render import Renderer
    from ax_agent.terminal.screen import Screen
    from ax_agent.terminal.status import StatusLine

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    turns = [{"tool_calls": [call("thread", label="w", task="read a")]}, {"text": "ok"}]
    tasks = {
        "w": [
            {"tool_calls": [call("read_file", path="a.txt"), call("list_dir", path=".")]},
            {"tool_calls": [call("read_file", path="a.txt", id="again")]},
            {"text": "alpha"},
        ]
    }
    session = start(workspace, script(tmp_path / "s.json", turns, tasks), ["once"])
    try:
        run_turn(session, "go")
        thread_id = of_type(log_of(session), "thread.started")[0]["threadId"]
    finally:
        session.end("test")
    worker = log_of(session, thread_id)
    # Once per turn: two batches of results, one reminder.
    assert [e["text"] for e in of_type(worker, "reminder.sent")] == [PARALLEL_CALLS_REMINDER]
    out, err = io.StringIO(), io.StringIO()
    screen = Screen(out, err, out_tty=False, err_tty=False, environ={"TERM": "dumb"})
    renderer = Renderer(screen, StatusLine(screen, time.monotonic))
    for event in worker:
        renderer.on_event(event)
    shown = out.getvalue() + err.getvalue()
    assert "read_file(a.txt)" in shown
    assert "reminder" not in shown and "issue independent" not in shown


def test_a_stopped_thread_takes_no_follow_up(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    thread_id = "s-0002"
    turns = [
        {"tool_calls": [call("thread", label="w", task="wait")]},
        {"text": "ok"},
        {"tool_calls": [call("threads", action="stop", thread=thread_id)]},
        {"tool_calls": [call("threads", action="send", thread=thread_id, message="more")]},
        {"text": "done"},
    ]
    session = start(
        workspace, script(tmp_path / "s.json", turns, {"w": [{"text": "hi"}]}), ["once"]
    )
    try:
        run_turn(session, "go")
        assert of_type(log_of(session), "thread.started")[0]["threadId"] == thread_id
        run_turn(session, "stop it")
        completed = of_type(log_of(session), "tool.completed")
        assert completed[-2]["content"].endswith("stopped")
        # Refused before anyone is asked (the approver had one answer, for the dispatch).
        assert completed[-1]["outcome"] == "refused"
        assert "was stopped; no follow-up reaches it" in completed[-1]["content"]
        assert of_type(log_of(session, thread_id), "thread.ended")[0]["reason"] == "stopped"
    finally:
        session.end("test")


def test_a_catastrophic_pattern_is_cut_off_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from ax_agent.delegation import extensions
    from ax_agent.delegation.extensions import PatternStalled, match_patterns

    subject = "a" * 64 + "b"
    began = time.monotonic()
    with pytest.raises(PatternStalled) as stalled:
        match_patterns(["fine", "(a+)+$", "later"], [subject], timeout_s=0.5)
    took = time.monotonic() - began
    assert stalled.value.pattern == "(a+)+$"
    assert took < 0.5 + 3.0, took
    assert extensions.WORKER_PATTERN_TIMEOUT_S == 2.0
    del monkeypatch


def test_only_a_ready_server_with_tools_is_whitelisted() -> None:
    from ax_agent.delegation.extensions import resolve
    from ax_agent.mcp_servers.client import ServerState
    from ax_agent.mcp_servers.config import ServerSpec, StdioEntry
    from ax_agent.mcp_servers.tools import McpTool

    def server(name: str, state: Any, *tools: str) -> ServerState:
        entry = StdioEntry(command=f"/opt/{name}-mcp")
        spec = ServerSpec(name, "user", "/s/config.json", entry, "0" * 64)
        listed = [McpTool(f"mcp__{name}__{t}", name, t, "", {"type": "object"}) for t in tools]
        return ServerState(spec, state, tools=listed)

    found = resolve(
        ["-mcp$", "nowhere"],
        [server("empty", "ready"), server("docs", "ready", "search"), server("slow", "starting")],
    )
    assert [(e.server, e.tools) for e in found.servers] == [("docs", ("mcp__docs__search",))]
    assert found.warnings == [
        "workerExtensions pattern 'nowhere' matches no MCP server this session runs",
        "workerExtensions pattern '-mcp$' matches the MCP server 'empty', which registers no "
        "tools: not whitelisted",
    ]


def test_patterns_match_unanchored_against_spec_command_and_tool_names() -> None:
    from ax_agent.delegation.extensions import match_patterns

    subjects = ["axmcp /usr/bin/ax-mcp -C /w", "/usr/bin/ax-mcp", "mcp__axmcp__check_detect"]
    assert match_patterns(["ax-mcp", "check_det", "^detect", "nothing"], subjects) == [
        {0, 1},
        {2},
        set(),
        set(),
    ]


def test_workspace_worker_extensions_are_ignored_with_a_warning(tmp_path: Path) -> None:
    from ax_policy import load_config
    from libcommon.paths import state_layout

    workspace = tmp_path / "ws"
    (workspace / ".ax").mkdir(parents=True)
    (workspace / ".ax" / "config.json").write_text(json.dumps({"workerExtensions": [".*"]}))
    config = load_config(state_layout(workspace, dict(os.environ)))
    assert config.worker_extensions is None
    assert "workerExtensions ignored: only the user's config" in config.warnings[0]


def test_a_user_pattern_that_is_no_regex_is_refused_naming_the_field(tmp_path: Path) -> None:
    from ax_policy import load_config
    from libcommon.errors import UsageError
    from libcommon.paths import state_layout

    state = Path(os.environ["AX_STATE_DIR"])
    (state / "config.json").write_text(json.dumps({"workerExtensions": ["(unclosed"]}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with pytest.raises(UsageError, match=r"workerExtensions.*not a regular expression"):
        load_config(state_layout(workspace, dict(os.environ)))


def test_the_orchestrator_command_switches_the_mode_and_lists_threads(tmp_path: Path) -> None:
    import io

    from agenttest import open_session, write_script

    from ax_agent.terminal import commands
    from ax_agent.terminal.screen import Screen

    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = open_session(workspace, write_script(tmp_path / "s.json", []))
    try:
        assert not session.orchestrating and "write_file" in session.tools
        assert not set(session.tools) & ORCHESTRATOR_ONLY

        def run(line: str) -> str:
            err = io.StringIO()
            screen = Screen(io.StringIO(), err, out_tty=False, err_tty=False, environ={})
            context = commands.Context(session, None, screen, None)  # type: ignore[arg-type]
            assert commands.run_line(context, line) is None
            return err.getvalue()

        assert "orchestrator mode is on; 0 thread(s)" in run("/orchestrator on")
        assert session.orchestrating and set(session.tools) >= ORCHESTRATOR_ONLY
        assert "write_file" not in session.tools
        assert "orchestrator mode is off" in run("/orchestrator off")
        assert "write_file" in session.tools
        assert "/orchestrator takes on, off or nothing" in run("/orchestrator maybe")
    finally:
        session.end("test")


def test_a_workspace_naming_worker_extensions_is_warned_about_on_stderr(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".ax").mkdir(parents=True)
    (workspace / ".ax" / "config.json").write_text(json.dumps({"workerExtensions": ["."]}))
    path = script(tmp_path / "s.json", [{"text": "hi"}], {})
    run = subprocess.run(
        [tool_path("agent"), "-C", str(workspace), "--provider", "script", "--script",
         str(path), "--trust-this-workspace", "-p", "hello"],
        capture_output=True, text=True, timeout=60, env=dict(os.environ), check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "warning: config" in run.stderr and "workerExtensions ignored" in run.stderr


def test_a_handoff_carries_an_orchestrated_sessions_threads_and_episodes(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    # The two halves of issue 26 together: real thread.* and episode.recorded events, as
    # the orchestrator writes them, are what the handoff's snapshot folds.
    from ax_agent.cli import main

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    turns = [
        {"tool_calls": [call("thread", label="reader", task="read a.txt")]},
        {"tool_calls": [call("episode", thread="s-0002", summary="a read", evidence=["a.txt"])]},
        {"text": "done"},
    ]
    tasks = {"reader": [{"tool_calls": [call("read_file", path="a.txt")]}, {"text": "alpha"}]}
    session = start(workspace, script(tmp_path / "p.json", turns, tasks), ["once"])
    try:
        assert run_turn(session, "read it").stop_reason == "end_turn"
    finally:
        session.end("test")
    takeover = script(tmp_path / "t.json", [{"text": "taking over"}], {})
    result = run_cli(
        main,
        ["handoff", "-C", str(workspace), "--provider", "script", "--script", str(takeover),
         "--trust-this-workspace", "--output-format", "json", "--session", session.id,
         "--track-boundary", "the reader's work"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    successor = str(json.loads(result.stdout)["session"])
    log = list(read_events(session.layout.session_log(successor), successor))
    (entry,) = of_type(log, "handoff.entry")
    (thread,) = entry["snapshot"]["threads"]
    assert (thread["threadId"], thread["label"], thread["task"]) == (
        "s-0002",
        "reader",
        "read a.txt",
    )
    assert thread["last"] == "thread.message" and thread["text"] == "alpha"
    assert entry["snapshot"]["episodes"] == [
        {"threadId": "s-0002", "summary": "a read", "evidence": ["a.txt"]}
    ]
    assert '"label":"reader"' in entry["kickoff"] and '"summary":"a read"' in entry["kickoff"]
