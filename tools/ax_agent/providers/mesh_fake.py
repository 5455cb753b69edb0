"""The fake harness: a provider that reads each mesh message body as a script.

It never calls a model. Each command becomes the tool call a real model would make, one
per response, so every effect goes through ax-agent's real tools, ax-policy and the
mesh's own authority (docs/ax-mesh.md, "The fake harness"). The provider keeps no state
between requests: it re-reads the turn from the request (the envelope, then the tool
results so far), so a resumed session carries on where it stopped.

``COMMANDS`` is the one table from script commands to tool calls.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from libcommon import clock, jsonio
from libcommon.turn_envelope import Envelope, EnvelopeError, parse_turn

from .base import (
    Message,
    ProviderAborted,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

PROVIDER_NAME = "mesh-fake"
DEFAULT_MODEL = "mesh-fake"
# A mesh tool's name in ax-agent: memory.write -> mesh_memory_write.
MESH_TOOL_PREFIX = "mesh_"
# /sleep waits at most this long (the reference's 10 minutes).
SLEEP_MAX_S = 600.0
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)$")
_MESSAGE_ID = re.compile(r"^M-[1-9][0-9]*$")


def mesh_tool(name: str) -> str:
    """The ax-agent tool that serves the mesh tool ``name`` (dots become underscores)."""
    return MESH_TOOL_PREFIX + name.replace(".", "_")


@dataclass(frozen=True)
class Command:
    """One script command: the tool it calls (None: the harness acts itself) and how."""

    tool: str | None
    usage: str
    output: bool  # whether the call's result joins the turn's output


COMMANDS: dict[str, Command] = {
    "/tool": Command(None, "/tool <name> [json]", True),  # the tool the line names
    "/reply": Command(mesh_tool("messages.reply"), "/reply <text>", False),
    "/report": Command(mesh_tool("messages.reply"), "/report", False),
    "/file write": Command("write_file", "/file write <path> <text>", True),
    "/file read": Command("read_file", "/file read <path>", True),
    "/delegate": Command(mesh_tool("messages.send"), "/delegate <seat> <text…>", False),
    "/task": Command(None, "/task (first line of a message from a seat)", False),
    "/sleep": Command(None, f"/sleep <duration> (at most {SLEEP_MAX_S:g}s)", False),
    "/claim": Command(None, "/claim <text>", False),
    "/fail": Command(None, "/fail <text>", False),
}


class ScriptLineError(ValueError):
    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")


@dataclass
class Step:
    """One action of the turn: a tool call, or something the harness does itself."""

    line: int
    tool: str | None = None
    arguments: dict[str, Any] | Callable[[list[str]], dict[str, Any]] = field(default_factory=dict)
    output: bool = False
    sleep_s: float = 0.0
    note: str | None = None  # a line the harness adds to the output itself
    fail: str | None = None


def parse_sleep(text: str) -> float:
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a duration: use e.g. 500ms, 2s or 1m")
    number, unit = float(match.group(1)), match.group(2)
    seconds = number / 1000 if unit == "ms" else number * 60 if unit == "m" else number
    if seconds > SLEEP_MAX_S:
        raise ValueError(f"/sleep waits at most {SLEEP_MAX_S:g}s")
    return seconds


def plan_turn(envelope: Envelope | None, body: str) -> tuple[list[Step], list[str]]:
    """The turn's steps, and the output lines it starts with (queued messages).

    A reply to a message this seat sent is data, never a script: it is forwarded to the
    message its correlation id names (what /delegate arranged) or recorded, so replies
    cannot bounce between two fake harnesses and a body cannot smuggle commands back.
    """
    output = [
        f"queued message from {q.sender}: {q.body}" for q in (envelope.queued if envelope else [])
    ]
    output += [
        f"unsettled operation {op.id} ({op.connection} {op.operation}): {op.status}"
        for op in (envelope.operations if envelope else [])
    ]
    if envelope is not None and envelope.kind == "automation" and envelope.missed:
        output.append(f"catch-up run: {envelope.missed} missed")
    trigger = envelope.message_id if envelope is not None else None
    if envelope is not None and envelope.reply_to is not None:
        origin = envelope.correlation_id
        if origin is not None and _MESSAGE_ID.match(origin):
            step = Step(0, COMMANDS["/reply"].tool, {"message_id": origin, "body": body})
            return [step], output
        output.append(f"reply from {envelope.sender}: {body}")
        return [], output
    lines = body.split("\n")
    if not any(line.startswith("/") for line in lines):
        text = body.strip()
        if trigger is None:
            return [], [*output, f"ack: {text}"]
        reply = Step(0, COMMANDS["/reply"].tool, {"message_id": trigger, "body": f"ack: {text}"})
        return [reply], output
    task = lines[0].strip() == "/task"
    if task and (envelope is None or envelope.sender is None or trigger is None):
        raise ScriptLineError(1, "/task runs only as the first line of a message from a seat")
    steps: list[Step] = []
    delegated = False
    start = 1 if task else 0
    for index in range(start, len(lines)):
        number, line = index + 1, lines[index]
        if not line.startswith("/"):
            continue
        if line.split(" ", 1)[0] == "/delegate":
            steps.append(_delegate(number, line, lines[index + 1 :], trigger))
            delegated = True
            break
        steps.append(_step(number, line, trigger))
    if task and not delegated:
        steps.append(Step(len(lines), COMMANDS["/report"].tool, _report(trigger)))
    return steps, output


def _report(trigger: str | None) -> Callable[[list[str]], dict[str, Any]]:
    def build(output: list[str]) -> dict[str, Any]:
        return {"message_id": trigger, "body": "\n".join(output) or "(no output)"}

    return build


def _needs_trigger(number: int, command: str, trigger: str | None) -> str:
    if trigger is None:
        raise ScriptLineError(number, f"{command} answers a message, and this turn has none")
    return trigger


def _step(number: int, line: str, trigger: str | None) -> Step:
    head, _, rest = line.partition(" ")
    if head == "/file":
        verb, _, rest = rest.partition(" ")
        head = f"/file {verb}"
    command = COMMANDS.get(head)
    if command is None or head in ("/task", "/delegate"):
        problem = "/task belongs on the first line" if head == "/task" else f"unknown {head}"
        known = ", ".join(COMMANDS)
        raise ScriptLineError(number, f"{problem} (the fake harness knows {known})")
    try:
        return _build(number, head, rest, command, trigger)
    except ValueError as exc:
        if isinstance(exc, ScriptLineError):
            raise
        raise ScriptLineError(number, f"{exc} (usage: {command.usage})") from None


def _build(number: int, head: str, rest: str, command: Command, trigger: str | None) -> Step:
    if head == "/tool":
        name, _, raw = rest.strip().partition(" ")
        if not name:
            raise ValueError("name the tool")
        arguments = jsonio.loads(raw) if raw.strip() else {}
        if not isinstance(arguments, dict):
            raise ValueError("the arguments are one JSON object")
        return Step(number, mesh_tool(name), arguments, output=True)
    if head == "/reply":
        body = {"message_id": _needs_trigger(number, head, trigger), "body": rest}
        return Step(number, command.tool, body)
    if head == "/report":
        return Step(number, command.tool, _report(_needs_trigger(number, head, trigger)))
    if head == "/file write":
        path, _, text = rest.partition(" ")
        if not path:
            raise ValueError("name the file")
        return Step(number, command.tool, {"path": path, "content": text}, output=True)
    if head == "/file read":
        if not rest.strip():
            raise ValueError("name the file")
        return Step(number, command.tool, {"path": rest.strip()}, output=True)
    if head == "/sleep":
        return Step(number, sleep_s=parse_sleep(rest))
    if head == "/claim":
        return Step(number, note=f"claim: {rest}")
    return Step(number, fail=rest or "the script failed the turn")


def _delegate(number: int, line: str, after: list[str], trigger: str | None) -> Step:
    parts = line.split(" ", 2)
    if len(parts) < 2 or not parts[1]:
        raise ScriptLineError(number, f"name the seat (usage: {COMMANDS['/delegate'].usage})")
    body = "\n".join([parts[2] if len(parts) > 2 else "", *after]).strip("\n")
    arguments: dict[str, Any] = {"to": parts[1], "body": body}
    if trigger is not None:
        # The reply comes back carrying this id, which says whom to forward it to.
        arguments["correlation_id"] = trigger
    return Step(number, COMMANDS["/delegate"].tool, arguments)


def _turn_start(messages: list[Message]) -> int:
    """The index of the message that started this turn: the last user message that opens
    with text (tool results open with a result block)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and message.content and isinstance(message.content[0], TextBlock):
            return index
    raise ProviderError("the request holds no user message for the fake harness to read")


