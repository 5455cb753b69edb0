"""Helpers for ax-agent's loop tests: scripts, sessions, approvers and small tools."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ax_agent.approvals import ApprovalAnswer, ApprovalRequest, Choice
from ax_agent.providers import Message, ProviderRequest, ProviderResponse
from ax_agent.session import Session, StartOptions, start_session
from ax_agent.tools.base import ModelTool, ToolContext, ToolResult
from ax_log import read_events
from ax_policy import ToolFacts
from libcommon import jsonio
from libcommon.contracts import Contract


def write_script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(jsonio.dumps({"model": "scripted", "turns": turns}).decode())
    return path


def call(name: str, id: str | None = None, **arguments: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "input": arguments}
    if id is not None:
        found["id"] = id
    return found


@dataclass
class ScriptedApprover:
    """Answers questions from a list, and remembers what it was asked."""

    answers: list[Choice]
    name: str = "test"
    asked: list[ApprovalRequest] = field(default_factory=list)

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        return ApprovalAnswer(self.answers.pop(0), self.name)


@dataclass
class YesApprover:
    """Answers every question "once", and remembers what it was asked."""

    name: str = "yes"
    asked: list[ApprovalRequest] = field(default_factory=list)

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        return ApprovalAnswer("once", self.name)


def open_session(
    workspace: Path,
    script: Path,
    *,
    tools: list[ModelTool] | None = None,
    approver: Any = None,
    max_steps: int | None = None,
    resume: str | None = None,
    environ: dict[str, str] | None = None,
) -> Session:
    options = StartOptions(
        workspace=workspace,
        environ=environ if environ is not None else dict(os.environ),
        provider="script",
        script=script,
        max_steps=max_steps,
        trust_once=True,
        tools=tools,
        resume=resume,
    )
    if approver is not None:
        options.approver = approver
    return start_session(options)


def events_of(session: Session) -> list[dict[str, Any]]:
    return list(read_events(session.layout.session_log(session.id), session.id))


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def first(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = of_type(events, kind)
    assert found, f"no {kind} event"
    return found[0]


# --- small tools for branches the real ones do not reach ------------------------------------


class TextInput(Contract):
    text: str = ""


class NestedInput(Contract):
    options: dict[str, int]


def _echo(value: Any, ctx: ToolContext) -> ToolResult:
    return ToolResult(content=f"echo: {value.model_dump()}", summary="echoed")


def _explode(value: Any, ctx: ToolContext) -> ToolResult:
    raise RuntimeError("the tool broke")


def _bad_fact(value: Any) -> Any:
    raise ValueError("cannot say")


ECHO = ModelTool("echo", "Echo the input.", TextInput, ToolFacts(name="echo", internal=True), _echo)
NESTED = ModelTool(
    "nested", "Take nested options.", NestedInput, ToolFacts(name="nested", internal=True), _echo
)
EXPLODE = ModelTool(
    "explode", "Always fails.", TextInput, ToolFacts(name="explode", internal=True), _explode
)
BAD_FACT = ModelTool(
    "bad_fact", "Its fact throws.", TextInput, ToolFacts(name="bad_fact", reads=_bad_fact), _echo
)


class RecordingProvider:
    """A provider that keeps a copy of every request it is sent, as it was when sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.requests: list[ProviderRequest] = []

    def complete(self, request: ProviderRequest, **kwargs: Any) -> ProviderResponse:
        self.requests.append(
            ProviderRequest(
                request.system,
                [Message(m.role, list(m.content)) for m in request.messages],
                list(request.tools),
                request.model,
                request.max_tokens,
            )
        )
        response: ProviderResponse = self.inner.complete(request, **kwargs)
        return response


def real_tools() -> list[ModelTool]:
    from ax_agent.tools.registry import all_tools

    return all_tools()


def with_tools(*extra: ModelTool) -> list[ModelTool]:
    return [*real_tools(), *extra]


def sandbox_enforced() -> bool:
    from ax_agent.context import probe_sandbox

    return probe_sandbox().policy.enforced


def iter_lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        if line.strip():
            yield jsonio.loads(line)
