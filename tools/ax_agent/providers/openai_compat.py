"""OpenAI-compatible Chat Completions with tools, streamed over httpx (imported lazily).

For local servers (llama.cpp, vLLM, Ollama) and anything else that speaks the
same wire format. The base URL is the one such servers document for OpenAI
clients, ending in ``/v1``; requests go to ``<base>/chat/completions``.

Three mappings matter: the system prompt is the first message; every tool
result is its own ``tool`` message, placed before any user text of the same
turn; and a stream that ends without a finish reason is an error, never a
final answer (a proxy's idle half-close would otherwise pass a truncated
sentence off as the model's last word).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libcommon import clock
from libcommon.redact import redact

from .base import (
    Message,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    effective_model,
)
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
    import httpx

API_KEY_VAR = "OPENAI_API_KEY"
# How much of an error response body goes into the error message.
ERROR_BODY_MAX_CHARS = 500
# Prefixed to a failed tool result: Chat Completions has no is_error flag.
TOOL_ERROR_PREFIX = "ERROR: "

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class _HTTPStatus(Exception):
    def __init__(self, status: int, body: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.headers = headers


class OpenAICompatProvider:
    name = "openai-compatible"

    def __init__(self, *, model: str, base_url: str, environ: Mapping[str, str]) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        # A base URL may carry credentials (user:password@host); messages show it redacted.
        self.shown_url = redact(self.url)
        self._key = environ.get(API_KEY_VAR, "").strip()
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def complete(
        self,
        request: ProviderRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        abort: threading.Event | None = None,
    ) -> ProviderResponse:
        body = build_body(request, self.model)
        headers = {"Accept": "text/event-stream"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        client = self._get_client()

        def start() -> tuple[Iterator[dict[str, Any]], Callable[[], None]]:
            response = client.send(
                client.build_request("POST", self.url, json=body, headers=headers), stream=True
            )
            if response.status_code >= 400:
                try:
                    text = response.read().decode("utf-8", "replace")
                finally:
                    response.close()
                raise _HTTPStatus(response.status_code, text, dict(response.headers))
            return _chunks(response.iter_lines()), closer(response)

        builder = _ResponseBuilder(model=body["model"])
        for chunk in stream_events(start, self._classify, abort):
            text = builder.feed(chunk, self._scrub)
            if text and on_text is not None:
                on_text(text)
        return builder.finish()

    def _get_client(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(
                    timeout=httpx.Timeout(
                        READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, write=WRITE_TIMEOUT_S
                    )
                )
            return self._client

    def _scrub(self, text: str) -> str:
        if self._key:
            text = text.replace(self._key, "[REDACTED]")
        return redact(text)

    def _classify(self, exc: BaseException, mid_stream: bool) -> Failure:
        import httpx

        if isinstance(exc, ProviderError):  # raised while reading chunks: already worded
            exc.message = self._scrub(exc.message)
            exc.args = (exc.message,)
            return Failure(exc)
        if isinstance(exc, _HTTPStatus):
            detail = self._scrub(_error_detail(exc.body))
            return Failure(
                ProviderError(
                    f"{self.shown_url} answered HTTP {exc.status}: {detail}",
                    hint=_status_hint(exc.status),
                    retryable=exc.status == 429 or exc.status >= 500,
                ),
                retry_after=parse_retry_after(exc.headers),
            )
        if isinstance(exc, httpx.TransportError) and not mid_stream:
            # A read timeout already waited READ_TIMEOUT_S; repeating it helps no one.
            return Failure(
                ProviderError(
                    f"cannot reach {self.shown_url}: {type(exc).__name__}: {self._scrub(str(exc))}",
                    hint="is the server running, and is --base-url right (it usually ends in /v1)?",
                    retryable=not isinstance(exc, httpx.ReadTimeout),
                )
            )
        return Failure(
            ProviderError(
                f"the stream from {self.shown_url} was interrupted before it was complete: "
                f"{type(exc).__name__}: {self._scrub(str(exc))}",
                hint="nothing of the partial answer was kept; send the request again",
            )
        )


def _error_detail(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:ERROR_BODY_MAX_CHARS]
        if isinstance(error, str):
            return error[:ERROR_BODY_MAX_CHARS]
    return body.strip()[:ERROR_BODY_MAX_CHARS] or "(empty body)"


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return f"the server refused the credentials: set or check {API_KEY_VAR}"
    if status == 404:
        return "check --base-url (usually ending in /v1) and the model name"
    if status == 429 or status >= 500:
        return "the server is busy or failing: try again shortly"
    return "the server refused the request; the message says why"


def _sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The data payload of each server-sent event (multi-line data joined by newlines)."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue  # a comment, used as keep-alive
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def _chunks(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON chunks of a Chat Completions stream, up to ``[DONE]``."""
    for payload in _sse_data(lines):
        if payload.strip() == "[DONE]":
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise ProviderError(
                f"the server sent a stream chunk that is not JSON: {redact(payload[:200])!r}",
                hint="is --base-url an OpenAI-compatible endpoint?",
            ) from None
        if isinstance(chunk, dict):
            yield chunk