def _results(messages: list[Message]) -> list[ToolResultBlock]:
    """The results of the calls made so far this turn, in call order."""
    by_id: dict[str, ToolResultBlock] = {}
    order: list[str] = []
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                order.append(block.id)
            elif isinstance(block, ToolResultBlock):
                by_id[block.tool_use_id] = block
    return [by_id[call_id] for call_id in order if call_id in by_id]


class MeshFakeProvider:
    """The fake harness as an ax-agent provider (``--provider mesh-fake``)."""

    name = PROVIDER_NAME
    # It reads scripts and calls no model, so no catalog entry describes it.
    calls_model = False

    def __init__(self, *, model: str | None = None) -> None:
        self.model = model or DEFAULT_MODEL

    def complete(
        self,
        request: ProviderRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        abort: threading.Event | None = None,
    ) -> ProviderResponse:
        if abort is not None and abort.is_set():
            raise ProviderAborted()
        start = _turn_start(request.messages)
        first = request.messages[start].content[0]
        assert isinstance(first, TextBlock)
        try:
            envelope, body = parse_turn(first.text)
            steps, output = plan_turn(envelope, body)
        except (EnvelopeError, ScriptLineError) as exc:
            raise ProviderError(
                f"the fake harness cannot run this message: {exc}",
                hint="see docs/ax-mesh.md, 'The fake harness'",
            ) from None
        results = _results(request.messages[start + 1 :])
        done = 0
        for step in steps:
            if step.tool is not None:
                if done < len(results):
                    result = results[done]
                    done += 1
                    if result.is_error:
                        output.append(f"error from {step.tool}: {result.content}")
                    elif step.output:
                        output.append(result.content)
                    continue
                arguments = step.arguments(output) if callable(step.arguments) else step.arguments
                call = ToolUseBlock(clock.new_id("toolu_mesh"), step.tool, arguments)
                return self._respond(request, [call], on_text)
            if step.note is not None:
                output.append(step.note)
            if done < len(results):
                continue  # before a call already made: its sleep or failure happened then
            if step.sleep_s:
                waiter = abort if abort is not None else threading.Event()
                if waiter.wait(step.sleep_s):
                    raise ProviderAborted()
            if step.fail is not None:
                raise ProviderError(f"/fail: {step.fail}", hint=f"line {step.line} of the message")
        return self._respond(request, ["\n".join(output) or "done"], on_text)

    def _respond(
        self,
        request: ProviderRequest,
        content: list[ToolUseBlock] | list[str],
        on_text: Callable[[str], None] | None,
    ) -> ProviderResponse:
        blocks: list[TextBlock | ToolUseBlock] = []
        for item in content:
            if isinstance(item, str):
                if on_text is not None:
                    on_text(item)
                blocks.append(TextBlock(item))
            else:
                blocks.append(item)
        stop: StopReason = (
            "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
        )
        return ProviderResponse(blocks, stop, model=request.model or self.model)
