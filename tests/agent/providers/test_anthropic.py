"""The anthropic provider: the real SDK against a fake Messages API on loopback."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from agent.providers.fakes import (
    FakeServer,
    Reply,
    anthropic_error,
    anthropic_text_reply,
    message_end,
    message_start,
    sse,
    text_block,
    tool_block,
)

from ax_agent.providers import (
    ContentBlock,
    Message,
    ProviderAborted,
    ProviderError,
    ProviderRequest,
    TextBlock,
    ToolResultBlock,
    ToolSchema,
    ToolUseBlock,
    make_provider,
    streaming,
)
from ax_agent.providers.anthropic import AnthropicProvider

KEY = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789"
TOOLS = [
    ToolSchema(
        "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
    ),
    ToolSchema("list_dir", "List a folder", {"type": "object", "properties": {}}),
]


def provider(server: FakeServer, **env: str) -> AnthropicProvider:
    environ = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url, **env}
    made = make_provider(
        "anthropic", model="claude-test", base_url=None, script=None, environ=environ
    )
    assert isinstance(made, AnthropicProvider)
    return made


def request(
    messages: list[Message] | None = None,
    system: str = "You are terse.",
    tools: list[ToolSchema] = TOOLS,
) -> ProviderRequest:
    return ProviderRequest(
        system=system,
        messages=messages or [Message("user", [TextBlock("hello")])],
        tools=tools,
        model="claude-test",
        max_tokens=256,
    )


def cache_marks(body: dict[str, Any]) -> list[str]:
    """Where cache_control appears in a request body, as readable paths."""
    found = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                assert value["cache_control"] == {"type": "ephemeral"}
                found.append(path)
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")

    walk(body, "")
    return sorted(found)


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "BACKOFF_BASE_S", 0.01)


def test_text_streams_in_order_and_usage_is_recorded(server: FakeServer) -> None:
    server.plan(
        Reply(
            chunks=[
                message_start(
                    input_tokens=11, cache_creation_input_tokens=100, cache_read_input_tokens=40
                ),
                *text_block(0, ["Hel", "lo, ", "world"]),
                *message_end("end_turn", output_tokens=9),
            ]
        )
    )
    seen: list[str] = []
    response = provider(server).complete(request(), on_text=seen.append)
    assert seen == ["Hel", "lo, ", "world"]
    assert response.content == [TextBlock("Hello, world")]
    assert response.stop_reason == "end_turn"
    assert response.model == "claude-fake"
    assert (
        response.usage.input_tokens,
        response.usage.output_tokens,
        response.usage.cache_creation_input_tokens,
        response.usage.cache_read_input_tokens,
    ) == (11, 9, 100, 40)
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    # The key from the environment mapping reached the server (this SDK sends it as a bearer).
    assert KEY in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert sent.body["stream"] is True
    assert sent.body["model"] == "claude-test"
    assert sent.body["max_tokens"] == 256


def test_tool_use_round_trip(server: FakeServer) -> None:
    server.plan(
        Reply(
            chunks=[
                message_start(),
                *text_block(0, ["Let me look."]),
                *tool_block(1, "toolu_01", "read_file", ['{"pa', 'th": "src/', 'a.py"}']),
                *tool_block(2, "toolu_02", "list_dir", []),
                *tool_block(3, "toolu_03", "read_file", ['{"path": ']),
                *message_end("tool_use"),
            ]
        ),
        anthropic_text_reply(["Done."]),
    )
    chosen = provider(server)
    first = chosen.complete(request())
    assert first.stop_reason == "tool_use"
    assert first.content == [
        TextBlock("Let me look."),
        ToolUseBlock("toolu_01", "read_file", {"path": "src/a.py"}),
        ToolUseBlock("toolu_02", "list_dir", {}),
        # Input that does not parse is kept verbatim for the loop to report.
        ToolUseBlock("toolu_03", "read_file", '{"path": '),
    ]
    results: list[ContentBlock] = [
        ToolResultBlock("toolu_01", "1\tprint('a')"),
        ToolResultBlock("toolu_02", "a.py"),
        ToolResultBlock("toolu_03", "input is not JSON", is_error=True),
    ]
    history = [
        Message("user", [TextBlock("what is in a.py?")]),
        Message("assistant", list(first.content)),
        Message("user", results),
    ]
    second = chosen.complete(request(history))
    assert second.text == "Done."
    wire = server.requests[1].body["messages"]
    assert wire[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "read_file",
                "input": {"path": "src/a.py"},
            },
            {"type": "tool_use", "id": "toolu_02", "name": "list_dir", "input": {}},
            # The API takes only objects: the raw string travels inside one.
            {
                "type": "tool_use",
                "id": "toolu_03",
                "name": "read_file",
                "input": {"input": '{"path": '},
            },
        ],
    }
    assert [b["type"] for b in wire[2]["content"]] == ["tool_result"] * 3
    assert wire[2]["content"][2]["is_error"] is True
    assert "is_error" not in wire[2]["content"][0]


def test_two_cache_breakpoints_and_coalesced_user_messages(server: FakeServer) -> None:
    server.plan(
        anthropic_text_reply(["ok"]), anthropic_text_reply(["ok"]), anthropic_text_reply(["ok"])
    )
    history = [
        Message("user", [TextBlock("first")]),
        Message("assistant", [ToolUseBlock("toolu_1", "list_dir", {})]),
        Message("user", [ToolResultBlock("toolu_1", "a.py")]),
        # An aborted turn leaves a second user message right behind the first.
        Message("user", [TextBlock("")]),
        Message("user", [TextBlock("and now?")]),
    ]
    chosen = provider(server)
    chosen.complete(request(history))
    body = server.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"},
        {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
    ]
    # Exactly two: the stable prefix (system covers the tools before it) and the last block.
    assert cache_marks(body) == ["messages[2].content[1]", "system[0]"]
    # The caller's messages are not changed by marking the wire copy.
    assert history[4].content == [TextBlock("and now?")]

    # No system prompt: the prefix mark moves to the last tool definition.
    chosen.complete(request(history, system=""))
    body = server.requests[1].body
    assert "system" not in body
    assert cache_marks(body) == ["messages[2].content[1]", "tools[1]"]

    # A user text message before tool results is reordered: the API wants results first.
    chosen.complete(
        request(
            [
                Message("user", [TextBlock("go")]),
                Message("assistant", [ToolUseBlock("toolu_1", "list_dir", {})]),
                Message("user", [TextBlock("(note)")]),
                Message("user", [ToolResultBlock("toolu_1", "x")]),
            ]
        )
    )
    last = server.requests[2].body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert len(cache_marks(server.requests[2].body)) == 2


def test_interrupted_stream_is_an_error_not_an_answer(server: FakeServer) -> None:
    # The transfer is cut mid-answer, before message_delta and message_stop.
    server.plan(Reply(chunks=[message_start(), *text_block(0, ["The answer is"])[:2]], cut=True))
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request(), on_text=seen.append)
    assert seen == ["The answer is"]  # it was shown while streaming …
    assert "interrupted" in caught.value.message  # … but not returned as a final answer
    assert caught.value.retryable is False
    assert len(server.requests) == 1  # never retried once the stream had started


def test_stream_that_ends_cleanly_without_message_stop_is_an_error(server: FakeServer) -> None:
    server.plan(Reply(chunks=[message_start(), *text_block(0, ["half a sent"])]))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert "without message_stop" in caught.value.message


def test_mid_stream_error_event_is_not_retried(server: FakeServer) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.plan(Reply(chunks=[message_start(), *text_block(0, ["Hi"]), sse("error", error)]))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert "Overloaded" in caught.value.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [529, 503, 429])
def test_retryable_status_is_retried_once_then_succeeds(server: FakeServer, status: int) -> None:
    server.plan(
        anthropic_error(status, "overloaded_error", "Overloaded", **{"retry-after": "0"}),
        anthropic_text_reply(["second time lucky"]),
    )
    response = provider(server).complete(request())
    assert response.text == "second time lucky"
    assert len(server.requests) == 2


def test_retries_are_bounded(server: FakeServer) -> None:
    server.plan(*(anthropic_error(529, "overloaded_error", "Overloaded") for _ in range(5)))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert len(server.requests) == streaming.MAX_ATTEMPTS == 3
    assert caught.value.retryable is True
    assert "after 3 attempts" in caught.value.message
    assert "Overloaded" in caught.value.message


def test_a_long_retry_after_is_not_waited_for(server: FakeServer) -> None:
    server.plan(anthropic_error(429, "rate_limit_error", "Slow down", **{"retry-after": "3600"}))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert time.monotonic() - started < 2
    assert len(server.requests) == 1
    assert caught.value.retryable is True
    assert "wait 3600 s" in caught.value.message


def test_retry_after_is_honoured(server: FakeServer) -> None:
    server.plan(
        anthropic_error(529, "overloaded_error", "Overloaded", **{"retry-after-ms": "300"}),
        anthropic_text_reply(["ok"]),
    )
    started = time.monotonic()
    provider(server).complete(request())
    assert time.monotonic() - started >= 0.3
    assert len(server.requests) == 2


def test_bad_request_is_not_retried_and_hides_the_key(server: FakeServer) -> None:
    # A server that echoes the credential back must not get it into the error text.
    server.plan(anthropic_error(400, "invalid_request_error", f"bad request from key {KEY}"))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert len(server.requests) == 1
    error = caught.value
    assert error.retryable is False
    assert "400" in error.message and "bad request" in error.message
    assert KEY not in f"{error.message} {error.hint} {error!s} {error!r}"


def test_unauthorised_hints_at_the_key_variable(server: FakeServer) -> None:
    server.plan(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert caught.value.hint is not None and "ANTHROPIC_API_KEY" in caught.value.hint
    assert len(server.requests) == 1


def test_unreachable_server_is_retried_then_named(server: FakeServer) -> None:
    closed = FakeServer()
    url = closed.url
    closed.close()
    chosen = provider(server, ANTHROPIC_BASE_URL=url)
    with pytest.raises(ProviderError) as caught:
        chosen.complete(request())
    assert caught.value.retryable is True
    assert url in caught.value.message
    assert KEY not in caught.value.message


def test_abort_during_a_hanging_stream_returns_promptly(server: FakeServer) -> None:
    server.plan(Reply(chunks=[message_start(), *text_block(0, ["thinking"])[:2]], hang=True))
    abort = threading.Event()
    seen: list[str] = []

    def on_text(text: str) -> None:
        # The stream is now hanging after its first words; abort a moment later.
        seen.append(text)
        threading.Timer(0.2, abort.set).start()

    started = time.monotonic()
    with pytest.raises(ProviderAborted):
        provider(server).complete(request(), on_text=on_text, abort=abort)
    assert time.monotonic() - started < 1.0
    assert server.hung.is_set()
    assert seen == ["thinking"]
    # Closing the response wakes the reader thread; it does not linger until a timeout.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and any(
        t.name == "ax-provider-stream" for t in threading.enumerate()
    ):
        time.sleep(0.02)
    assert not any(t.name == "ax-provider-stream" for t in threading.enumerate())


def test_abort_before_the_call_sends_nothing(server: FakeServer) -> None:
    abort = threading.Event()
    abort.set()
    with pytest.raises(ProviderAborted):
        provider(server).complete(request(), abort=abort)
    assert server.requests == []


def test_missing_key_is_a_provider_error_naming_the_variable() -> None:
    with pytest.raises(ProviderError) as caught:
        make_provider("anthropic", model=None, base_url=None, script=None, environ={})
    assert caught.value.hint is not None and "ANTHROPIC_API_KEY" in caught.value.hint


def test_base_url_comes_from_the_environment_only(server: FakeServer) -> None:
    from libcommon.errors import UsageError

    with pytest.raises(UsageError) as caught:
        make_provider(
            "anthropic",
            model=None,
            base_url=server.url,
            script=None,
            environ={"ANTHROPIC_API_KEY": KEY},
        )
    assert "ANTHROPIC_BASE_URL" in (caught.value.hint or "")


def test_request_body_has_no_key(server: FakeServer) -> None:
    server.plan(anthropic_text_reply(["ok"]))
    provider(server).complete(request())
    assert KEY not in json.dumps(server.requests[0].body)


def test_overloaded_as_the_first_stream_event_is_retried(server: FakeServer) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.plan(Reply(chunks=[sse("error", error)]), anthropic_text_reply(["ok"]))
    assert provider(server).complete(request()).text == "ok"
    assert len(server.requests) == 2


def test_a_silent_server_times_out_without_retry(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_agent.providers import anthropic as anthropic_provider

    monkeypatch.setattr(anthropic_provider, "READ_TIMEOUT_S", 0.3)
    server.plan(Reply(hang=True))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert time.monotonic() - started < 3
    assert "Timeout" in caught.value.message
    assert caught.value.retryable is False
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("raw", "tools", "expected"),
    [
        ("model_context_window_exceeded", False, "max_tokens"),
        ("pause_turn", False, "end_turn"),
        ("pause_turn", True, "tool_use"),
        ("refusal", False, "refusal"),
        ("stop_sequence", False, "stop_sequence"),
    ],
)
def test_stop_reasons_are_normalised(
    server: FakeServer, raw: str, tools: bool, expected: str
) -> None:
    blocks = tool_block(1, "toolu_1", "list_dir", ["{}"]) if tools else []
    server.plan(Reply(chunks=[message_start(), *text_block(0, ["x"]), *blocks, *message_end(raw)]))
    assert provider(server).complete(request()).stop_reason == expected
