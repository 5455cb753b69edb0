"""OpenAI through the Responses API, streamed over httpx (imported lazily).

Not Chat Completions: reasoning items can be handed back to the model only
through the Responses API. Every request is ``store: false``, so OpenAI keeps
no conversation and the harness stays stateless; each request carries the
whole conversation as input items (messages, ``function_call`` and
``function_call_output`` items).

The stream's deltas are shown as they arrive, but the answer is the terminal
event's payload (``response.completed`` or ``response.incomplete``): its
``output`` is authoritative over whatever the deltas added up to. A stream that
reports ``response.failed`` or an ``error`` event, or that ends without a
terminal event, is an error; nothing of it becomes a turn.

It shares what every network provider shares: the SSE parser and the
connection-phase retries (streaming.py), the error taxonomy (errors.py), and
the route its httpx client is built from (transport.py). An ``error`` event is
raised where it is read, so one that opens the stream is still in the
connection phase and retried when its kind is transient, like an HTTP error.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libcommon import clock
from libcommon.errors import UsageError
from libcommon.redact import redact

from ..window.budget import output_cap
from ..window.catalog import model_limits
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
from .errors import ErrorKind, hint_for, kind_for_status, read_envelope
from .images import base64_data, pointer, takes_images
from .profiles import OPENAI_ERROR_CODE, OPENAI_ERROR_MESSAGE
from .reasoning import replayable
from .streaming import (
    CONNECT_TIMEOUT_S,
    DONE_DATA,
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
    import httpx

PROVIDER_NAME = "openai"
DEFAULT_OPENAI_MODEL = "gpt-5"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
API_KEY_VAR = "OPENAI_API_KEY"
BASE_URL_VAR = "OPENAI_BASE_URL"
# Prefixed to a failed tool result: function_call_output has no error flag.
TOOL_ERROR_PREFIX = "ERROR: "
# A reasoning item's ciphertext: without it a stateless request cannot send the item back.
ENCRYPTED_FIELD = "encrypted_content"

# Why a response stopped early (response.incomplete), as the contract says it.
_INCOMPLETE_REASONS: dict[str, StopReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "refusal",
}
_TERMINAL = ("response.completed", "response.incomplete")


class _HTTPStatus(Exception):
    def __init__(self, status: int, body: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.headers = headers


class _StreamError(Exception):
    """An ``error`` or ``response.failed`` event in a 200 stream: its error says the kind."""

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(str(event.get("type")))
        self.failed = event.get("type") == "response.failed"
        # response.failed keeps its error in the response; an error event is the error.
        self.error = _failed_error(event) if self.failed else event


class OpenAIResponsesProvider:
    name = PROVIDER_NAME

    def __init__(self, *, model: str | None, environ: Mapping[str, str]) -> None:
        key = environ.get(API_KEY_VAR, "").strip()
        if not key:
            raise ProviderError(
                f"the openai provider needs an API key and {API_KEY_VAR} is not set",
                hint=f"export {API_KEY_VAR}=… (keys are read from the environment only)",
                kind="auth",
            )
        base_url = environ.get(BASE_URL_VAR, "").strip() or DEFAULT_OPENAI_BASE_URL
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"{BASE_URL_VAR} must start with http:// or https://: {redact(base_url)!r}"
            )
        self.model = model or DEFAULT_OPENAI_MODEL
        self.key_var = API_KEY_VAR
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/responses"
        self.route = route(self.url, environ)
        # A base URL may carry credentials (user:password@host); messages show it redacted.
        self.shown_url = self.route.scrub(self.url)
        self._key = key
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
        headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {self._key}"}
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
            return _events(response.iter_bytes()), closer(response)

        builder = _ResponseBuilder(model=body["model"], requested=body["model"])
        for event in stream_events(start, self._classify, abort):
            text = builder.feed(event)
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
                    ),
                    **self.route.client_options(),
                )
            return self._client

    def _scrub(self, text: str) -> str:
        return self.route.scrub(text.replace(self._key, "[REDACTED]"))

    def _error(self, message: str, kind: ErrorKind, retryable: bool | None = None) -> ProviderError:
        return ProviderError(
            self._scrub(message), hint=hint_for(kind, API_KEY_VAR), kind=kind, retryable=retryable
        )

    def _classify(self, exc: BaseException, mid_stream: bool) -> Failure:
        import httpx

        if isinstance(exc, ProviderError):  # raised while reading events: already worded
            exc.message = self._scrub(exc.message)
            exc.args = (exc.message,)
            return Failure(exc)
        if isinstance(exc, _StreamError):
            detail, code = _envelope(exc.error, "(no message)")
            what = "the OpenAI response failed" if exc.failed else "the OpenAI stream failed"
            return Failure(
                self._error(
                    f"{what}: {_coded(detail, code)}",
                    kind_for_status(200, code, detail),
                    retryable=False if mid_stream else None,
                )
            )
        if isinstance(exc, _HTTPStatus):
            try:
                data = json.loads(exc.body)
            except ValueError:
                data = None
            detail, code = _envelope(data, exc.body.strip() or "(empty body)")
            return Failure(
                self._error(
                    "the OpenAI Responses API failed: "
                    + self.route.status_message(self.shown_url, exc.status, _coded(detail, code)),
                    kind_for_status(exc.status, code, detail),
                    retryable=False if exc.status == 407 else None,
                ),
                retry_after=parse_retry_after(exc.headers),
            )
        cause = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, httpx.TransportError) and not mid_stream:
            # A read timeout already waited READ_TIMEOUT_S; repeating it helps no one.
            kind: ErrorKind = "timeout" if isinstance(exc, httpx.ReadTimeout) else "connection"
            return Failure(
                self._error(
                    f"cannot reach {self.shown_url} {self.route.described()}: {cause}", kind
                )
            )
        return Failure(
            self._error(
                f"the stream from {self.shown_url} was interrupted before the response was "
                f"complete: {cause}",
                "timeout" if isinstance(exc, httpx.ReadTimeout) else "truncated",
                retryable=False,
            )
        )


def _failed_error(event: dict[str, Any]) -> object:
    response = event.get("response")
    return response.get("error") if isinstance(response, dict) else None


def _envelope(data: object, fallback: str) -> tuple[str, str | None]:
    """The message and code of an error body, an ``error`` event or a failed response's error."""
    return read_envelope(
        data, (("message",), *OPENAI_ERROR_MESSAGE), (("code",), *OPENAI_ERROR_CODE), fallback
    )


