"""MCP servers as tool sources (issue 23), end to end through ax-agent's loop.

Real servers, real processes: a small server written with the official SDK
(tests/agent/mcp_fixtures/sdk_server.py) over stdio and over streamable HTTP on
loopback, the installed ``ax-mcp`` over stdio, and a hand-written one for what
an SDK server will not do on purpose (flood, a bad schema, a slow start). The
model is the script provider; approvals come from a scripted approver.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agenttest import (
    RecordingProvider,
    ScriptedApprover,
    call,
    events_of,
    of_type,
    write_script,
)
from axtest import tool_path

from ax_agent.loop import run_turn
from ax_agent.mcp_servers import client as mcp_client
from ax_agent.session import Session, StartOptions, start_session
from ax_policy import add_durable_grant, list_durable_grants
from libcommon.errors import UsageError
from libcommon.procfs import read_proc

FIXTURES = Path(__file__).parent / "mcp_fixtures"
SDK_SERVER = str(FIXTURES / "sdk_server.py")
RAW_SERVER = str(FIXTURES / "raw_server.py")


@pytest.fixture(autouse=True)
def patient_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine is shared: let a server take its time to start, as a person would."""
    monkeypatch.setattr(mcp_client, "MCP_STARTUP_BUDGET_S", 30.0)


