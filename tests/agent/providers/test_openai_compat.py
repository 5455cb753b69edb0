"""The openai-compatible provider: httpx against a fake Chat Completions server on loopback."""

from __future__ import annotations

import json
import threading
import time

import pytest
from agent.providers.fakes import DONE, FakeServer, Reply, chunk, openai_error, openai_text_reply

from ax_agent.providers import (
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
from ax_agent.providers.openai_compat import OpenAICompatProvider
from libcommon.errors import UsageError

KEY = "sk-proj-FAKEfakeFAKEfake0123456789abcdef"
TOOLS = [
    ToolSchema(
        "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
]


def provider(server: FakeServer, key: str | None = KEY) -> OpenAICompatProvider:
    environ = {"OPENAI_API_KEY": key} if key else {}
    made = make_provider(
        "openai-compatible",
        model="qwen-test",
        base_url=f"{server.url}/v1/",
        script=None,
        environ=environ,
    )
    assert isinstance(made, OpenAICompatProvider)
    return made


def request(messages: list[Message] | None = None, system: str = "Be brief.") -> ProviderRequest:
    return ProviderRequest(
        system=system,
        messages=messages or [Message("user", [TextBlock("hello")])],
        tools=TOOLS,
        model="",
        max_tokens=128,
    )


def call_delta(index: int, **fields: object) -> dict[str, object]:
    return {"tool_calls": [{"index": index, **fields}]}


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "BACKOFF_BASE_S", 0.01)


def test_text_streams_in_order_with_usage(server: FakeServer) -> None:
    server.plan(openai_text_reply(["Hel", "lo", " there"]))
    seen: list[str] = []
    response = provider(server).complete(request(), on_text=seen.append)
    assert seen == ["Hel", "lo", " there"]
    assert response.content == [TextBlock("Hello there")]
    assert response.stop_reason == "end_turn"
    assert response.model == "local-fake"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 4)
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "qwen-test"  # the provider's model when the request names none
    assert sent.body["stream"] is True
    assert sent.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": TOOLS[0].input_schema,
            },
        }
    ]


def test_no_key_sends_no_authorization(server: FakeServer) -> None:
    server.plan(openai_text_reply(["ok"]))
    provider(server, key=None).complete(request())
    assert "authorization" not in server.requests[0].headers


def test_tool_calls_accumulate_by_index_and_round_trip(server: FakeServer) -> None:
    server.plan(
        Reply(
            chunks=[
                chunk({"role": "assistant", "content": "Checking."}),
                chunk(
                    call_delta(
                        0,
                        id="call_a",
                        type="function",
                        function={"name": "read_file", "arguments": ""},
                    )
                ),
                chunk(
                    call_delta(
                        1,
                        id="call_b",
                        type="function",
                        function={"name": "read_file", "arguments": '{"pa'},
                    )
                ),
                chunk(call_delta(0, function={"arguments": '{"path": '})),
                chunk(call_delta(1, function={"arguments": 'th": "b.py"}'})),
                chunk(call_delta(0, function={"arguments": '"a.py"}'})),
                chunk(
                    call_delta(
                        2, id="call_c", function={"name": "read_file", "arguments": "{not json"}
                    )
                ),
                chunk(
                    call_delta(
                        3,
                        id="call_d",
                        function={"name": "read_file", "arguments": '"{\\"path\\": \\"d\\"}"'},
                    )
                ),
                chunk({}, "tool_calls"),
                DONE,
            ]
        ),
        openai_text_reply(["All read."]),
    )
    chosen = provider(server)
    first = chosen.complete(request())
    assert first.stop_reason == "tool_use"
    assert first.content == [
        TextBlock("Checking."),
        ToolUseBlock("call_a", "read_file", {"path": "a.py"}),
        ToolUseBlock("call_b", "read_file", {"path": "b.py"}),
        ToolUseBlock("call_c", "read_file", "{not json"),  # kept raw for the loop to report
        ToolUseBlock("call_d", "read_file", '{"path": "d"}'),  # a JSON string, decoded once
    ]
    history = [
        Message("user", [TextBlock("read them")]),
        Message("assistant", list(first.content)),
        Message(
            "user",
            [
                ToolResultBlock("call_a", "A"),
                ToolResultBlock("call_b", "B"),
                ToolResultBlock("call_c", "arguments are not JSON", is_error=True),
                ToolResultBlock("call_d", "D"),
                TextBlock("also, be quick"),
            ],
        ),
        Message("user", [TextBlock("please")]),
    ]
    second = chosen.complete(request(history))
    assert second.text == "All read."
    wire = server.requests[1].body["messages"]
    assert wire[2] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
            },
            {
                "id": "call_c",
                "type": "function",
                "function": {"name": "read_file", "arguments": "{not json"},
            },
            {
                "id": "call_d",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "d"}'},
            },
        ],
    }
    # Each result is its own tool message, before the user text; user texts coalesce.
    assert wire[3:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "A"},
        {"role": "tool", "tool_call_id": "call_b", "content": "B"},
        {"role": "tool", "tool_call_id": "call_c", "content": "ERROR: arguments are not JSON"},
        {"role": "tool", "tool_call_id": "call_d", "content": "D"},
        {"role": "user", "content": "also, be quick\n\nplease"},
    ]


