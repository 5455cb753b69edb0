"""The fake harness provider (mesh-fake), through ax-agent's real turn loop.

These tests give the loop a STUB mesh tool set, ``StubMesh`` below: a tiny in-memory
message router with the mesh's reply rule (a reply goes to the sender and keeps the
correlation id), so the script language is tested on its own. Everything else is real:
the loop, ax-policy's decisions, the event log, write_file and read_file. The real mesh
tools (ax_agent.mesh_tools) with the real runner and store are tests/mesh/test_chain.py.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agenttest import events_of, of_type, real_tools
from pydantic import ConfigDict, Field

from ax_agent.loop import run_turn
from ax_agent.providers import ProviderRequest, make_provider
from ax_agent.providers.mesh_fake import COMMANDS, SLEEP_MAX_S, mesh_tool, plan_turn
from ax_agent.session import Session, StartOptions, start_session
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_policy import ToolFacts
from libcommon import jsonio
from libcommon.contracts import Contract
from libcommon.errors import UsageError
from libcommon.turn_envelope import Envelope, QueuedMessage, parse_turn, render_turn


class SnakeInput(Contract):
    # The mesh tools' arguments are snake_case (the reference catalogue's names).
    model_config = ConfigDict(alias_generator=None, extra="allow")


class SendInput(SnakeInput):
    to: str
    body: str
    correlation_id: str | None = None


class ReplyInput(SnakeInput):
    message_id: str = Field(pattern=r"^M-[1-9][0-9]*$")
    body: str


@dataclass
class Sent:
    id: str
    sender: str
    to: str
    body: str
    correlation_id: str | None
    reply_to: str | None


@dataclass
class StubMesh:
    """A stand-in for the mesh's messages and one memory tool (see the module docstring)."""

    messages: list[Sent] = field(default_factory=list)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def post(
        self, sender: str, to: str, body: str, correlation: str | None, reply_to: str | None
    ) -> Sent:
        message = Sent(f"M-{len(self.messages) + 1}", sender, to, body, correlation, reply_to)
        self.messages.append(message)
        return message

    def tools(self, seat: str) -> list[ModelTool]:
        def send(value: SendInput, ctx: ToolContext) -> ToolResult:
            self.calls.append((seat, "messages.send", value.model_dump()))
            sent = self.post(seat, value.to, value.body, value.correlation_id, None)
            return ToolResult(jsonio.dumps({"message_id": sent.id}).decode(), summary="sent")

        def reply(value: ReplyInput, ctx: ToolContext) -> ToolResult:
            self.calls.append((seat, "messages.reply", value.model_dump()))
            original = next((m for m in self.messages if m.id == value.message_id), None)
            if original is None or original.to != seat:
                return ToolResult("not_found", is_error=True, summary="not found")
            sent = self.post(
                seat, original.sender, value.body, original.correlation_id, original.id
            )
            return ToolResult(jsonio.dumps({"message_id": sent.id}).decode(), summary="sent")

        def other(name: str) -> Any:
            def run(value: SnakeInput, ctx: ToolContext) -> ToolResult:
                self.calls.append((seat, name, value.model_dump()))
                return ToolResult(jsonio.dumps({"tool": name, "ok": True}).decode())

            return run

        table: list[tuple[str, type[Contract], Any]] = [
            ("messages.send", SendInput, send),
            ("messages.reply", ReplyInput, reply),
            ("memory.write", SnakeInput, other("memory.write")),
            ("connections.invoke", SnakeInput, other("connections.invoke")),
        ]
        return [
            ModelTool(
                mesh_tool(name),
                f"stub {name}",
                model,
                ToolFacts(name=mesh_tool(name), internal=True),
                run,
            )
            for name, model, run in table
        ]

    def envelope(self, message: Sent, queued: list[Sent] = ()) -> str:  # type: ignore[assignment]
        envelope = Envelope(
            kind="message",
            seat=message.to,
            current_time="2026-10-09T15:00+01:00",
            timezone="Europe/London",
            message_id=message.id,
            sender=message.sender,
            correlation_id=message.correlation_id,
            reply_to=message.reply_to,
            queued=[QueuedMessage(message_id=q.id, sender=q.sender, body=q.body) for q in queued],
        )
        return render_turn(envelope, message.body)