def _coded(message: str, code: str | None) -> str:
    return f"{code}: {message}" if code else message


def _events(body: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON events of a Responses stream (each carries its own ``type``)."""
    for sse_event in iter_sse(body):
        if sse_event.data.strip() == DONE_DATA:
            return
        try:
            event = json.loads(sse_event.data)
        except ValueError:
            raise ProviderError(
                f"the OpenAI stream sent an event that is not JSON: {sse_event.data[:200]!r}",
                hint=hint_for("protocol", API_KEY_VAR),
                kind="protocol",
            ) from None
        if not isinstance(event, dict):
            continue
        if event.get("type") in ("error", "response.failed") or sse_event.event == "error":
            raise _StreamError(event)
        yield event


def build_body(request: ProviderRequest, default_model: str) -> dict[str, Any]:
    """The JSON body of ``POST /responses``."""
    model = effective_model(request, default_model)
    body: dict[str, Any] = {
        "model": model,
        "input": wire_input(request.messages, model),
        "max_output_tokens": output_cap(model, request.max_tokens, estimate_request(request)),
        "stream": True,
        # Stateless: OpenAI keeps nothing.
        "store": False,
    }
    if model_limits(model).reasoning != "none":
        # Reasoning comes back encrypted, so it can be sent back. Asked only of the
        # models the catalog says reason: an uncatalogued model is not assumed to.
        body["include"] = ["reasoning.encrypted_content"]
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
                # Strict mode (the default here) rejects schemas with optional fields.
                "strict": False,
            }
            for tool in request.tools
        ]
    return body


def wire_input(messages: list[Message], model: str) -> list[dict[str, Any]]:
    """The conversation as Responses input items, in order.

    A user message's tool results come first, each its own ``function_call_output``,
    then its text. An assistant message's blocks keep the order the model gave
    them, which puts its reasoning at the head: a reasoning item must come just
    before the item it led to. Only reasoning this provider made for ``model``
    goes back, verbatim; other reasoning stays out of the request.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text]
        if message.role == "assistant":
            items.extend(_assistant_items(message, model))
            continue
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": block.tool_use_id,
                        "output": _result_output(block, model),
                    }
                )
        if texts:
            items.append({"type": "message", "role": "user", "content": "\n\n".join(texts)})
    return items


def _result_output(block: ToolResultBlock, model: str) -> str | list[dict[str, Any]]:
    text = TOOL_ERROR_PREFIX + block.content if block.is_error else block.content
    if not block.images:
        return text
    if not takes_images(model):
        return "\n".join([text, *(pointer(image, model) for image in block.images)])
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}]
    for image in block.images:
        url = f"data:{image.media_type};base64,{base64_data(image)}"
        parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return parts