def test_arguments_sent_as_an_object_and_missing_ids(server: FakeServer) -> None:
    # Some servers send decoded arguments and no call id.
    server.plan(
        Reply(
            chunks=[
                chunk(
                    {
                        "tool_calls": [
                            {"function": {"name": "read_file", "arguments": {"path": "x"}}}
                        ]
                    }
                ),
                chunk({}, "stop"),  # and call it "stop" although the answer is a tool call
                DONE,
            ]
        )
    )
    response = provider(server).complete(request())
    assert response.stop_reason == "tool_use"
    (call,) = response.tool_uses
    assert call.input == {"path": "x"}
    assert call.id.startswith("call")


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("length", "max_tokens"), ("content_filter", "refusal"), ("stop", "end_turn")],
)
def test_finish_reasons_are_normalised(server: FakeServer, finish: str, expected: str) -> None:
    server.plan(openai_text_reply(["x"], finish=finish))
    assert provider(server).complete(request()).stop_reason == expected


def test_utf8_split_across_chunks_and_keepalive_comments(server: FakeServer) -> None:
    body = chunk({"content": "café ☕"})
    cut = body.index("☕".encode()) + 1
    server.plan(
        Reply(chunks=[b": keep-alive\n\n", body[:cut], body[cut:], chunk({}, "stop"), DONE])
    )
    assert provider(server).complete(request()).text == "café ☕"


def test_stream_without_finish_reason_is_an_error(server: FakeServer) -> None:
    # The body ends cleanly (as a proxy's idle close would) after half a sentence.
    server.plan(Reply(chunks=[chunk({"content": "The fix is to"})]))
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request(), on_text=seen.append)
    assert seen == ["The fix is to"]
    assert "neither [DONE] nor a finish reason" in caught.value.message
    assert caught.value.kind == "truncated"
    assert caught.value.retryable is False
    assert len(server.requests) == 1


def test_cut_transfer_is_an_error(server: FakeServer) -> None:
    server.plan(Reply(chunks=[chunk({"content": "The fix"})], cut=True))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert "interrupted" in caught.value.message
    assert caught.value.kind == "truncated"
    assert len(server.requests) == 1


def test_error_object_in_the_stream_is_an_error(server: FakeServer) -> None:
    server.plan(Reply(chunks=[b'data: {"error": {"message": "context overflow"}}\n\n']))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert "context overflow" in caught.value.message


def test_service_unavailable_is_retried_once(server: FakeServer) -> None:
    server.plan(openai_error(503, "loading model"), openai_text_reply(["ready"]))
    assert provider(server).complete(request()).text == "ready"
    assert len(server.requests) == 2


def test_bad_request_is_not_retried_and_hides_the_key(server: FakeServer) -> None:
    server.plan(openai_error(400, f"invalid request; Authorization: Bearer {KEY}"))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    error = caught.value
    assert len(server.requests) == 1
    assert error.retryable is False
    assert "400" in error.message and "invalid request" in error.message
    assert KEY not in f"{error.message} {error.hint} {error!s} {error!r}"


def test_unreachable_server_is_retried_and_named() -> None:
    closed = FakeServer()
    url = closed.url
    closed.close()
    chosen = make_provider(
        "openai-compatible", model="m", base_url=f"{url}/v1", script=None, environ={}
    )
    with pytest.raises(ProviderError) as caught:
        chosen.complete(request())
    assert caught.value.retryable is True
    assert f"{url}/v1/chat/completions" in caught.value.message
    assert "after 3 attempts" in caught.value.message


def test_abort_during_a_hanging_stream_returns_promptly(server: FakeServer) -> None:
    server.plan(Reply(chunks=[chunk({"content": "Let me"})], hang=True))
    abort = threading.Event()

    def on_text(text: str) -> None:
        threading.Timer(0.2, abort.set).start()

    started = time.monotonic()
    with pytest.raises(ProviderAborted):
        provider(server).complete(request(), on_text=on_text, abort=abort)
    assert time.monotonic() - started < 1.0
    assert server.hung.is_set()


@pytest.mark.parametrize(
    ("base_url", "model", "problem"),
    [
        (None, "m", "base URL"),
        ("localhost:8080/v1", "m", "http://"),
        ("http://127.0.0.1:1/v1", None, "model name"),
    ],
)
def test_missing_options_are_usage_errors(
    base_url: str | None, model: str | None, problem: str
) -> None:
    with pytest.raises(UsageError) as caught:
        make_provider("openai-compatible", model=model, base_url=base_url, script=None, environ={})
    assert problem in caught.value.message


def test_request_body_has_no_key(server: FakeServer) -> None:
    server.plan(openai_text_reply(["ok"]))
    provider(server).complete(request())
    assert KEY not in json.dumps(server.requests[0].body)


def test_a_silent_server_times_out_without_retry(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_agent.providers import openai_compat

    monkeypatch.setattr(openai_compat, "READ_TIMEOUT_S", 0.3)
    server.plan(Reply(hang=True))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert time.monotonic() - started < 3
    assert "Timeout" in caught.value.message
    assert caught.value.retryable is False
    assert len(server.requests) == 1


def test_credentials_in_the_base_url_are_not_shown() -> None:
    closed = FakeServer()
    port = closed.url.rsplit(":", 1)[1]
    closed.close()
    chosen = make_provider(
        "openai-compatible",
        model="m",
        base_url=f"http://user:hunter2secret@127.0.0.1:{port}/v1",
        script=None,
        environ={},
    )
    with pytest.raises(ProviderError) as caught:
        chosen.complete(request())
    assert "hunter2secret" not in caught.value.message
    assert f"127.0.0.1:{port}/v1/chat/completions" in caught.value.message
