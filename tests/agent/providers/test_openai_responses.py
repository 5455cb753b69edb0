"""The openai provider: the Responses API over httpx, against a fake server on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from agent.providers.fakes import FakeServer, Reply
from agent.providers.responses_fakes import (
    MODEL,
    call_item,
    event,
    message_item,
    responses_error,
    stream,
    text_reply,
)

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
from ax_agent.providers.openai_responses import OpenAIResponsesProvider
from libcommon.errors import UsageError

KEY = "sk-proj-FAKEfakeFAKEfake0123456789abcdef"
TOOLS = [
    ToolSchema(
        "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
]


def provider(server: FakeServer, model: str | None = "gpt-5") -> OpenAIResponsesProvider:
    made = make_provider(
        "openai",
        model=model,
        base_url=None,
        script=None,
        environ={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"{server.url}/v1/"},
    )
    assert isinstance(made, OpenAIResponsesProvider)
    return made


def request(messages: list[Message] | None = None, system: str = "Be brief.") -> ProviderRequest:
    return ProviderRequest(
        system=system,
        messages=messages or [Message("user", [TextBlock("hello")])],
        tools=TOOLS,
        model="",
        max_tokens=128,
    )


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "BACKOFF_BASE_S", 0.01)


def test_text_streams_and_the_request_is_stateless(server: FakeServer) -> None:
    server.plan(
        Reply(
            chunks=stream([message_item("Hello there")], text_deltas={0: ["Hel", "lo", " there"]})
        )
    )
    seen: list[str] = []
    response = provider(server).complete(request(), on_text=seen.append)
    assert seen == ["Hel", "lo", " there"]
    assert response.content == [TextBlock("Hello there")]
    assert response.stop_reason == "end_turn"
    assert response.model == MODEL
    usage = response.usage
    # input_tokens counts the cached part too; the contract counts it apart.
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (20, 10, 5)
    sent = server.requests[0]
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["stream"] is True
    assert body["model"] == "gpt-5"
    assert body["instructions"] == "Be brief."
    assert body["max_output_tokens"] == 128
    assert body["input"] == [{"type": "message", "role": "user", "content": "hello"}]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file",
            "parameters": TOOLS[0].input_schema,
            "strict": False,
        }
    ]
    assert "previous_response_id" not in body
    assert KEY not in json.dumps(body)


def test_the_terminal_payload_is_authoritative_over_the_deltas(server: FakeServer) -> None:
    # The deltas say one thing, response.completed's output another: the terminal wins.
    chunks = stream(
        [message_item("draft")],
        text_deltas={0: ["dra", "ft"]},
        terminal_output=[message_item("final answer")],
    )
    server.plan(Reply(chunks=chunks))
    seen: list[str] = []
    response = provider(server).complete(request(), on_text=seen.append)
    assert seen == ["dra", "ft"]
    assert response.text == "final answer"


def test_a_terminal_without_output_falls_back_to_the_finished_items(server: FakeServer) -> None:
    chunks = stream([message_item("from the items")])
    chunks[-1] = event("response.completed", response={"status": "completed", "model": MODEL})
    server.plan(Reply(chunks=chunks))
    assert provider(server).complete(request()).text == "from the items"


def test_tool_calls_round_trip_as_function_call_items(server: FakeServer) -> None:
    output = [
        message_item("Checking."),
        call_item("call_a", "read_file", '{"path": "a.py"}', item_id="fc_a"),
        call_item("call_b", "read_file", "{not json", item_id="fc_b"),
    ]
    server.plan(Reply(chunks=stream(output)), text_reply("All read."))
    chosen = provider(server)
    first = chosen.complete(request())
    assert first.stop_reason == "tool_use"
    assert first.content == [
        TextBlock("Checking."),
        ToolUseBlock("call_a", "read_file", {"path": "a.py"}),
        ToolUseBlock("call_b", "read_file", "{not json"),  # kept raw for the loop to report
    ]
    history = [
        Message("user", [TextBlock("read them")]),
        Message("assistant", list(first.content)),
        Message(
            "user",
            [
                TextBlock("also, be quick"),
                ToolResultBlock("call_a", "A"),
                ToolResultBlock("call_b", "arguments are not JSON", is_error=True),
            ],
        ),
    ]
    assert chosen.complete(request(history)).text == "All read."
    assert server.requests[1].body["input"] == [
        {"type": "message", "role": "user", "content": "read them"},
        {"type": "message", "role": "assistant", "content": "Checking."},
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "read_file",
            "arguments": '{"path": "a.py"}',
        },
        {
            "type": "function_call",
            "call_id": "call_b",
            "name": "read_file",
            "arguments": "{not json",
        },
        # Each result its own item, before the same message's text.
        {"type": "function_call_output", "call_id": "call_a", "output": "A"},
        {
            "type": "function_call_output",
            "call_id": "call_b",
            "output": "ERROR: arguments are not JSON",
        },
        {"type": "message", "role": "user", "content": "also, be quick"},
    ]


def test_incomplete_response_keeps_its_output_and_says_why(server: FakeServer) -> None:
    chunks = stream(
        [message_item("The answer is")],
        terminal="response.incomplete",
        incomplete_details={"reason": "max_output_tokens"},
    )
    server.plan(Reply(chunks=chunks))
    response = provider(server).complete(request())
    assert response.stop_reason == "max_tokens"
    assert response.text == "The answer is"


def test_stream_without_a_terminal_event_is_an_error(server: FakeServer) -> None:
    # Every item finished and the body ended cleanly, but response.completed never came.
    server.plan(Reply(chunks=stream([message_item("The fix is to")], terminal=None)))
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request(), on_text=seen.append)
    assert seen == ["The fix is to"]
    assert "without response.completed" in caught.value.message
    assert caught.value.retryable is False
    assert len(server.requests) == 1


def test_interrupted_stream_is_an_error(server: FakeServer) -> None:
    chunks = stream([message_item("The fix")], terminal=None)
    server.plan(Reply(chunks=chunks[:3], cut=True))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert "interrupted" in caught.value.message
    assert caught.value.retryable is False
    assert len(server.requests) == 1


def test_response_failed_is_an_error(server: FakeServer) -> None:
    chunks = stream(
        [message_item("half")],
        terminal="response.failed",
        error={"code": "server_error", "message": f"the model crashed near {KEY}"},
    )
    server.plan(Reply(chunks=chunks))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    error = caught.value
    assert "failed" in error.message and "server_error: the model crashed" in error.message
    assert error.kind == "server"
    assert KEY not in error.message
    assert error.retryable is False
    assert len(server.requests) == 1


def test_error_event_is_an_error(server: FakeServer) -> None:
    chunks = stream([message_item("half")], terminal=None)
    chunks.append(
        event("error", sequence_number=99, code="rate_limit_exceeded", message="slow down")
    )
    server.plan(Reply(chunks=chunks))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert "rate_limit_exceeded: slow down" in caught.value.message


def test_failures_carry_their_kind_from_the_one_taxonomy(server: FakeServer) -> None:
    server.plan(
        responses_error(401, "Incorrect API key provided"),
        responses_error(400, "This model's maximum context length is 400000 tokens"),
        Reply(chunks=stream([message_item("The fix is")], terminal=None)),
    )
    kinds = []
    for _ in range(3):
        with pytest.raises(ProviderError) as caught:
            provider(server).complete(request())
        kinds.append((caught.value.kind, caught.value.retryable))
    assert kinds == [("auth", False), ("context_too_long", False), ("truncated", False)]


def test_an_error_event_that_opens_the_stream_is_retried_like_a_status(
    server: FakeServer,
) -> None:
    # No event was handed over yet: still the connection phase.
    opening = event("error", sequence_number=0, code="rate_limit_exceeded", message="slow down")
    server.plan(Reply(chunks=[opening]), text_reply("ok"))
    assert provider(server).complete(request()).text == "ok"
    assert len(server.requests) == 2


def test_an_error_event_mid_stream_keeps_its_kind_and_is_never_retried(
    server: FakeServer,
) -> None:
    chunks = stream([message_item("half")], terminal=None)
    chunks.append(event("error", sequence_number=99, code="rate_limit_exceeded", message="x"))
    server.plan(Reply(chunks=chunks), text_reply("never asked for"))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    assert (caught.value.kind, caught.value.retryable) == ("rate_limit", False)
    assert len(server.requests) == 1
    server.replies.clear()


def test_throttle_is_retried_in_the_connection_phase(server: FakeServer) -> None:
    server.plan(responses_error(429, "slow down", **{"retry-after": "0"}), text_reply("ok"))
    assert provider(server).complete(request()).text == "ok"
    assert len(server.requests) == 2


def test_refused_key_is_not_retried_and_not_shown(server: FakeServer) -> None:
    server.plan(responses_error(401, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(ProviderError) as caught:
        provider(server).complete(request())
    error = caught.value
    assert "HTTP 401" in error.message and "OPENAI_API_KEY" in (error.hint or "")
    assert KEY not in f"{error.message} {error.hint} {error!r}"
    assert len(server.requests) == 1


def test_abort_during_a_hanging_stream_returns_promptly(server: FakeServer) -> None:
    chunks = stream([message_item("Let me")], terminal=None)
    server.plan(Reply(chunks=chunks, hang=True))
    abort = threading.Event()

    def on_text(text: str) -> None:
        threading.Timer(0.2, abort.set).start()

    started = time.monotonic()
    with pytest.raises(ProviderAborted):
        provider(server).complete(request(), on_text=on_text, abort=abort)
    assert time.monotonic() - started < 1.0


def test_key_and_base_url_come_from_the_environment_only() -> None:
    with pytest.raises(ProviderError) as missing:
        make_provider("openai", model=None, base_url=None, script=None, environ={})
    assert "OPENAI_API_KEY" in missing.value.message
    with pytest.raises(UsageError) as flag:
        make_provider(
            "openai",
            model=None,
            base_url="http://127.0.0.1:1/v1",
            script=None,
            environ={"OPENAI_API_KEY": KEY},
        )
    assert "OPENAI_BASE_URL" in (flag.value.hint or "")
    with pytest.raises(UsageError):
        make_provider(
            "openai",
            model=None,
            base_url=None,
            script=None,
            environ={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "api.openai.com/v1"},
        )


PROBE = """
import json, sys
from ax_agent.providers import make_provider
make_provider("openai", model=None, base_url=None, script=None, environ={"OPENAI_API_KEY": "k"})
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {"anthropic", "httpx"})))
"""


def test_building_the_provider_defers_httpx_to_the_first_request(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
