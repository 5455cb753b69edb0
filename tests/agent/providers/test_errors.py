"""The one error taxonomy and the connection-phase retries, against real loopback servers."""

from __future__ import annotations

import email.utils
import os
import time
from pathlib import Path

import pytest
from agent.providers.fakes import (
    FakeServer,
    Reply,
    anthropic_error,
    anthropic_text_reply,
    chunk,
    message_start,
    openai_error,
    openai_text_reply,
    sse,
    text_block,
)

from ax_agent.providers import (
    Message,
    Provider,
    ProviderError,
    ProviderRequest,
    TextBlock,
    make_provider,
    streaming,
)
from ax_agent.providers.errors import ERROR_KINDS, RETRYABLE_KINDS, hint_for, kind_for_status

ANTHROPIC_KEY = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "BACKOFF_BASE_S", 0.01)


def chat(server: FakeServer) -> Provider:
    return make_provider(
        "openai-compatible", model="m", base_url=f"{server.url}/v1", script=None, environ={}
    )


def claude(server: FakeServer) -> Provider:
    environ = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": server.url}
    return make_provider("anthropic", model="c", base_url=None, script=None, environ=environ)


def request() -> ProviderRequest:
    return ProviderRequest("", [Message("user", [TextBlock("hi")])], [], "", 64)


@pytest.mark.parametrize(
    ("status", "code", "message", "kind"),
    [
        (401, None, "bad key", "auth"),
        (400, "authentication_error", "", "auth"),
        (403, None, "", "permission"),
        (404, None, "no such model", "not_found"),
        (400, None, "missing field", "bad_request"),
        (422, None, "bad schema", "bad_request"),
        (400, None, "This model's maximum context length is 8192 tokens", "context_too_long"),
        (400, "invalid_request_error", "prompt is too long: 210000 tokens", "context_too_long"),
        (400, "exceed_context_size_error", "", "context_too_long"),
        (413, None, "", "context_too_long"),
        (429, None, "slow down", "rate_limit"),
        (429, "insufficient_quota", "You exceeded your current quota", "quota"),
        (429, None, "You exceeded your current quota", "quota"),
        (402, None, "Insufficient Balance", "quota"),
        (429, "1113", "余额不足", "quota"),
        (529, None, "", "overloaded"),
        (503, None, "loading model", "overloaded"),
        (200, "overloaded_error", "Overloaded", "overloaded"),
        (500, None, "", "server"),
        (502, None, "", "server"),
        (200, "api_error", "", "server"),
        (200, None, "", "other"),
    ],
)
def test_kind_for_status(status: int, code: str | None, message: str, kind: str) -> None:
    assert kind_for_status(status, code, message) == kind


def test_every_kind_has_a_hint_naming_the_key_where_it_matters() -> None:
    for kind in ERROR_KINDS:
        assert hint_for(kind, "DEEPSEEK_API_KEY")
    assert "DEEPSEEK_API_KEY" in hint_for("auth", "DEEPSEEK_API_KEY")
    assert {"rate_limit", "overloaded", "server", "connection"} == RETRYABLE_KINDS


def test_a_rate_limit_has_a_deeper_budget_than_an_overload(server: FakeServer) -> None:
    throttles = streaming.RATE_LIMIT_MAX_ATTEMPTS - 1
    server.plan(
        *(openai_error(429, "slow down", **{"retry-after": "0"}) for _ in range(throttles)),
        openai_text_reply(["through"]),
    )
    assert chat(server).complete(request()).text == "through"
    assert len(server.requests) == streaming.RATE_LIMIT_MAX_ATTEMPTS

    server.requests.clear()
    server.plan(*(openai_error(503, "busy") for _ in range(throttles)))
    with pytest.raises(ProviderError) as caught:
        chat(server).complete(request())
    assert len(server.requests) == streaming.MAX_ATTEMPTS
    assert caught.value.kind == "overloaded"
    server.replies.clear()


def test_a_rate_limit_budget_is_still_bounded(server: FakeServer) -> None:
    server.plan(*(anthropic_error(429, "rate_limit_error", "Slow") for _ in range(10)))
    with pytest.raises(ProviderError) as caught:
        claude(server).complete(request())
    assert len(server.requests) == streaming.RATE_LIMIT_MAX_ATTEMPTS
    assert caught.value.kind == "rate_limit"
    assert f"after {streaming.RATE_LIMIT_MAX_ATTEMPTS} attempts" in caught.value.message


