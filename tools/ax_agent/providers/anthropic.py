"""The Anthropic Messages API through the official SDK (imported lazily).

The request carries two prompt-cache breakpoints: one at the end of the stable
prefix (tools and system prompt) and one on the last content block, so each
request reuses the previous one's cached conversation. Consecutive messages of
one role are coalesced at the wire: an aborted turn or a resumed crash can
leave two user messages in a row, which the loop keeps as they happened.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libcommon.redact import redact

from ..window.budget import output_cap
from ..window.tokens import estimate_request
from .base import (
    AnswerBlock,
    Message,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    ReasoningBlock,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    effective_model,
)
from .images import base64_data, pointer, takes_images
from .reasoning import replayable
from .streaming import (
    CONNECT_TIMEOUT_S,
    READ_TIMEOUT_S,
    WRITE_TIMEOUT_S,
    Failure,
    closer,
    parse_retry_after,
    stream_events,
)

if TYPE_CHECKING:
    import anthropic as anthropic_sdk

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
API_KEY_VAR = "ANTHROPIC_API_KEY"
BASE_URL_VAR = "ANTHROPIC_BASE_URL"

CACHE_CONTROL = {"type": "ephemeral"}

# Anthropic stop reasons outside the contract's five, mapped to their nearest meaning.
_STOP_ALIASES: dict[str, StopReason] = {"model_context_window_exceeded": "max_tokens"}
_RETRYABLE_TYPES = {"overloaded_error", "rate_limit_error", "api_error"}
_KNOWN_STOPS = {"end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"}
# Reasoning block types, and the field of each that is the API's own ciphertext.
_REASONING_OPAQUE = {"thinking": "signature", "redacted_thinking": "data"}
PROVIDER_NAME = "anthropic"


class AnthropicProvider:
    name = PROVIDER_NAME

    def __init__(self, *, model: str | None, environ: Mapping[str, str]) -> None:
        key = environ.get(API_KEY_VAR, "").strip()
        if not key:
            raise ProviderError(
                f"the anthropic provider needs an API key and {API_KEY_VAR} is not set",
                hint=f"export {API_KEY_VAR}=… (keys are read from the environment only)",
            )
        self.model = model or DEFAULT_ANTHROPIC_MODEL
        self.base_url = environ.get(BASE_URL_VAR, "").strip() or DEFAULT_ANTHROPIC_BASE_URL
        # A base URL may carry credentials (user:password@host); messages show it redacted.
        self.shown_url = redact(self.base_url)
        self._key = key
        self._client: anthropic_sdk.Anthropic | None = None
        self._client_lock = threading.Lock()

    def complete(
        self,
        request: ProviderRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        abort: threading.Event | None = None,
    ) -> ProviderResponse:
        client = self._get_client()
        params = build_params(request, self.model)

        def start() -> tuple[Iterator[Any], Callable[[], None]]:
            stream = client.messages.create(**params, stream=True)
            return iter(stream), closer(stream.response)

        builder = _ResponseBuilder(model=params["model"], requested=params["model"])
        for event in stream_events(start, self._classify, abort):
            text = builder.feed(event)
            if text and on_text is not None:
                on_text(text)
        return builder.finish()

    def _get_client(self) -> anthropic_sdk.Anthropic:
        with self._client_lock:
            if self._client is None:
                import anthropic

                # Key and URL passed explicitly, so the SDK consults no environment
                # variable or profile of its own; retries are ours (connection phase only).
                self._client = anthropic.Anthropic(
                    api_key=self._key,
                    base_url=self.base_url,
                    max_retries=0,
                    timeout=anthropic.Timeout(
                        READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, write=WRITE_TIMEOUT_S
                    ),
                )
            return self._client

    def _scrub(self, text: str) -> str:
        return redact(text.replace(self._key, "[REDACTED]"))

    def _classify(self, exc: BaseException, mid_stream: bool) -> Failure:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            detail = self._scrub(_error_detail(exc.body, exc.message))
            # An error event inside a 200 stream carries its kind in the body instead.
            in_stream = mid_stream or status < 400
            transient = status == 429 or status >= 500 or _error_type(exc.body) in _RETRYABLE_TYPES
            where = "in the stream" if in_stream else f"with HTTP {status}"
            return Failure(
                ProviderError(
                    f"the Anthropic API failed {where}: {detail}",
                    hint=_status_hint(status, transient),
                    retryable=transient and not mid_stream,
                ),
                retry_after=parse_retry_after(exc.response.headers),
            )
        if isinstance(exc, anthropic.APIConnectionError) and not mid_stream:
            cause = exc.__cause__ or exc
            # A read timeout already waited READ_TIMEOUT_S; repeating it helps no one.
            read_timeout = type(cause).__name__ == "ReadTimeout"
            return Failure(
                ProviderError(
                    f"cannot reach the Anthropic API at {self.shown_url}: "
                    f"{type(cause).__name__}: {self._scrub(str(cause))}",
                    hint=f"check the network and {BASE_URL_VAR}",
                    retryable=not read_timeout,
                )
            )
        return Failure(
            ProviderError(
                f"the Anthropic stream was interrupted before the response was complete: "
                f"{type(exc).__name__}: {self._scrub(str(exc))}",
                hint="nothing of the partial answer was kept; send the request again",
            )
        )


def _error_type(body: object) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        kind = body["error"].get("type")
        return kind if isinstance(kind, str) else None
    return None


def _error_detail(body: object, fallback: str) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            kind = error.get("type")
            return f"{kind}: {error['message']}" if isinstance(kind, str) else error["message"]
    return fallback


def _status_hint(status: int, transient: bool) -> str:
    if status in (401, 403):
        return f"check {API_KEY_VAR}"
    if status == 404:
        return "check the model name (--model) and the base URL"
    if status == 429:
        return "rate limited: wait a little and try again"
    if transient:
        return "the API is overloaded or failing: try again shortly"
    return "the API refused the request; the message says why"


def build_params(request: ProviderRequest, default_model: str) -> dict[str, Any]:
    """The keyword arguments of ``messages.create``: the wire request without ``stream``."""
    tools: list[dict[str, Any]] = [
        {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
        for tool in request.tools
    ]
    system: list[dict[str, Any]] = (
        [{"type": "text", "text": request.system}] if request.system else []
    )
    # Caching covers tools, then system, then messages: a breakpoint on the system
    # block covers the tools too, so it marks the stable prefix whenever there is one.
    if system:
        system[-1]["cache_control"] = dict(CACHE_CONTROL)
    elif tools:
        tools[-1]["cache_control"] = dict(CACHE_CONTROL)
    model = effective_model(request, default_model)
    messages = wire_messages(request.messages, model)
    if messages:
        # Never on a replayed reasoning block: its bytes must not change.
        marked = [b for b in messages[-1]["content"] if b["type"] not in _REASONING_OPAQUE]
        if marked:
            marked[-1]["cache_control"] = dict(CACHE_CONTROL)
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": output_cap(model, request.max_tokens, estimate_request(request)),
        "messages": messages,
    }
    if system:
        params["system"] = system
    if tools:
        params["tools"] = tools
    return params


def wire_messages(messages: list[Message], model: str) -> list[dict[str, Any]]:
    """Messages as the API takes them, consecutive same-role messages coalesced.

    Reasoning blocks this provider made for ``model`` go back verbatim, at the head
    of their message; any other reasoning block stays out of the request.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        own = [dict(b.data) for b in message.content if replayable(b, PROVIDER_NAME, model)]
        rest = [b for b in message.content if not isinstance(b, ReasoningBlock)]
        blocks = own + [_wire_block(block, model) for block in rest]
        blocks = [b for b in blocks if not (b["type"] == "text" and not b["text"])]
        if not blocks:
            continue
        if wire and wire[-1]["role"] == message.role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": message.role, "content": blocks})
    for entry in wire:
        if entry["role"] == "user":
            # The API wants a user message's tool results before its text; the
            # sort is stable, so both keep their own order.
            entry["content"].sort(key=lambda b: b["type"] != "tool_result")
    return wire