def build_body(request: ProviderRequest, default_model: str) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions``."""
    body: dict[str, Any] = {
        "model": effective_model(request, default_model),
        "messages": wire_messages(request.system, request.messages),
        "max_tokens": request.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            }
            for tool in request.tools
        ]
    return body


def wire_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text]
        if message.role == "assistant":
            calls = [_wire_call(b) for b in message.content if isinstance(b, ToolUseBlock)]
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                entry["tool_calls"] = calls
            if entry["content"] is None and not calls:
                continue
            wire.append(entry)
            continue
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                content = block.content
                if block.is_error:
                    content = TOOL_ERROR_PREFIX + content
                wire.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
        if not texts:
            continue
        text = "\n\n".join(texts)
        if wire and wire[-1]["role"] == "user":
            wire[-1]["content"] += "\n\n" + text
        else:
            wire.append({"role": "user", "content": text})
    return wire


def _wire_call(block: ToolUseBlock) -> dict[str, Any]:
    arguments = block.input if isinstance(block.input, str) else json.dumps(block.input)
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": arguments},
    }


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: str = ""
    # Some servers (Ollama) send the arguments already decoded, as an object.
    decoded: Any = None


@dataclass
class _ResponseBuilder:
    model: str
    text: str = ""
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)

    def feed(self, chunk: dict[str, Any], scrub: Callable[[str], str]) -> str:
        """Take one chunk; return its text delta (may be empty)."""
        if "error" in chunk:
            detail = scrub(_error_detail(json.dumps(chunk)))
            raise ProviderError(
                f"the server reported an error mid-stream: {detail}",
                hint="nothing of the partial answer was kept; send the request again",
            )
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self._take_usage(chunk["usage"])
        delta_text = ""
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text += content
                delta_text += content
            for call in delta.get("tool_calls") or []:
                self._take_call(call)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return delta_text

    def _take_call(self, call: dict[str, Any]) -> None:
        index = call.get("index")
        if not isinstance(index, int):
            # No index: a new id opens a new call, otherwise it continues the last one.
            known = {c.id for c in self.calls.values()}
            if (call.get("id") and call["id"] not in known) or not self.calls:
                index = len(self.calls)
            else:
                index = max(self.calls)
        slot = self.calls.setdefault(index, _Call())
        if call.get("id"):
            slot.id = str(call["id"])
        function = call.get("function") or {}
        if function.get("name"):
            slot.name += str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot.arguments += arguments
        elif arguments is not None:
            slot.decoded = arguments

    def _take_usage(self, usage: dict[str, Any]) -> None:
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        cached = cached if isinstance(cached, int) else 0
        if isinstance(prompt, int):
            self.usage.input_tokens = max(0, prompt - cached)
            self.usage.cache_read_input_tokens = cached
        if isinstance(completion, int):
            self.usage.output_tokens = completion

    def finish(self) -> ProviderResponse:
        if self.finish_reason is None:
            raise ProviderError(
                "the stream ended without a finish reason; the partial answer was dropped",
                hint="the server or a proxy closed the connection early; send the request again",
            )
        content: list[TextBlock | ToolUseBlock] = [TextBlock(self.text)] if self.text else []
        for index in sorted(self.calls):
            call = self.calls[index]
            # Ids must be unique across the conversation, so a missing one gets a fresh id.
            call_id = call.id or clock.new_id("call")
            content.append(ToolUseBlock(call_id, call.name, _arguments(call)))
        stop = _FINISH_REASONS.get(self.finish_reason, "end_turn")
        # Some servers say "stop" even when the answer is tool calls.
        if self.calls and stop == "end_turn":
            stop = "tool_use"
        return ProviderResponse(
            content=content, stop_reason=stop, usage=self.usage, model=self.model
        )


def _arguments(call: _Call) -> Any:
    if call.decoded is not None and not call.arguments:
        return call.decoded
    if not call.arguments.strip():
        return {}
    try:
        return json.loads(call.arguments)
    except ValueError:
        # Kept verbatim: the loop reports unparseable input back to the model.
        return call.arguments