def test_retry_after_as_an_http_date_is_waited_for(server: FakeServer) -> None:
    # HTTP dates have whole seconds: two seconds ahead is at least one second of waiting.
    when = email.utils.formatdate(time.time() + 2, usegmt=True)
    server.plan(openai_error(429, "slow down", **{"retry-after": when}), openai_text_reply(["ok"]))
    started = time.monotonic()
    assert chat(server).complete(request()).text == "ok"
    assert time.monotonic() - started >= 0.9
    assert len(server.requests) == 2


def test_a_retry_after_past_the_cap_is_not_waited_for(server: FakeServer) -> None:
    wait = str(int(streaming.RETRY_AFTER_CAP_S) + 1)
    server.plan(openai_error(429, "slow down", **{"retry-after": wait}))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        chat(server).complete(request())
    assert time.monotonic() - started < 2
    assert len(server.requests) == 1
    assert f"wait {wait} s" in caught.value.message


def test_quota_is_not_retried(server: FakeServer) -> None:
    body = b'{"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}'
    server.plan(Reply(429, chunks=[body]))
    with pytest.raises(ProviderError) as caught:
        chat(server).complete(request())
    assert (caught.value.kind, caught.value.retryable) == ("quota", False)
    assert len(server.requests) == 1


def test_context_too_long_is_typed_and_not_retried(server: FakeServer) -> None:
    server.plan(
        anthropic_error(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000")
    )
    with pytest.raises(ProviderError) as caught:
        claude(server).complete(request())
    assert (caught.value.kind, caught.value.retryable) == ("context_too_long", False)
    assert "/clear" in (caught.value.hint or "")


def test_no_retry_once_a_byte_of_the_answer_was_surfaced(server: FakeServer) -> None:
    # An overloaded error after text was shown is the answer failing, not the connection.
    cut = Reply(
        chunks=[
            message_start(),
            *text_block(0, ["Half an ans"]),
            sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
        ]
    )
    server.plan(cut, anthropic_text_reply(["never asked for"]))
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        claude(server).complete(request(), on_text=seen.append)
    assert seen == ["Half an ans"]
    assert (caught.value.kind, caught.value.retryable) == ("overloaded", False)
    assert len(server.requests) == 1


def test_a_connection_that_is_refused_is_a_connection_error() -> None:
    closed = FakeServer()
    url = closed.url
    closed.close()
    with pytest.raises(ProviderError) as caught:
        make_provider("vllm", model="m", base_url=f"{url}/v1", script=None, environ={}).complete(
            request()
        )
    assert caught.value.kind == "connection"
    assert "directly" in caught.value.message


def test_a_mid_stream_chunk_that_is_not_json_is_a_protocol_error(server: FakeServer) -> None:
    server.plan(Reply(chunks=[chunk({"content": "a"}), b"data: <html>\n\n"]))
    with pytest.raises(ProviderError) as caught:
        chat(server).complete(request())
    assert caught.value.kind == "protocol"
    assert caught.value.retryable is False


def test_the_turn_records_the_kind_of_a_provider_error(server: FakeServer, workspace: Path) -> None:
    from agenttest import events_of, of_type

    from ax_agent.loop import run_turn
    from ax_agent.session import StartOptions, start_session

    server.plan(Reply(401, chunks=[b'{"error": {"message": "Authentication Fails"}}']))
    session = start_session(
        StartOptions(
            workspace=workspace,
            environ={**os.environ, "DEEPSEEK_API_KEY": "sk-deepseekFAKEfakeFAKEfake0123"},
            provider="deepseek",
            base_url=f"{server.url}/v1",
            trust_once=True,
        )
    )
    try:
        assert run_turn(session, "hi").stop_reason == "error"
    finally:
        session.end("done")
    events = events_of(session)
    (started,) = of_type(events, "session.started")
    assert (started["keyVar"], started["keySet"], started["keyCheck"]) == (
        "DEEPSEEK_API_KEY",
        True,
        "not checked",
    )
    (completed,) = of_type(events, "turn.completed")
    assert completed["errorKind"] == "auth"
    assert "DEEPSEEK_API_KEY" in completed["detail"] or "Authentication" in completed["detail"]