def seat_session(workspace: Path, mesh: StubMesh, seat: str) -> Session:
    workspace.mkdir(parents=True, exist_ok=True)
    options = StartOptions(
        workspace=Path(os.path.realpath(workspace)),
        environ=dict(os.environ),
        provider="mesh-fake",
        trust_once=True,
        tools=[*real_tools(), *mesh.tools(seat)],
    )
    return start_session(options)


def deliver(mesh: StubMesh, sessions: dict[str, Session], message: Sent) -> Any:
    return run_turn(sessions[message.to], mesh.envelope(message))


def test_the_provider_is_registered_by_name() -> None:
    provider = make_provider("mesh-fake", model=None, base_url=None, script=None, environ={})
    assert provider.name == "mesh-fake"
    with pytest.raises(UsageError, match="no base URL"):
        make_provider("mesh-fake", model=None, base_url="http://x", script=None, environ={})


def test_a_body_without_commands_is_acked(tmp_path: Path) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "lead", mesh, "lead")
    message = mesh.post("rep", "lead", "hello there", None, None)
    result = run_turn(session, mesh.envelope(message))
    assert result.stop_reason == "end_turn"
    assert mesh.messages[-1].to == "rep" and mesh.messages[-1].body == "ack: hello there"
    requested = of_type(events_of(session), "tool.requested")
    assert [e["tool"] for e in requested] == ["mesh_messages_reply"]


def test_file_commands_go_through_the_real_tools_and_policy(tmp_path: Path) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "eng", mesh, "eng")
    body = "/file write notes/a.txt first line\n/file read notes/a.txt\n/claim it is done\n/report"
    message = mesh.post("lead", "eng", body, None, None)
    result = run_turn(session, mesh.envelope(message))
    assert (tmp_path / "eng" / "notes" / "a.txt").read_text() == "first line"
    decisions = of_type(events_of(session), "policy.decision")
    assert [d["verdict"] for d in decisions] == ["allow", "allow", "allow"]
    assert decisions[0]["rule"] == "write-inside-workspace"
    report = mesh.messages[-1]
    assert report.to == "lead" and report.reply_to == message.id
    assert "created notes/a.txt" in report.body and "first line" in report.body
    assert report.body.endswith("claim: it is done")
    assert "claim: it is done" in result.text


def test_a_write_outside_the_workspace_is_denied_by_policy(tmp_path: Path) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "eng", mesh, "eng")
    message = mesh.post("lead", "eng", "/file write ../escape.txt x\n/report", None, None)
    run_turn(session, mesh.envelope(message))
    assert not (tmp_path / "escape.txt").exists()
    assert first_verdict(session) != "allow"
    assert "error from write_file" in mesh.messages[-1].body


def first_verdict(session: Session) -> str:
    verdict: str = of_type(events_of(session), "policy.decision")[0]["verdict"]
    return verdict


def test_tool_calls_a_mesh_tool_by_its_catalogue_name(tmp_path: Path) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "eng", mesh, "eng")
    body = '/tool memory.write {"store": "team", "path": "notes/x.md", "text": "hi"}\n/report'
    message = mesh.post("lead", "eng", body, None, None)
    run_turn(session, mesh.envelope(message))
    assert mesh.calls[0] == (
        "eng",
        "memory.write",
        {"store": "team", "path": "notes/x.md", "text": "hi"},
    )
    assert '"tool":"memory.write"' in mesh.messages[-1].body


def test_a_delegate_chain_of_four_seats_reports_the_end_result_back(tmp_path: Path) -> None:
    mesh = StubMesh()
    seats = ["rep", "lead", "engineer", "reviewer"]
    sessions = {seat: seat_session(tmp_path / seat, mesh, seat) for seat in seats}
    body = (
        "/delegate lead /task\n/delegate engineer /task\n/delegate reviewer /task\n"
        '/tool connections.invoke {"connection": "tracker", "operation": "task.read", '
        '"params": {"id": "T-1"}}'
    )
    human = mesh.post("human", "rep", body, None, None)
    pending = [human]
    while pending:
        message = pending.pop(0)
        if message.to == "human":
            continue
        before = len(mesh.messages)
        result = deliver(mesh, sessions, message)
        assert result.stop_reason == "end_turn", result
        pending += mesh.messages[before:]
    final = mesh.messages[-1]
    assert final.to == "human" and final.reply_to == human.id
    assert '"tool":"connections.invoke"' in final.body
    # The reviewer did the work; everyone above forwarded its result, nobody acked.
    assert [c[0] for c in mesh.calls if c[1] == "connections.invoke"] == ["reviewer"]
    route = [(m.sender, m.to) for m in mesh.messages]
    assert route == [
        ("human", "rep"),
        ("rep", "lead"),
        ("lead", "engineer"),
        ("engineer", "reviewer"),
        ("reviewer", "engineer"),
        ("engineer", "lead"),
        ("lead", "rep"),
        ("rep", "human"),
    ]


