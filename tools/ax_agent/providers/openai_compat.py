"""Chat Completions with tools, streamed over httpx (imported lazily), for every chat profile.

For DeepSeek, Kimi, GLM, local servers (llama.cpp, vLLM, Ollama) and anything
else that speaks the same wire format; each server's deviations are data in
profiles.py. The base URL is the one such servers document for OpenAI clients,
usually ending in ``/v1``; requests go to ``<base>/chat/completions``.

Three mappings matter: the system prompt is the first message; every tool
result is its own ``tool`` message, placed before any user text of the same
turn, and consecutive user text coalesces into one message; and a stream that
ends with neither ``[DONE]`` nor a finish reason is a ``truncated`` error that
is never retried, never a final answer (a proxy's idle half-close would
otherwise pass a truncated sentence off as the model's last word).

What the catalog says of the model holds here as for the other providers: the
output asked for is clamped so input plus output fit its window
(``window.budget.output_cap``), and a tool result's images reach only a model
that takes images (``providers/images.py``). A ``tool`` message carries text
only, so the images follow the turn's tool messages in one user message; any
other model gets the pointer text in the tool message instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libcommon import clock

from ..window.budget import output_cap
from ..window.tokens import estimate_request
from .base import (
    AnswerBlock,
    ImagePart,
    Message,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    ReasoningBlock,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolSchema,
    ToolUseBlock,
    Usage,
    effective_model,
)
from .errors import ErrorKind, hint_for, kind_for_status, read_envelope, value_at
from .images import base64_data, pointer, takes_images
from .profiles import GENERIC, ChatProfile
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

# Kept for callers that name the generic profile's key variable.
API_KEY_VAR = GENERIC.key_var
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
    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        environ: Mapping[str, str],
        profile: ChatProfile = GENERIC,
    ) -> None:
        self.profile = profile
        self.name = profile.name
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.key_var = profile.key_var
        self._key = environ.get(profile.key_var, "").strip() if profile.key_var else ""
        if profile.key_required and not self._key:
            raise ProviderError(
                f"the {profile.name} provider needs an API key and {profile.key_var} is not set",
                hint=f"export {profile.key_var}=… (keys are read from the environment only)",
                kind="auth",
            )
        self.route = route(self.url, environ)
        # A base URL may carry credentials (user:password@host); messages show it redacted.
        self.shown_url = self.route.scrub(self.url)
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def complete(
        self,
        request: ProviderRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        abort: threading.Event | None = None,
    ) -> ProviderResponse:
        body = build_body(request, self.model, self.profile)
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
            return _chunks(response.iter_bytes(), self.profile), closer(response)

        builder = _ResponseBuilder(
            model=body["model"], profile=self.profile, requested=body["model"]
        )
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
                    ),
                    **self.route.client_options(),
                )
            return self._client

    def _scrub(self, text: str) -> str:
        if self._key:
            text = text.replace(self._key, "[REDACTED]")
        return self.route.scrub(text)

    def _error(self, message: str, kind: ErrorKind, retryable: bool | None = None) -> ProviderError:
        return ProviderError(
            self._scrub(message), hint=hint_for(kind, self.key_var), kind=kind, retryable=retryable
        )

    def _classify(self, exc: BaseException, mid_stream: bool) -> Failure:
        import httpx

        if isinstance(exc, ProviderError):  # raised while reading chunks: already worded
            exc.message = self._scrub(exc.message)
            exc.args = (exc.message,)
            return Failure(exc)
        if isinstance(exc, _HTTPStatus):
            message, code = error_envelope(exc.body, self.profile)
            kind = kind_for_status(exc.status, code, message)
            return Failure(
                self._error(
                    self.route.status_message(self.shown_url, exc.status, message),
                    kind,
                    retryable=False if exc.status == 407 else None,
                ),
                retry_after=parse_retry_after(exc.headers),
            )
        cause = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, httpx.TransportError) and not mid_stream:
            # A read timeout already waited READ_TIMEOUT_S; repeating it helps no one.
            kind = "timeout" if isinstance(exc, httpx.ReadTimeout) else "connection"
            return Failure(
                self._error(
                    f"cannot reach {self.shown_url} {self.route.described()}: {cause}", kind
                )
            )
        kind = "timeout" if isinstance(exc, httpx.ReadTimeout) else "truncated"
        return Failure(
            self._error(
                f"the stream from {self.shown_url} was interrupted before it was complete: {cause}",
                kind,
                retryable=False,
            )
        )


def error_envelope(body: str, profile: ChatProfile) -> tuple[str, str | None]:
    """The message and the type or code of an error body, read where ``profile`` says."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    return read_envelope(
        data,
        profile.error_message_paths,
        profile.error_code_paths,
        body.strip() or "(empty body)",
    )