def _wire_block(block: TextBlock | ToolUseBlock | ToolResultBlock, model: str) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": _as_object(block)}
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": _result_content(block, model),
    }
    if block.is_error:
        result["is_error"] = True
    return result


def _result_content(block: ToolResultBlock, model: str) -> str | list[dict[str, Any]]:
    if not block.images:
        return block.content
    if not takes_images(model):
        return "\n".join([block.content, *(pointer(image, model) for image in block.images)])
    parts: list[dict[str, Any]] = [{"type": "text", "text": block.content}]
    for image in block.images:
        source = {"type": "base64", "media_type": image.media_type, "data": base64_data(image)}
        parts.append({"type": "image", "source": source})
    return parts


def _as_object(block: ToolUseBlock) -> dict[str, Any]:
    """The API takes only an object as tool input; other shapes are carried inside one."""
    if isinstance(block.input, dict):
        return block.input
    if isinstance(block.input, str):
        try:
            decoded = json.loads(block.input)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            return decoded
    return {"input": block.input}


@dataclass
class _Block:
    kind: str  # "text", "tool_use", a reasoning type, or another type we do not keep
    text: str = ""
    # A reasoning block's fields as they arrived (thinking and signature grow by deltas).
    native: dict[str, Any] = field(default_factory=dict)
    tool_id: str = ""
    tool_name: str = ""
    initial_input: Any = None
    partial_json: str = ""


