"""Resume: the conversation rebuilt from the session's log alone.

User messages, assistant messages (reasoning, text and every tool_use, as
recorded) and tool results (``tool.completed`` carries what the model was
given) are read back in order. A tool_use with no recorded completion is dangling: the
process died while it ran. It is answered from the evidence the log holds —
a command or check that ended is reported with its verdict, one that started
and never ended has unknown effects, an edit whose change was recorded is
said to be applied — and the answer is appended as a ``tool.completed`` so
the log and the conversation agree from here on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .providers import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock, reasoning
from .providers.base import AnswerBlock

Record = dict[str, Any]
# Images are not kept in the log: after a resume the model is told, not shown.
RESUMED_IMAGE_NOTE = (
    "\n[ax: the image shown here was not sent again after the session resumed; "
    "call view_image again to see it.]"
)


@dataclass
class _Call:
    use: ToolUseBlock
    result: ToolResultBlock | None = None
    requested: bool = False
    command_started: Record | None = None
    command_ended: Record | None = None
    check_started: Record | None = None
    check_completed: Record | None = None
    mutated: list[str] = field(default_factory=list)
    snapshotted: list[str] = field(default_factory=list)


def _blocks(content: Any) -> list[AnswerBlock]:
    blocks: list[AnswerBlock] = []
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == reasoning.BLOCK_TYPE:
            # One that no longer hashes to its item stays in the log, out of the conversation.
            block = reasoning.from_json(item)
            if block is not None:
                blocks.append(block)
        elif item.get("type") == "text" and isinstance(item.get("text"), str):
            blocks.append(TextBlock(item["text"]))
        elif item.get("type") == "tool_use":
            blocks.append(
                ToolUseBlock(str(item.get("id")), str(item.get("name")), item.get("input"))
            )
    return blocks


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [
        item.get("text", "")
        for item in content
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    ]
    return "\n".join(parts)


# Appends events to the session's log (``Session.record``): the one thing a rebuild
# needs of the session, so this module does not import it.
Recorder = Callable[..., Any]


def rebuild(record: Recorder, events: list[Record]) -> list[Message]:
    """The conversation in ``events``; dangling calls are answered and the answers recorded
    through ``record``."""
    messages: list[Message] = []
    pending: dict[str, _Call] = {}
    # The call a check belongs to: checks carry no call id, so the last call requested.
    current: _Call | None = None
    # A reminder that rode on this round's results (issue 26), as the model was sent it.
    reminder: str | None = None

    def close_round() -> None:
        nonlocal pending, current, reminder
        if not pending:
            return
        results: list[ContentBlock] = []
        for call in pending.values():
            if call.result is None:
                call.result = _repair(record, call)
            results.append(call.result)
        if reminder is not None:
            results.append(TextBlock(reminder))
        messages.append(Message("user", results))
        pending = {}
        current = None
        reminder = None

    for event in events:
        kind = event.get("type")
        call_id = event.get("callId")
        call = pending.get(call_id) if isinstance(call_id, str) else None
        if kind == "user.message":
            close_round()
            messages.append(Message("user", [TextBlock(_user_text(event.get("content", "")))]))
        elif kind == "assistant.message":
            close_round()
            blocks = _blocks(event.get("content"))
            messages.append(Message("assistant", list(blocks)))
            pending = {b.id: _Call(b) for b in blocks if isinstance(b, ToolUseBlock)}
        elif kind == "tool.requested" and call is not None:
            call.requested = True
            current = call
        elif kind == "tool.completed" and call is not None:
            content = event.get("content")
            text = content if isinstance(content, str) else str(event.get("summary", ""))
            if event.get("images"):
                text += RESUMED_IMAGE_NOTE
            call.result = ToolResultBlock(call.use.id, text, is_error=not event.get("ok"))
        elif kind == "command.started" and call is not None:
            call.command_started = event
        elif kind == "command.ended" and call is not None:
            call.command_ended = event
        elif kind == "file.mutated" and call is not None:
            call.mutated.append(str(event.get("path")))
        elif kind == "snapshot.stored" and call is not None:
            call.snapshotted.append(str(event.get("path")))
        elif kind == "check.started" and current is not None:
            current.check_started = event
        elif kind == "check.completed" and current is not None:
            current.check_completed = event
        elif kind == "reminder.sent" and pending and isinstance(event.get("text"), str):
            reminder = event["text"]
    close_round()
    return messages


def _repair(record: Recorder, call: _Call) -> ToolResultBlock:
    text = _what_happened(call)
    records: list[Record] = []
    if not call.requested:
        records.append(
            {
                "type": "tool.requested",
                "callId": call.use.id,
                "tool": call.use.name,
                "input": call.use.input,
            }
        )
    records.append(
        {
            "type": "tool.completed",
            "callId": call.use.id,
            "ok": False,
            "summary": text.split(". ")[0],
            "content": text,
            "outcome": "interrupted",
        }
    )
    record(*records)
    return ToolResultBlock(call.use.id, text, is_error=True)


def _what_happened(call: _Call) -> str:
    head = "Interrupted: ax stopped (crashed or was killed) during this call, before its result "
    head += "was recorded."
    if call.command_ended is not None:
        ended = call.command_ended
        verdict = (
            f"exit {ended.get('exitCode')}"
            if ended.get("termination") == "exited"
            else str(ended.get("termination"))
        )
        return (
            f"{head} The command did finish: {verdict}. Its output was not kept; rerun it to see."
        )
    if call.command_started is not None:
        return (
            f"{head} The command had started and did not finish: its effects are unknown. "
            "Check the state of the workspace before running it again."
        )
    if call.check_completed is not None:
        done = call.check_completed
        return (
            f"{head} The {done.get('kind')} check did finish: {done.get('verdict')}. "
            "Its output was not kept; rerun it to see."
        )
    if call.check_started is not None:
        return f"{head} The check had started and did not finish: its effects are unknown."
    if call.mutated:
        return f"{head} Its change was applied and recorded: {', '.join(call.mutated)}."
    if call.snapshotted:
        return (
            f"{head} A snapshot of {', '.join(call.snapshotted)} was taken, but no change was "
            "recorded: the file's state after the call is unknown. Read it before going on."
        )
    return f"{head} Nothing shows that it ran."