def _chunks(body: Iterable[bytes], profile: ChatProfile) -> Iterator[dict[str, Any]]:
    """The JSON chunks of a Chat Completions stream; ``{"[DONE]": True}`` marks its end."""
    for event in iter_sse(body):
        if event.data.strip() == DONE_DATA:
            yield {DONE_DATA: True}
            return
        try:
            chunk = json.loads(event.data)
        except ValueError:
            raise ProviderError(
                f"the server sent a stream chunk that is not JSON: {event.data[:200]!r}",
                hint=hint_for("protocol", profile.key_var),
                kind="protocol",
            ) from None
        if isinstance(chunk, dict):
            yield chunk


def build_body(
    request: ProviderRequest, default_model: str, profile: ChatProfile = GENERIC
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions``."""
    model = effective_model(request, default_model)
    body: dict[str, Any] = {
        "model": model,
        "messages": wire_messages(request.system, request.messages, model, profile),
        profile.max_tokens_param: output_cap(model, request.max_tokens, estimate_request(request)),
        "stream": True,
    }
    if profile.include_usage:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [_wire_tool(tool, profile) for tool in request.tools]
    return body


def _wire_tool(tool: ToolSchema, profile: ChatProfile) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.input_schema,
    }
    if profile.strict_tools and strict_compatible(tool.input_schema):
        function["strict"] = True
    return {"type": "function", "function": function}


def strict_compatible(schema: object) -> bool:
    """Whether a JSON schema fits the strict subset: objects closed, every property required."""
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or []) != set(properties):
            return False
    return all(strict_compatible(value) for value in schema.values())


def wire_messages(
    system: str, messages: list[Message], model: str, profile: ChatProfile = GENERIC
) -> list[dict[str, Any]]:
    """Messages as Chat Completions takes them, for ``model`` through ``profile``.

    Text, tool calls and tool results go on the wire, and a tool result's images
    as the catalog allows (module docstring). Reasoning goes back only where the
    profile says the model needs it (``reasoning_replay="tool_loop"``): this
    adapter's own blocks for ``model``, on the assistant messages of the turn's
    tool loop, the messages after the last user message without tool results.
    """
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    turn_start = max(
        (
            n
            for n, m in enumerate(messages)
            if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content)
        ),
        default=0,
    )
    for position, message in enumerate(messages):
        texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text]
        if message.role == "assistant":
            calls = [_wire_call(b) for b in message.content if isinstance(b, ToolUseBlock)]
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                entry["tool_calls"] = calls
            if entry["content"] is None and not calls:
                continue
            if profile.reasoning_replay == "tool_loop" and position > turn_start:
                entry.update(_own_reasoning(message, profile.name, model))
            wire.append(entry)
            continue
        shown: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                content = block.content
                if block.is_error:
                    content = TOOL_ERROR_PREFIX + content
                if block.images and not takes_images(model):
                    content = "\n".join([content, *(pointer(i, model) for i in block.images)])
                elif block.images:
                    shown.extend(_image_parts(block.tool_use_id, block.images))
                wire.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
        if shown:
            wire.append({"role": "user", "content": shown})
        if not texts:
            continue
        text = "\n\n".join(texts)
        if wire and wire[-1]["role"] == "user":
            previous = wire[-1]["content"]
            if isinstance(previous, list):
                previous.append({"type": "text", "text": text})
            else:
                wire[-1]["content"] = previous + "\n\n" + text
        else:
            wire.append({"role": "user", "content": text})
    return wire


def _image_parts(call_id: str, images: tuple[ImagePart, ...]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for image in images:
        parts.append({"type": "text", "text": f"[ax: {image.source}, from tool call {call_id}]"})
        url = f"data:{image.media_type};base64,{base64_data(image)}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _own_reasoning(message: Message, provider: str, model: str) -> dict[str, str]:
    """The reasoning fields of ``message`` that this profile made for ``model``, joined."""
    fields: dict[str, str] = {}
    for block in message.content:
        if replayable(block, provider, model):
            for name, value in block.data.items():
                if isinstance(value, str):
                    fields[name] = fields.get(name, "") + value
    return fields


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
    profile: ChatProfile = GENERIC
    # The model the request named: reasoning goes back only to it.
    requested: str = ""
    text: str = ""
    # Reasoning text by delta field, kept only when the profile replays it.
    reasoning: dict[str, str] = field(default_factory=dict)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    done: bool = False
    usage: Usage = field(default_factory=Usage)

    def feed(self, chunk: dict[str, Any], scrub: Callable[[str], str]) -> str:
        """Take one chunk; return its text delta (may be empty)."""
        if chunk.get(DONE_DATA) is True:
            self.done = True
            return ""
        if "error" in chunk:
            message, code = error_envelope(json.dumps(chunk), self.profile)
            kind = kind_for_status(200, code, message)
            raise ProviderError(
                f"the server reported an error mid-stream: {scrub(message)}",
                hint=hint_for("truncated", self.profile.key_var),
                kind=kind,
                retryable=False,
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
            if self.profile.reasoning_replay == "tool_loop":
                for name in self.profile.reasoning_fields:
                    piece = delta.get(name)
                    if isinstance(piece, str) and piece:
                        self.reasoning[name] = self.reasoning.get(name, "") + piece
            for call in delta.get("tool_calls") or []:
                self._take_call(call)
            if self.profile.usage_in_choice and isinstance(choice.get("usage"), dict):
                self._take_usage(choice["usage"])
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
        cached = next(
            (
                v
                for p in self.profile.cached_tokens_paths
                if isinstance(v := value_at(usage, p), int)
            ),
            0,
        )
        if isinstance(prompt, int):
            self.usage.input_tokens = max(0, prompt - cached)
            self.usage.cache_read_input_tokens = cached
        if isinstance(completion, int):
            self.usage.output_tokens = completion

    def finish(self) -> ProviderResponse:
        if self.finish_reason is None and not self.done:
            raise ProviderError(
                "the stream ended with neither [DONE] nor a finish reason; "
                "the partial answer was dropped",
                hint="the server or a proxy closed the connection early; send the request again",
                kind="truncated",
                retryable=False,
            )
        failed = self.profile.error_finish_reasons.get(self.finish_reason or "")
        if failed is not None:
            raise ProviderError(
                f"the server ended the answer with finish reason {self.finish_reason!r}; "
                "the partial answer was dropped",
                hint=hint_for(failed, self.profile.key_var),
                kind=failed,
                retryable=False,
            )
        content: list[AnswerBlock] = []
        if self.reasoning:
            # Not ciphertext: the log redacts it like text (a changed block is not replayed).
            content.append(ReasoningBlock(self.profile.name, self.requested, dict(self.reasoning)))
        if self.text:
            content.append(TextBlock(self.text))
        for index in sorted(self.calls):
            call = self.calls[index]
            # Ids must be unique across the conversation, so a missing one gets a fresh id.
            call_id = call.id or clock.new_id("call")
            content.append(ToolUseBlock(call_id, call.name, _arguments(call)))
        reason = self.finish_reason or "stop"
        stop = _FINISH_REASONS.get(reason) or self.profile.extra_finish_reasons.get(
            reason, "end_turn"
        )
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