def stdio(path: str, *args: str, env: Any = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": sys.executable, "args": [path, *args]}
    if env is not None:
        entry["env"] = env
    return entry


def configure(state_dir: Path, servers: dict[str, Any]) -> None:
    (state_dir / "config.json").write_text(json.dumps({"mcpServers": servers}))


def start(
    workspace: Path,
    tmp_path: Path,
    turns: list[dict[str, Any]],
    answers: list[Any] | None = None,
    ask: Any = None,
    environ: dict[str, str] | None = None,
) -> tuple[Session, ScriptedApprover]:
    approver = ScriptedApprover(list(answers or []))
    options = StartOptions(
        workspace=workspace,
        environ=environ if environ is not None else dict(os.environ),
        provider="script",
        script=write_script(tmp_path / f"script-{time.monotonic_ns()}.json", turns),
        trust_once=True,
        approver=approver,
        mcp_ask=ask,
    )
    return start_session(options), approver


def completed(session: Session) -> list[dict[str, Any]]:
    return of_type(events_of(session), "tool.completed")


def server_events(session: Session, name: str) -> list[dict[str, Any]]:
    return [e for e in of_type(events_of(session), "mcp.server") if e["server"] == name]


def alive(pid: int) -> bool:
    info = read_proc(pid)
    return info is not None and info.alive


def test_sdk_server_tools_reach_the_model_and_a_granted_call_runs_unasked(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(state_dir, {"fx": stdio(SDK_SERVER)})
    add_durable_grant(state_dir, workspace, tool="mcp__fx__add")
    session, approver = start(
        workspace, tmp_path, [{"toolCalls": [call("mcp__fx__add", a=2, b=3)]}, {"text": "5"}]
    )
    recorder = RecordingProvider(session.provider)
    session.provider = recorder
    try:
        result = run_turn(session, "add")
    finally:
        session.end("done")
    assert result.stop_reason == "end_turn"
    assert approver.asked == []
    schema = next(t for t in recorder.requests[0].tools if t.name == "mcp__fx__add")
    assert set(schema.input_schema["properties"]) == {"a", "b"}
    assert schema.description.startswith("[MCP server fx] Add two integers.")
    done = completed(session)[0]
    assert done["ok"] and "\n5\n" in done["content"]
    assert done["content"].startswith("<<<mcp-result from MCP server fx, tool add: untrusted")
    decision = of_type(events_of(session), "policy.decision")[0]
    assert (decision["verdict"], decision["rule"]) == ("allow", "mcp-durable-grant")
    (made,) = of_type(events_of(session), "mcp.call")
    assert (made["server"], made["tool"], made["outcome"]) == ("fx", "add", "ok")
    assert "arguments" not in made and "input" not in made
    ready = server_events(session, "fx")[0]
    assert ready["state"] == "ready" and "mcp__fx__leak" in ready["tools"]
    stopped = server_events(session, "fx")[-1]
    assert stopped["state"] == "stopped"
    assert not alive(ready["pid"])
    # stderr went to the capped log in the session's folder, not to ours.
    log = session.layout.session_dir(session.id) / "mcp" / "fx.stderr.log"
    assert "fixture server starting" in log.read_text()


def test_a_call_is_asked_and_a_declined_call_never_reaches_the_server(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(state_dir, {"fx": stdio(SDK_SERVER)})
    session, approver = start(
        workspace,
        tmp_path,
        [{"toolCalls": [call("mcp__fx__shout", text="hi")]}, {"text": "no"}],
        answers=["no"],
    )
    try:
        run_turn(session, "shout")
    finally:
        session.end("done")
    (asked,) = approver.asked
    assert asked.tool == "mcp__fx__shout"
    assert asked.decision.rule == "mcp-call"
    assert asked.offers == ("no", "once", "session", "always")
    assert completed(session)[0]["outcome"] == "declined"
    assert of_type(events_of(session), "mcp.call") == []


def test_always_records_a_durable_grant_of_exactly_that_tool(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(state_dir, {"fx": stdio(SDK_SERVER)})
    turns = [
        {"toolCalls": [call("mcp__fx__shout", text="a")]},
        {"toolCalls": [call("mcp__fx__shout", text="b")]},
        {"toolCalls": [call("mcp__fx__add", a=1, b=1)]},
        {"text": "done"},
    ]
    session, approver = start(workspace, tmp_path, turns, answers=["always", "no"])
    try:
        run_turn(session, "go")
    finally:
        session.end("done")
    assert [request.tool for request in approver.asked] == ["mcp__fx__shout", "mcp__fx__add"]
    grants = list_durable_grants(state_dir, workspace)
    assert [(g.kind, g.tool) for g in grants] == [("external-tool", "mcp__fx__shout")]


def test_ax_mcp_itself_over_stdio(workspace: Path, tmp_path: Path, state_dir: Path) -> None:
    ax = {"command": tool_path("mcp"), "args": ["-C", str(workspace)], "env": ["AX_STATE_DIR"]}
    configure(state_dir, {"ax": ax})
    turns = [
        {"toolCalls": [call("mcp__ax__policy_review_command", command="ls")]},
        {"toolCalls": [call("mcp__ax__policy_review_command", command="rm -rf /")]},
        {"text": "done"},
    ]
    session, approver = start(workspace, tmp_path, turns, answers=["session"])
    try:
        run_turn(session, "review")
    finally:
        session.end("done")
    assert len(approver.asked) == 1  # the session grant answered the second call
    first, second = completed(session)
    assert '"verdict":"read-only"' in first["content"]
    assert '"verdict":"deny"' in second["content"]
    assert "mcp__ax__workspace_map" in server_events(session, "ax")[0]["tools"]


def test_results_are_redacted_and_cannot_close_their_fence(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(state_dir, {"fx": stdio(SDK_SERVER)})
    session, _ = start(
        workspace, tmp_path, [{"toolCalls": [call("mcp__fx__leak")]}, {"text": "x"}], ["once"]
    )
    try:
        run_turn(session, "leak")
    finally:
        session.end("done")
    content = completed(session)[0]["content"]
    assert "sk-ant-api03-AAAA" not in content
    assert "[REDACTED" in content
    assert content.count(">>>") == 1 and content.endswith(">>>end mcp-result")


def test_only_the_listed_variables_reach_a_stdio_server(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(
        state_dir,
        {
            "plain": stdio(SDK_SERVER),
            "given": stdio(SDK_SERVER, env={"RENAMED": "${AX_TEST_SECRET_TOKEN}"}),
        },
    )
    environ = {**os.environ, "AX_TEST_SECRET_TOKEN": "value", "AX_TEST_OTHER": "x"}
    turns = [
        {"toolCalls": [call("mcp__plain__env", variable="AX_TEST_SECRET_TOKEN")]},
        {"toolCalls": [call("mcp__plain__env", variable="AX_TEST_OTHER")]},
        {"toolCalls": [call("mcp__given__env", variable="RENAMED")]},
        {"toolCalls": [call("mcp__given__env", variable="AX_TEST_OTHER")]},
        {"text": "done"},
    ]
    session, _ = start(workspace, tmp_path, turns, ["session", "session"], environ=environ)
    try:
        run_turn(session, "env")
    finally:
        session.end("done")
    answers = [event["content"].split("\n")[1] for event in completed(session)]
    assert answers == ["unset", "unset", "set", "unset"]


def test_a_server_that_dies_mid_session_is_reported_and_its_tools_leave(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(state_dir, {"fx": stdio(SDK_SERVER)})
    turns = [
        {"toolCalls": [call("mcp__fx__die")]},
        {"text": "it died"},
        {"toolCalls": [call("read_file", path="missing.txt")]},
        {"text": "still here"},
    ]
    session, _ = start(workspace, tmp_path, turns, ["once"])
    recorder = RecordingProvider(session.provider)
    session.provider = recorder
    try:
        started = time.monotonic()
        first = run_turn(session, "die")
        assert time.monotonic() - started < 10
        second = run_turn(session, "again")
    finally:
        session.end("done")
    assert (first.stop_reason, second.text) == ("end_turn", "still here")
    died = completed(session)[0]
    assert not died["ok"]
    failed = [e for e in server_events(session, "fx") if e["state"] == "failed"]
    assert failed and "exited" in failed[0]["reason"]
    assert of_type(events_of(session), "mcp.call")[0]["outcome"] == "failed"
    later = [tool.name for tool in recorder.requests[-1].tools]
    assert not any(name.startswith("mcp__fx__") for name in later)


def test_a_server_that_hangs_is_disabled_and_its_tree_killed(
    workspace: Path, tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_client, "MCP_CALL_TIMEOUT_S", 1.0)
    configure(state_dir, {"fx": stdio(SDK_SERVER)})
    turns = [{"toolCalls": [call("mcp__fx__hang")]}, {"text": "hung"}]
    session, _ = start(workspace, tmp_path, turns, ["once"])
    try:
        started = time.monotonic()
        run_turn(session, "hang")
        took = time.monotonic() - started
        pid = server_events(session, "fx")[0]["pid"]
    finally:
        session.end("done")
    assert took < 8
    result = completed(session)[0]
    assert not result["ok"] and "hung" in result["content"]
    disabled = [e for e in server_events(session, "fx") if e["state"] == "disabled"]
    assert disabled and "no answer to a call of hang in 1 s" in disabled[0]["reason"]
    assert of_type(events_of(session), "mcp.call")[0]["outcome"] == "disabled"
    assert not alive(pid)


def test_a_server_that_floods_is_disabled(workspace: Path, tmp_path: Path, state_dir: Path) -> None:
    configure(state_dir, {"raw": stdio(RAW_SERVER, "flood")})
    turns = [{"toolCalls": [call("mcp__raw__ping")]}, {"text": "flooded"}]
    session, _ = start(workspace, tmp_path, turns, ["once"])
    try:
        run_turn(session, "ping")
        pid = server_events(session, "raw")[0]["pid"]
    finally:
        session.end("done")
    assert not completed(session)[0]["ok"]
    disabled = [e for e in server_events(session, "raw") if e["state"] == "disabled"]
    assert disabled and "flooding" in disabled[0]["reason"]
    assert not alive(pid)


def test_a_bad_schema_drops_that_tool_with_a_note(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(state_dir, {"raw": stdio(RAW_SERVER, "bad-schema")})
    session, _ = start(workspace, tmp_path, [{"text": "ok"}])
    try:
        run_turn(session, "list")
    finally:
        session.end("done")
    ready = server_events(session, "raw")[0]
    assert ready["tools"] == ["mcp__raw__ping", "mcp__raw__weird_name_"], json.dumps(ready)
    assert any("'broken' dropped" in note and "object" in note for note in ready["notes"])


def test_a_slow_server_does_not_hold_the_first_prompt_past_the_budget(
    workspace: Path, tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_client, "MCP_STARTUP_BUDGET_S", 0.5)
    configure(state_dir, {"slow": stdio(RAW_SERVER, "slow-start")})
    session, _ = start(workspace, tmp_path, [{"text": "answered"}])
    try:
        started = time.monotonic()
        result = run_turn(session, "hello")
        took = time.monotonic() - started
    finally:
        session.end("done")
    assert result.text == "answered"
    assert took < 3
    assert not any(name.startswith("mcp__slow__") for name in session.tools)


def workspace_entry(workspace: Path, entry: dict[str, Any], name: str = ".mcp.json") -> None:
    path = workspace / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {"repo": entry}}))


def test_a_workspace_server_starts_only_once_its_exact_entry_is_approved(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    workspace_entry(workspace, stdio(SDK_SERVER))
    turns = [{"text": "ok"}]

    # Off a terminal: not started, said once, nothing recorded.
    session, _ = start(workspace, tmp_path, turns)
    run_turn(session, "hi")
    session.end("done")
    (waiting,) = server_events(session, "repo")
    assert (waiting["state"], waiting["source"]) == ("awaiting-approval", "workspace")
    assert list_durable_grants(state_dir, workspace) == []

    # Asked and declined: still not started.
    questions: list[str] = []
    session, _ = start(workspace, tmp_path, turns, ask=lambda q: questions.append(q) or False)
    run_turn(session, "hi")
    session.end("done")
    assert server_events(session, "repo")[0]["state"] == "awaiting-approval"
    assert "repo" in questions[0] and "sdk_server.py" in questions[0]

    # Approved: started, and the exact entry is a durable grant.
    session, _ = start(workspace, tmp_path, turns, ask=lambda q: True)
    run_turn(session, "hi")
    session.end("done")
    assert server_events(session, "repo")[0]["state"] == "ready"
    (grant,) = list_durable_grants(state_dir, workspace)
    assert (grant.kind, grant.server) == ("mcp-server", "repo")

    # Later sessions start it unasked, even off a terminal.
    session, _ = start(workspace, tmp_path, turns)
    run_turn(session, "hi")
    session.end("done")
    assert server_events(session, "repo")[0]["state"] == "ready"

    # A changed entry is another identity: asked again.
    workspace_entry(workspace, stdio(SDK_SERVER, "--changed"))
    questions.clear()
    session, _ = start(workspace, tmp_path, turns, ask=lambda q: questions.append(q) or False)
    run_turn(session, "hi")
    session.end("done")
    assert server_events(session, "repo")[0]["state"] == "awaiting-approval"
    assert len(questions) == 1


def test_a_workspace_cannot_take_a_user_server_name_and_a_bad_file_is_only_noted(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    configure(state_dir, {"repo": stdio(SDK_SERVER)})
    workspace_entry(workspace, {"command": "/bin/false"})
    (workspace / ".ax").mkdir()
    (workspace / ".ax" / "mcp.json").write_text("{not json")
    session, _ = start(workspace, tmp_path, [{"text": "ok"}], ask=lambda q: True)
    run_turn(session, "hi")
    session.end("done")
    (ready, _stopped) = server_events(session, "repo")
    assert ready["source"] == "user"
    notes = [e["reason"] for e in server_events(session, None)]  # type: ignore[arg-type]
    assert any("mcp.json ignored: not valid JSON" in note for note in notes)
    assert any("'repo' ignored: the name is already declared" in note for note in notes)


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        (
            {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer abc"}},
            "headers.Authorization",
            "literal value",
        ),
        ({"command": "x", "env": {"TOKEN": "literal"}}, "env.TOKEN", "literal value"),
        ({"command": "x", "env": ["BAD-NAME"]}, "env", ""),
        ({"command": ""}, "command", "at least 1"),
        ({"url": "ftp://x.example"}, "url", "http"),
        ({"url": "https://user:pw@x.example"}, "url", "credentials"),
        ({"type": "sse", "url": "https://x.example"}, "type", "not supported"),
        ({"command": "x", "extra": 1}, "extra", "unknown field"),
    ],
)
def test_a_bad_user_entry_is_refused_naming_its_field(
    workspace: Path,
    tmp_path: Path,
    state_dir: Path,
    entry: dict[str, Any],
    field: str,
    words: str,
) -> None:
    configure(state_dir, {"bad": entry})
    with pytest.raises(UsageError) as refused:
        start(workspace, tmp_path, [{"text": "x"}])
    message = refused.value.message
    assert f"mcpServers.bad field '{field}" in message and words in message, message
    assert not list(state_dir.glob("projects/*/sessions/*.jsonl"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "http.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, SDK_SERVER, "http", str(port)], stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail("the HTTP fixture server did not listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def test_a_streamable_http_server_on_loopback(
    workspace: Path, tmp_path: Path, state_dir: Path, http_server: str
) -> None:
    configure(
        state_dir,
        {"web": {"url": http_server, "headers": {"Authorization": "Bearer ${AX_TEST_MCP_TOKEN}"}}},
    )
    environ = {**os.environ, "AX_TEST_MCP_TOKEN": "t0ken"}
    turns = [{"toolCalls": [call("mcp__web__add", a=20, b=22)]}, {"text": "42"}]
    session, approver = start(workspace, tmp_path, turns, ["once"], environ=environ)
    try:
        run_turn(session, "add")
    finally:
        session.end("done")
    assert "127.0.0.1" in approver.asked[0].decision.reason
    assert "\n42\n" in completed(session)[0]["content"]
    assert server_events(session, "web")[0]["state"] == "ready"


_PROXY_VARS = (
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "AX_PROXY",
)


def test_mcp_over_http_goes_through_the_proxy_the_providers_resolve(
    workspace: Path, tmp_path: Path, state_dir: Path, http_server: str
) -> None:
    """One precedence for every network path: the MCP client's proxy is
    libcommon.proxy.resolve_proxy's, not the environment as httpx would read it."""
    from agent.providers.proxyserver import RecordingProxy

    configure(state_dir, {"web": {"url": http_server}})
    proxy = RecordingProxy()
    environ = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS}
    # ax's override wins over NO_PROXY, and over the protocol's variable (a dead port).
    environ |= {
        "AX_PROXY": proxy.url(),
        "NO_PROXY": "127.0.0.1",
        "HTTP_PROXY": f"http://127.0.0.1:{free_port()}",
    }
    turns = [{"toolCalls": [call("mcp__web__add", a=1, b=2)]}, {"text": "3"}]
    try:
        session, _ = start(workspace, tmp_path, turns, ["once"], environ=environ)
        try:
            run_turn(session, "add")
        finally:
            session.end("done")
    finally:
        proxy.close()
    assert server_events(session, "web")[0]["state"] == "ready"
    assert "\n3\n" in completed(session)[0]["content"]
    assert proxy.seen and all(seen.target.startswith(http_server) for seen in proxy.seen)


def test_a_proxy_variable_that_holds_no_proxy_fails_that_server_only(
    workspace: Path, tmp_path: Path, state_dir: Path, http_server: str
) -> None:
    configure(state_dir, {"web": {"url": http_server}})
    environ = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS}
    environ["HTTP_PROXY"] = "socks5://user:s3cret@127.0.0.1:1080"
    session, _ = start(workspace, tmp_path, [{"text": "fine"}], environ=environ)
    try:
        result = run_turn(session, "hi")
    finally:
        session.end("done")
    assert result.text == "fine"
    failed = server_events(session, "web")[0]
    assert failed["state"] == "failed", failed
    assert "HTTP_PROXY" in failed["reason"] and "s3cret" not in failed["reason"]


def test_a_missing_header_variable_fails_that_server_only(
    workspace: Path, tmp_path: Path, state_dir: Path, http_server: str
) -> None:
    configure(
        state_dir,
        {"web": {"url": http_server, "headers": {"Authorization": "Bearer ${AX_TEST_UNSET_VAR}"}}},
    )
    environ = {k: v for k, v in os.environ.items() if k != "AX_TEST_UNSET_VAR"}
    session, _ = start(workspace, tmp_path, [{"text": "fine"}], environ=environ)
    try:
        result = run_turn(session, "hi")
    finally:
        session.end("done")
    assert result.text == "fine"
    failed = server_events(session, "web")[0]
    assert failed["state"] == "failed", failed
    assert "AX_TEST_UNSET_VAR is not set" in failed["reason"]


def test_without_the_sdk_a_declared_server_fails_with_the_cure(
    workspace: Path, tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    configure(state_dir, {"fx": stdio(SDK_SERVER)})
    session, _ = start(workspace, tmp_path, [{"text": "fine"}])
    try:
        assert run_turn(session, "hi").text == "fine"
    finally:
        session.end("done")
    failed = server_events(session, "fx")[0]
    assert failed["state"] == "failed" and "ax-tools[mcp]" in failed["reason"]


def test_slash_mcp_lists_servers_states_and_tools(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    import io

    from ax_agent.terminal import commands
    from ax_agent.terminal.screen import Screen

    configure(state_dir, {"fx": stdio(SDK_SERVER), "gone": {"command": "/nonexistent/ax-x"}})
    workspace_entry(workspace, stdio(SDK_SERVER))
    session, _ = start(workspace, tmp_path, [{"text": "ok"}])
    err = io.StringIO()
    screen = Screen(io.StringIO(), err, out_tty=False, err_tty=False, environ={})
    context = commands.Context(session, None, screen, None)  # type: ignore[arg-type]
    try:
        run_turn(session, "hi")
        commands.run_line(context, "/mcp")
    finally:
        session.end("done")
    shown = err.getvalue()
    assert "fx: ready (user config)" in shown
    assert "tools: mcp__fx__add, mcp__fx__shout" in shown
    assert "gone: failed (user config): OperationFailed: cannot start" in shown
    assert "repo: awaiting-approval (workspace" in shown
    assert "stderr log: " in shown


def test_headless_says_a_refused_workspace_server_once(
    workspace: Path, tmp_path: Path, run_cli: Any
) -> None:
    from ax_agent.cli import main

    workspace_entry(workspace, stdio(SDK_SERVER))
    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    result = run_cli(
        main,
        [
            "-C",
            str(workspace),
            "--provider",
            "script",
            "--script",
            str(script),
            "--trust-this-workspace",
            "-p",
            "hi",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("MCP server repo awaiting-approval") == 1
