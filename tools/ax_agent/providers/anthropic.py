"""The Anthropic Messages API through the official SDK (imported lazily).

The request carries two prompt-cache breakpoints: one at the end of the stable
prefix (tools and system prompt) and one on the last content block, so each
request reuses the previous one's cached conversation. Consecutive messages of
one role are coalesced at the wire: an aborted turn or a resumed crash can
leave two user messages in a row, which the loop keeps as they happened.

The SDK sends the request and raises for an error status; the body's bytes are
parsed by the one SSE parser (streaming.py) every provider shares, and an
``error`` event raises ``_StreamError`` where it arrives, so an overloaded
error sent as the first event is still in the connection phase and retried.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
from .errors import ErrorKind, hint_for, kind_for_status
from .images import base64_data, pointer, takes_images
from .reasoning import replayable
from .streaming import (
    CONNECT_TIMEOUT_S,
    READ_TIMEOUT_S,
    WRITE_TIMEOUT_S,
    Failure,
    closer,
    iter_sse,
    parse_retry_after,
    stream_events,
)
from .transport import route

if TYPE_CHECKING:
    import anthropic as anthropic_sdk

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
API_KEY_VAR = "ANTHROPIC_API_KEY"
BASE_URL_VAR = "ANTHROPIC_BASE_URL"

CACHE_CONTROL = {"type": "ephemeral"}

# Anthropic stop reasons outside the contract's five, mapped to their nearest meaning.
_STOP_ALIASES: dict[str, StopReason] = {"model_context_window_exceeded": "max_tokens"}
_KNOWN_STOPS = {"end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"}
# Reasoning block types, and the field of each that is the API's own ciphertext.
_REASONING_OPAQUE = {"thinking": "signature", "redacted_thinking": "data"}
# The deltas that grow a thinking block, and the field each one grows.
_REASONING_DELTAS = {"thinking_delta": "thinking", "signature_delta": "signature"}
PROVIDER_NAME = "anthropic"


class AnthropicProvider:
    name = PROVIDER_NAME

    def __init__(self, *, model: str | None, environ: Mapping[str, str]) -> None:
        key = environ.get(API_KEY_VAR, "").strip()
        if not key:
            raise ProviderError(
                f"the anthropic provider needs an API key and {API_KEY_VAR} is not set",
                hint=f"export {API_KEY_VAR}=… (keys are read from the environment only)",
                kind="auth",
            )
        self.model = model or DEFAULT_ANTHROPIC_MODEL
        self.key_var = API_KEY_VAR
        self.base_url = environ.get(BASE_URL_VAR, "").strip() or DEFAULT_ANTHROPIC_BASE_URL
        self.route = route(self.base_url, environ)
        # A base URL may carry credentials (user:password@host); messages show it redacted.
        self.shown_url = self.route.scrub(self.base_url)
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

        def start() -> tuple[Iterator[dict[str, Any]], Callable[[], None]]:
            stream = client.messages.create(**params, stream=True)
            # The SDK's own decoder is not used: the raw body goes to the shared parser.
            return _events(stream.response.iter_bytes()), closer(stream.response)

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

                timeout = anthropic.Timeout(
                    READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, write=WRITE_TIMEOUT_S
                )
                # Key, URL and HTTP client passed explicitly, so the SDK consults no
                # environment variable (proxy ones included) or profile of its own;
                # retries are ours (connection phase only).
                self._client = anthropic.Anthropic(
                    api_key=self._key,
                    base_url=self.base_url,
                    max_retries=0,
                    timeout=timeout,
                    http_client=anthropic.DefaultHttpxClient(
                        timeout=timeout, **self.route.client_options()
                    ),
                )
            return self._client

    def _scrub(self, text: str) -> str:
        return self.route.scrub(text.replace(self._key, "[REDACTED]"))

    def _error(self, message: str, kind: ErrorKind, retryable: bool | None = None) -> ProviderError:
        return ProviderError(
            self._scrub(message), hint=hint_for(kind, API_KEY_VAR), kind=kind, retryable=retryable
        )

    def _classify(self, exc: BaseException, mid_stream: bool) -> Failure:
        import anthropic

        if isinstance(exc, ProviderError):  # raised while reading events: already worded
            exc.message = self._scrub(exc.message)
            exc.args = (exc.message,)
            return Failure(exc)
        if isinstance(exc, _StreamError):
            kind = kind_for_status(200, _error_type(exc.body), _error_detail(exc.body, ""))
            return Failure(
                self._error(
                    f"the Anthropic API failed in the stream: {_error_detail(exc.body, 'error')}",
                    kind,
                    retryable=None if not mid_stream else False,
                )
            )
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            detail = _error_detail(exc.body, exc.message)
            kind = kind_for_status(status, _error_type(exc.body), detail)
            return Failure(
                self._error(
                    "the Anthropic API failed: "
                    + self.route.status_message(self.shown_url, status, detail),
                    kind,
                    retryable=False if mid_stream or status == 407 else None,
                ),
                retry_after=parse_retry_after(exc.response.headers),
            )
        if isinstance(exc, anthropic.APIConnectionError) and not mid_stream:
            cause = exc.__cause__ or exc
            # A read timeout already waited READ_TIMEOUT_S; repeating it helps no one.
            kind = "timeout" if type(cause).__name__ == "ReadTimeout" else "connection"
            return Failure(
                self._error(
                    f"cannot reach the Anthropic API at {self.shown_url} "
                    f"{self.route.described()}: {type(cause).__name__}: {cause}",
                    kind,
                )
            )
        kind = "timeout" if type(exc).__name__ == "ReadTimeout" else "truncated"
        return Failure(
            self._error(
                f"the Anthropic stream was interrupted before the response was complete: "
                f"{type(exc).__name__}: {exc}",
                kind,
                retryable=False,
            )
        )


class _StreamError(Exception):
    """An ``error`` event in a 200 stream: the body says its kind."""

    def __init__(self, body: object) -> None:
        super().__init__("error event")
        self.body = body


def _events(body: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON events of a Messages stream, through the shared SSE parser."""
    for event in iter_sse(body):
        try:
            data = json.loads(event.data)
        except ValueError:
            raise ProviderError(
                f"the Anthropic stream sent an event that is not JSON: {event.data[:200]!r}",
                hint=hint_for("protocol", API_KEY_VAR),
                kind="protocol",
            ) from None
        if not isinstance(data, dict):
            continue
        if event.event == "error" or data.get("type") == "error":
            raise _StreamError(data)
        yield data


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

    def feed(self, event: dict[str, Any]) -> str:
        """Take one event; return the text delta it carries (may be empty)."""
        kind = event.get("type")
        index = event.get("index")
        if kind == "message_start":
            message = _object(event.get("message"))
            self.started = True
            self.model = _text(message.get("model")) or self.model
            self._take_usage(message.get("usage"))
        elif kind == "content_block_start" and isinstance(index, int):
            block = _object(event.get("content_block"))
            if block.get("type") == "text":
                self.blocks[index] = _Block("text", text=_text(block.get("text")))
                return self.blocks[index].text
            if block.get("type") == "tool_use":
                self.blocks[index] = _Block(
                    "tool_use",
                    tool_id=_text(block.get("id")),
                    tool_name=_text(block.get("name")),
                    initial_input=block.get("input"),
                )
            elif block.get("type") in _REASONING_OPAQUE:
                # Kept as it arrived: a replay must send the API's own bytes back.
                self.blocks[index] = _Block(_text(block.get("type")), native=dict(block))
            else:
                self.blocks[index] = _Block(_text(block.get("type")))
        elif kind == "content_block_delta" and isinstance(index, int):
            target = self.blocks.get(index)
            delta = _object(event.get("delta"))
            if target is None:
                return ""
            delta_type = delta.get("type")
            if delta_type == "text_delta" and target.kind == "text":
                piece = _text(delta.get("text"))
                target.text += piece
                return piece
            if delta_type == "input_json_delta" and target.kind == "tool_use":
                target.partial_json += _text(delta.get("partial_json"))
            elif delta_type in _REASONING_DELTAS and target.kind == "thinking":
                # thinking_delta grows "thinking", signature_delta grows "signature".
                name = _REASONING_DELTAS[delta_type]
                target.native[name] = _text(target.native.get(name)) + _text(delta.get(name))
        elif kind == "message_delta":
            reason = _object(event.get("delta")).get("stop_reason")
            self.stop_reason = _text(reason) or self.stop_reason
            self._take_usage(event.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        return ""

    def _take_usage(self, usage: object) -> None:
        # message_delta repeats the counts cumulatively; a missing one keeps its value.
        counts = _object(usage)
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ):
            value = counts.get(name)
            if isinstance(value, int):
                setattr(self.usage, name, value)

    def finish(self) -> ProviderResponse:
        if not (self.started and self.stopped and self.stop_reason):
            missing = "message_start" if not self.started else "message_stop and a stop reason"
            raise ProviderError(
                f"the Anthropic stream ended without {missing}; the partial answer was dropped",
                hint="send the request again",
                kind="truncated",
                retryable=False,
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


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


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