def test_queued_messages_ride_along_in_the_output(tmp_path: Path) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "eng", mesh, "eng")
    queued = mesh.post("lead", "eng", "fyi: build is green", None, None)
    message = mesh.post("lead", "eng", "/report", None, None)
    run_turn(session, mesh.envelope(message, [queued]))
    assert mesh.messages[-1].body == "queued message from lead: fyi: build is green"


def test_fail_fails_the_turn_technically(tmp_path: Path) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "eng", mesh, "eng")
    message = mesh.post("lead", "eng", "/claim half\n/fail disk on fire\n/reply never", None, None)
    result = run_turn(session, mesh.envelope(message))
    assert result.stop_reason == "error" and "/fail: disk on fire" in (result.detail or "")
    assert [m.body for m in mesh.messages] == [message.body]


def test_sleep_waits_and_an_abort_interrupts_it(tmp_path: Path) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "eng", mesh, "eng")
    message = mesh.post("lead", "eng", "/sleep 200ms\n/reply awake", None, None)
    started = time.monotonic()
    run_turn(session, mesh.envelope(message))
    assert time.monotonic() - started >= 0.2 and mesh.messages[-1].body == "awake"
    long = mesh.post("lead", "eng", "/sleep 9m\n/reply never", None, None)
    abort = threading.Event()
    threading.Timer(0.2, abort.set).start()
    result = run_turn(session, mesh.envelope(long), abort=abort)
    assert result.stop_reason == "aborted" and mesh.messages[-1].id == long.id


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("/bogus x", "unknown /bogus"),
        ("/tool memory.write [1]", "one JSON object"),
        ("/tool memory.write {nope", "/tool <name> [json]"),
        ("/reply hi\n/task", "/task belongs on the first line"),
        ("/sleep 11m", "at most 600s"),
        ("/sleep soon", "not a duration"),
        ("/file write", "name the file"),
        ("/delegate", "name the seat"),
    ],
)
def test_a_bad_script_line_fails_the_turn_naming_the_line(
    tmp_path: Path, body: str, problem: str
) -> None:
    mesh = StubMesh()
    session = seat_session(tmp_path / "eng", mesh, "eng")
    message = mesh.post("lead", "eng", body, None, None)
    result = run_turn(session, mesh.envelope(message))
    assert result.stop_reason == "error"
    assert problem in (result.detail or "") and "line " in (result.detail or "")
    assert not mesh.calls


def test_a_reply_is_data_not_a_script() -> None:
    envelope = Envelope(
        kind="message",
        seat="a",
        current_time="t",
        timezone="UTC",
        message_id="M-4",
        sender="b",
        reply_to="M-3",
    )
    steps, output = plan_turn(envelope, "/tool memory.write {}")
    assert steps == [] and output == ["reply from b: /tool memory.write {}"]


def test_without_an_envelope_the_body_still_runs() -> None:
    steps, output = plan_turn(None, "just words")
    assert steps == [] and output == ["ack: just words"]
    assert parse_turn("plain") == (None, "plain")


def test_the_command_table_covers_the_reference_language() -> None:
    assert set(COMMANDS) == {
        "/tool",
        "/reply",
        "/report",
        "/file write",
        "/file read",
        "/delegate",
        "/task",
        "/sleep",
        "/claim",
        "/fail",
    }
    assert SLEEP_MAX_S == 600.0


def test_a_provider_request_is_read_fresh_each_time() -> None:
    provider = make_provider("mesh-fake", model=None, base_url=None, script=None, environ={})
    from ax_agent.providers import Message, TextBlock

    request = ProviderRequest("", [Message("user", [TextBlock("no commands")])], [], "")
    assert provider.complete(request).text == "ack: no commands"
    assert provider.complete(request).text == "ack: no commands"