def _assistant_items(message: Message, model: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in message.content:
        if replayable(block, PROVIDER_NAME, model):
            if isinstance(block.data.get(ENCRYPTED_FIELD), str):
                items.append(dict(block.data))
        elif isinstance(block, TextBlock) and block.text:
            last = items[-1] if items else None
            if last is not None and last.get("type") == "message":
                last["content"] += block.text
            else:
                items.append({"type": "message", "role": "assistant", "content": block.text})
        elif isinstance(block, ToolUseBlock):
            items.append(_wire_call(block))
    return items


def _wire_call(block: ToolUseBlock) -> dict[str, Any]:
    arguments = block.input if isinstance(block.input, str) else json.dumps(block.input)
    return {
        "type": "function_call",
        "call_id": block.id,
        "name": block.name,
        "arguments": arguments,
    }


@dataclass
class _ResponseBuilder:
    """Shows the deltas; keeps the finished items and the terminal payload."""

    model: str
    # The model the request named: reasoning goes back only to it.
    requested: str = ""
    # Output items by output_index: as added and grown by deltas, then as done.
    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    terminal: dict[str, Any] | None = None
    terminal_kind: str = ""

    def feed(self, event: dict[str, Any]) -> str:
        """Take one event; return the text it adds (may be empty).

        Failures never reach here: ``_events`` raises them where they are read.
        """
        kind = event.get("type")
        index = event.get("output_index")
        delta = event.get("delta")
        if kind == "response.output_text.delta" and isinstance(delta, str):
            return delta
        if kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            item = self.items.get(index) if isinstance(index, int) else None
            if item is not None and item.get("type") == "function_call":
                item["arguments"] = str(item.get("arguments") or "") + delta
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = event.get("item")
            if isinstance(item, dict) and isinstance(index, int):
                self.items[index] = dict(item)
        elif kind in _TERMINAL:
            response = event.get("response")
            if not isinstance(response, dict):
                raise ProviderError(
                    f"the OpenAI stream's {kind} event carries no response",
                    hint=hint_for("protocol", API_KEY_VAR),
                    kind="protocol",
                    retryable=False,
                )
            self.terminal, self.terminal_kind = response, str(kind)
        return ""

    def finish(self) -> ProviderResponse:
        if self.terminal is None:
            raise ProviderError(
                "the OpenAI stream ended without response.completed; "
                "the partial answer was dropped",
                hint="the server or a proxy closed the connection early; send the request again",
                kind="truncated",
                retryable=False,
            )
        response = self.terminal
        output = response.get("output")
        items = (
            [item for item in output if isinstance(item, dict)]
            if isinstance(output, list)
            else [self.items[index] for index in sorted(self.items)]
        )
        content: list[AnswerBlock] = []
        refused = False
        for item in items:
            kind = item.get("type")
            if kind == "reasoning":
                content.append(
                    ReasoningBlock(PROVIDER_NAME, self.requested, item, (ENCRYPTED_FIELD,))
                )
            elif kind == "message":
                for part in item.get("content") or []:
                    if not isinstance(part, dict):
                        continue
                    if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                        content.append(TextBlock(part["text"]))
                    elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                        content.append(TextBlock(part["refusal"]))
                        refused = True
            elif kind == "function_call":
                # Ids must be unique across the conversation, so a missing one gets a fresh id.
                call_id = str(item.get("call_id") or clock.new_id("call"))
                content.append(ToolUseBlock(call_id, str(item.get("name", "")), _arguments(item)))
        content = [
            block for block in content if not (isinstance(block, TextBlock) and not block.text)
        ]
        model = response.get("model")
        return ProviderResponse(
            content=content,
            stop_reason=self._stop_reason(response, content, refused),
            usage=_usage(response.get("usage")),
            model=model if isinstance(model, str) and model else self.model,
        )

    def _stop_reason(
        self, response: dict[str, Any], content: list[AnswerBlock], refused: bool
    ) -> StopReason:
        if self.terminal_kind == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            return _INCOMPLETE_REASONS.get(str(reason), "max_tokens")
        if refused:
            return "refusal"
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"


def _arguments(item: dict[str, Any]) -> Any:
    arguments = item.get("arguments")
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        # Kept verbatim: the loop reports unparseable input back to the model.
        return arguments


def _usage(raw: object) -> Usage:
    usage = Usage()
    if not isinstance(raw, dict):
        return usage
    details = raw.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    cached = cached if isinstance(cached, int) else 0
    if isinstance(raw.get("input_tokens"), int):
        # The API counts cached input inside input_tokens; the contract counts it apart.
        usage.input_tokens = max(0, raw["input_tokens"] - cached)
        usage.cache_read_input_tokens = cached
    if isinstance(raw.get("output_tokens"), int):
        usage.output_tokens = raw["output_tokens"]
    return usage
