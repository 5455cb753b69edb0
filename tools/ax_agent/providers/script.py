"""The script provider: replays turns from a JSON file and never calls a model.

Tests and the demo drive the whole loop with it. Each ``complete()`` call
consumes the next turn; running out is a loud ScriptExhausted, never a silent
end. The format is documented in docs/ax-agent.md, "The script format".
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field, JsonValue, ValidationError, model_validator

from libcommon import jsonio
from libcommon.contracts import Contract
from libcommon.errors import UsageError

from .base import (
    Message,
    ProviderAborted,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    ScriptExhausted,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

DEFAULT_SCRIPT_MODEL = "script"
# Generated tool call ids: toolu_script_1, toolu_script_2, … counted over the whole script.
TOOL_ID_PREFIX = "toolu_script_"
# A script file larger than this is refused: scripts are hand-written turns.
SCRIPT_MAX_BYTES = 4 * 1024 * 1024
# How much of the last message an ``expect`` failure quotes.
EXPECT_QUOTE_CHARS = 300


class ScriptToolCall(Contract):
    name: str = Field(min_length=1)
    input: JsonValue = Field(default_factory=dict)
    id: str | None = Field(default=None, min_length=1)


class ScriptUsage(Contract):
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_creation_input_tokens: int = Field(default=0, ge=0)
    cache_read_input_tokens: int = Field(default=0, ge=0)


class ScriptError(Contract):
    message: str = Field(min_length=1)
    retryable: bool = False


class ScriptTurn(Contract):
    text: str | list[str] = ""
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    usage: ScriptUsage | None = None
    expect: str | None = None
    hang: bool = False
    error: ScriptError | None = None

    @model_validator(mode="after")
    def _one_ending(self) -> ScriptTurn:
        if self.hang and self.error is not None:
            raise ValueError("a turn cannot both hang and fail")
        if (self.hang or self.error is not None) and (
            self.tool_calls or self.stop_reason or self.usage
        ):
            raise ValueError(
                "a hang or error turn takes only text (and expect): it returns no response"
            )
        return self


class Script(Contract):
    model: str | None = None
    turns: list[ScriptTurn]
    # A delegated task's own turns, by its plan task id or label (issue 21).
    tasks: dict[str, list[ScriptTurn]] = Field(default_factory=dict)


def parse_script(data: Any, source: str = "script") -> Script:
    """Validate a script; a bad one is a UsageError naming the field."""
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        from libcommon.cliapp import describe_problem, error_location

        problems = "; ".join(
            f"{error_location(error)}: {describe_problem(error)}" for error in exc.errors()
        )
        raise UsageError(
            f"{source} is not a valid script: {problems}",
            hint="see docs/ax-agent.md, 'The script format'",
        ) from None


def load_script(path: Path) -> Script:
    try:
        with path.open("rb") as handle:
            raw = handle.read(SCRIPT_MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the script {path}: {exc.strerror or exc}") from None
    if len(raw) > SCRIPT_MAX_BYTES:
        raise UsageError(f"the script {path} is larger than {SCRIPT_MAX_BYTES} bytes")
    try:
        data = jsonio.loads(raw)
    except jsonio.JSONDecodeError as exc:
        raise UsageError(f"the script {path} is not valid JSON: {exc}") from None
    return parse_script(data, str(path))


def _deltas(text: str | list[str]) -> list[str]:
    """Text as it streams: the given pieces, or a string cut after each run of spaces."""
    if isinstance(text, list):
        return [piece for piece in text if piece]
    return re.findall(r"\S+\s*|\s+", text)


def last_user_text(messages: list[Message]) -> str:
    """The text of the last user message: its text blocks and tool result contents."""
    for message in reversed(messages):
        if message.role == "user":
            parts = []
            for block in message.content:
                if isinstance(block, TextBlock):
                    parts.append(block.text)
                elif isinstance(block, ToolResultBlock):
                    parts.append(block.content)
            return "\n".join(parts)
    return ""


class ScriptProvider:
    name = "script"
    # It replays turns and calls no model, so no catalog entry describes it.
    calls_model = False

    def __init__(self, script: Script, *, model: str | None = None, source: str = "script"):
        self.script = script
        self.model = model or script.model or DEFAULT_SCRIPT_MODEL
        self.source = source
        self.calls = 0
        self._lock = threading.Lock()
        # Ids are fixed by position in the script, so a rerun gives the same ones.
        self._ids: list[list[str]] = []
        counter = 0
        for turn in script.turns:
            ids = []
            for call in turn.tool_calls:
                counter += 1
                ids.append(call.id or f"{TOOL_ID_PREFIX}{counter}")
            self._ids.append(ids)

    @classmethod
    def from_file(cls, path: Path, *, model: str | None = None) -> ScriptProvider:
        return cls(load_script(path), model=model, source=str(path))

    def for_task(self, task: str) -> ScriptProvider:
        """The provider of a delegated task's child session: the script's turns for ``task``
        (none when the script has none for it, so its first model call fails loudly)."""
        turns = self.script.tasks.get(task, [])
        return ScriptProvider(
            Script(model=self.script.model, turns=turns),
            model=self.model,
            source=f"{self.source} (task {task})",
        )

    @property
    def remaining(self) -> int:
        return len(self.script.turns) - self.calls

    def complete(
        self,
        request: ProviderRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        abort: threading.Event | None = None,
    ) -> ProviderResponse:
        with self._lock:
            self.calls += 1
            number = self.calls
        if number > len(self.script.turns):
            raise ScriptExhausted(
                f"the script {self.source} has {len(self.script.turns)} turns "
                f"and model call {number} asked for one more",
                hint="add a turn to the script, or find why the loop made another call",
            )
        turn = self.script.turns[number - 1]
        if abort is not None and abort.is_set():
            raise ProviderAborted()
        if turn.expect is not None:
            self._check_expect(number, turn.expect, request.messages)
        for piece in _deltas(turn.text):
            if abort is not None and abort.is_set():
                raise ProviderAborted()
            if on_text is not None:
                on_text(piece)
        if turn.hang:
            if abort is None:
                raise ProviderError(
                    f"turn {number} of the script {self.source} hangs, "
                    "but the caller passed no abort event to end it"
                )
            abort.wait()
            raise ProviderAborted()
        if turn.error is not None:
            raise ProviderError(
                turn.error.message,
                hint=f"scripted failure (turn {number} of {self.source})",
                retryable=turn.error.retryable,
            )
        return self._response(number, turn, request)

    def _check_expect(self, number: int, expected: str, messages: list[Message]) -> None:
        actual = last_user_text(messages)
        if expected not in actual:
            quote = actual[-EXPECT_QUOTE_CHARS:]
            raise ProviderError(
                f"turn {number} of the script {self.source} expected the last user message "
                f"to contain {expected!r}; it was: {quote!r}",
                hint="the loop sent something other than the script expects",
            )

    def _response(
        self, number: int, turn: ScriptTurn, request: ProviderRequest
    ) -> ProviderResponse:
        text = "".join(_deltas(turn.text))
        content: list[TextBlock | ToolUseBlock] = [TextBlock(text)] if text else []
        for call, call_id in zip(turn.tool_calls, self._ids[number - 1], strict=True):
            content.append(ToolUseBlock(call_id, call.name, call.input))
        stop: StopReason = turn.stop_reason or ("tool_use" if turn.tool_calls else "end_turn")
        usage = Usage(**turn.usage.model_dump()) if turn.usage is not None else Usage()
        return ProviderResponse(
            content=content, stop_reason=stop, usage=usage, model=request.model or self.model
        )