@dataclass
class _ResponseBuilder:
    """Folds the raw stream events into one ProviderResponse."""

    model: str
    # The model the request named: reasoning goes back only to it.
    requested: str = ""
    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    started: bool = False
    stopped: bool = False

    def feed(self, event: Any) -> str:
        """Take one event; return the text delta it carries (may be empty)."""
        kind = event.type
        if kind == "message_start":
            self.started = True
            self.model = event.message.model or self.model
            self._take_usage(event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "text":
                self.blocks[event.index] = _Block("text", text=block.text)
                return str(block.text)
            if block.type == "tool_use":
                self.blocks[event.index] = _Block(
                    "tool_use", tool_id=block.id, tool_name=block.name, initial_input=block.input
                )
            elif block.type in _REASONING_OPAQUE:
                self.blocks[event.index] = _Block(block.type, native=block.to_dict())
            else:
                self.blocks[event.index] = _Block(block.type)
        elif kind == "content_block_delta":
            target = self.blocks.get(event.index)
            delta = event.delta
            if target is None:
                return ""
            if delta.type == "text_delta" and target.kind == "text":
                target.text += delta.text
                return str(delta.text)
            if delta.type == "input_json_delta" and target.kind == "tool_use":
                target.partial_json += delta.partial_json
            if delta.type == "thinking_delta" and target.kind == "thinking":
                target.native["thinking"] = target.native.get("thinking", "") + delta.thinking
            if delta.type == "signature_delta" and target.kind == "thinking":
                target.native["signature"] = target.native.get("signature", "") + delta.signature
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._take_usage(event.usage)
        elif kind == "message_stop":
            self.stopped = True
        return ""

    def _take_usage(self, usage: Any) -> None:
        # message_delta repeats the counts cumulatively; a missing one keeps its value.
        if usage is None:
            return
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ):
            value = getattr(usage, name, None)
            if isinstance(value, int):
                setattr(self.usage, name, value)

    def finish(self) -> ProviderResponse:
        if not (self.started and self.stopped and self.stop_reason):
            missing = "message_start" if not self.started else "message_stop and a stop reason"
            raise ProviderError(
                f"the Anthropic stream ended without {missing}; the partial answer was dropped",
                hint="send the request again",
            )
        content: list[AnswerBlock] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.kind in _REASONING_OPAQUE:
                opaque = (_REASONING_OPAQUE[block.kind],)
                content.append(ReasoningBlock(PROVIDER_NAME, self.requested, block.native, opaque))
            elif block.kind == "text" and block.text:
                content.append(TextBlock(block.text))
            elif block.kind == "tool_use":
                content.append(ToolUseBlock(block.tool_id, block.tool_name, _tool_input(block)))
        has_tools = any(isinstance(b, ToolUseBlock) for b in content)
        return ProviderResponse(
            content=content,
            stop_reason=_stop_reason(self.stop_reason, has_tools),
            usage=self.usage,
            model=self.model,
        )


def _tool_input(block: _Block) -> Any:
    if not block.partial_json:
        return block.initial_input if block.initial_input is not None else {}
    try:
        return json.loads(block.partial_json)
    except ValueError:
        # Kept verbatim: the loop reports unparseable input back to the model.
        return block.partial_json


def _stop_reason(raw: str, has_tools: bool) -> StopReason:
    if raw in _KNOWN_STOPS:
        return raw  # type: ignore[return-value]
    if raw in _STOP_ALIASES:
        return _STOP_ALIASES[raw]
    # pause_turn and reasons newer than this code: the turn ended, with or without calls.
    return "tool_use" if has_tools else "end_turn"
