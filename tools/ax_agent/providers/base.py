"""The provider contract: the conversation shapes the loop builds and the errors it handles.

Plain dataclasses, no wire format: each provider translates these to and from its
own protocol, so the turn loop never names a provider.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from libcommon.errors import OperationFailed

from .errors import RETRYABLE_KINDS, ErrorKind

# The output budget a request asks for when the caller names none.
DEFAULT_MAX_TOKENS = 8192

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"]
STOP_REASONS: tuple[StopReason, ...] = (
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "refusal",
)


@dataclass
class TextBlock:
    text: str


@dataclass
class ToolUseBlock:
    id: str
    name: str
    # Exactly what the model sent: usually a dict, but a string when the model
    # sent its arguments as a JSON string, or sent arguments that do not parse.
    input: Any


@dataclass(frozen=True)
class ImagePart:
    """An image a tool result shows the model (view_image): its bytes and where they are from.

    ``source`` is the workspace path or ``artifact <sha256>``; adapters send the
    bytes only to a model the catalog says takes images, a pointer otherwise.
    """

    media_type: str
    data: bytes
    sha256: str
    source: str


@dataclass
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()


@dataclass
class ReasoningBlock:
    """A provider's native reasoning artifact, carried verbatim and never read by ax.

    ``data`` is the item exactly as ``provider`` sent it for ``model`` (an OpenAI
    reasoning item with its encrypted_content, an Anthropic thinking block with its
    signature, a redacted_thinking block). Only that provider's adapter sends it
    back, and only to that model; every other adapter leaves it out of the wire.
    ``opaque`` names the top-level fields of ``data`` that are ciphertext, which
    the session log stores so that no redaction can change them.
    """

    provider: str
    model: str
    data: dict[str, Any]
    opaque: tuple[str, ...] = ()


ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | ReasoningBlock
# What an answer holds: the model's reasoning, its text and its tool calls.
AnswerBlock = TextBlock | ToolUseBlock | ReasoningBlock


@dataclass
class Message:
    role: Literal["user", "assistant"]
    content: list[ContentBlock]


@dataclass
class ToolSchema:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ProviderRequest:
    system: str
    messages: list[Message]
    tools: list[ToolSchema]
    model: str
    max_tokens: int = DEFAULT_MAX_TOKENS


@dataclass
class Usage:
    """Token counts. ``input_tokens`` excludes the cached part, as Anthropic counts it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, other: Usage) -> None:
        """Accumulate ``other`` into this total, in place."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens


@dataclass
class ProviderResponse:
    content: Sequence[AnswerBlock]
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    @property
    def text(self) -> str:
        """All text blocks joined: the answer a person reads."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [block for block in self.content if isinstance(block, ToolUseBlock)]


class Provider(Protocol):
    """One model backend. ``complete`` is one request and one (streamed) response."""

    name: str
    # The model requests go to when ``ProviderRequest.model`` is empty.
    model: str

    def complete(
        self,
        request: ProviderRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        abort: threading.Event | None = None,
    ) -> ProviderResponse: ...


class ProviderError(OperationFailed):
    """The provider could not produce a complete response.

    ``kind`` is its place in the one taxonomy (errors.py). ``retryable`` says
    whether the same request may succeed later (a throttle, an overloaded
    server); by default the kind decides. A request the server refused, or a
    stream cut after it started, is not retryable. Messages never contain a
    credential.
    """

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        retryable: bool | None = None,
        kind: ErrorKind = "other",
    ) -> None:
        super().__init__(message, hint)
        self.kind: ErrorKind = kind
        self.retryable = kind in RETRYABLE_KINDS if retryable is None else retryable


class ProviderAborted(OperationFailed):
    """The caller's abort event was set; no response is returned."""

    def __init__(self, message: str = "the model request was aborted", hint: str | None = None):
        super().__init__(message, hint)


class ScriptExhausted(OperationFailed):
    """The script provider was asked for more turns than its script holds."""


def effective_model(request: ProviderRequest, default: str) -> str:
    return request.model or default
