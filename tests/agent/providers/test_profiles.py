"""Each chat profile's deviations, against a fake Chat Completions server on loopback."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from agent.providers.fakes import DONE, FakeServer, Reply, chunk, openai_text_reply

from ax_agent.providers import (
    PROVIDER_NAMES,
    Message,
    ProviderError,
    ProviderRequest,
    TextBlock,
    ToolResultBlock,
    ToolSchema,
    ToolUseBlock,
    make_provider,
    streaming,
)
from ax_agent.providers.base import ReasoningBlock
from ax_agent.providers.openai_compat import OpenAICompatProvider, strict_compatible
from ax_agent.providers.profiles import PROFILES

KEYS = {
    "DEEPSEEK_API_KEY": "sk-deepseekFAKEfakeFAKEfake0123",
    "MOONSHOT_API_KEY": "sk-moonshotFAKEfakeFAKEfake0123",
    "ZAI_API_KEY": "zai-FAKEfakeFAKEfake.0123456789",
    "LLAMA_API_KEY": "llama-local-key-0123",
    "VLLM_API_KEY": "vllm-local-key-0123",
    "OPENAI_API_KEY": "sk-proj-FAKEfakeFAKEfake0123456789abcdef",
}
CLOSED = {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}
TOOLS = [
    ToolSchema(
        "open", "An open schema", {"type": "object", "properties": {"p": {"type": "string"}}}
    ),
    ToolSchema("closed", "A strict schema", {**CLOSED, "additionalProperties": False}),
]


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "BACKOFF_BASE_S", 0.01)


def make(name: str, server: FakeServer, **env: str) -> OpenAICompatProvider:
    made = make_provider(
        name,
        model=None if PROFILES[name].default_model else "m",
        base_url=f"{server.url}/v1",
        script=None,
        environ={**KEYS, **env},
    )
    assert isinstance(made, OpenAICompatProvider)
    return made


def request(messages: list[Message] | None = None) -> ProviderRequest:
    return ProviderRequest("sys", messages or [Message("user", [TextBlock("hi")])], TOOLS, "", 99)


def test_every_profile_is_a_provider_name() -> None:
    assert set(PROFILES) <= set(PROVIDER_NAMES)
    assert {"deepseek", "kimi", "glm", "llama.cpp", "vllm", "ollama", "openai-compatible"} == set(
        PROFILES
    )


@pytest.mark.parametrize(
    ("name", "key_var", "budget_field", "usage_asked"),
    [
        ("openai-compatible", "OPENAI_API_KEY", "max_tokens", True),
        ("deepseek", "DEEPSEEK_API_KEY", "max_tokens", True),
        ("kimi", "MOONSHOT_API_KEY", "max_tokens", False),
        ("glm", "ZAI_API_KEY", "max_tokens", False),
        ("llama.cpp", "LLAMA_API_KEY", "max_tokens", True),
        ("vllm", "VLLM_API_KEY", "max_completion_tokens", True),
        ("ollama", None, "max_tokens", True),
    ],
)
def test_each_profile_sends_its_own_fields_and_only_its_own_key(
    server: FakeServer, name: str, key_var: str | None, budget_field: str, usage_asked: bool
) -> None:
    server.plan(openai_text_reply(["ok"]))
    assert make(name, server).complete(request()).text == "ok"
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body[budget_field] == 99
    other = {"max_tokens", "max_completion_tokens"} - {budget_field}
    assert not other & set(sent.body)
    assert ("stream_options" in sent.body) is usage_asked
    expected = f"Bearer {KEYS[key_var]}" if key_var else None
    assert sent.headers.get("authorization") == expected
    # No strict flag: no profile opts in.
    assert all("strict" not in tool["function"] for tool in sent.body["tools"])


def test_hosted_profiles_need_their_key_and_name_it() -> None:
    for name, var in (("deepseek", "DEEPSEEK_API_KEY"), ("kimi", "MOONSHOT_API_KEY")):
        with pytest.raises(ProviderError) as caught:
            make_provider(name, model=None, base_url=None, script=None, environ={})
        assert caught.value.kind == "auth"
        assert var in caught.value.message


def test_base_url_variable_then_default(server: FakeServer) -> None:
    made = make_provider(
        "deepseek",
        model=None,
        base_url=None,
        script=None,
        environ={**KEYS, "DEEPSEEK_BASE_URL": f"{server.url}/v1"},
    )
    assert isinstance(made, OpenAICompatProvider)
    assert made.url == f"{server.url}/v1/chat/completions"
    assert made.model == "deepseek-chat"
    default = make_provider("ollama", model="qwen3", base_url=None, script=None, environ={})
    assert isinstance(default, OpenAICompatProvider)
    assert default.url == "http://127.0.0.1:11434/v1/chat/completions"


def test_deepseek_reasoning_is_neither_answer_nor_replayed_and_cache_hits_count(
    server: FakeServer,
) -> None:
    server.plan(
        Reply(
            chunks=[
                chunk({"role": "assistant", "reasoning_content": "Let me think"}),
                chunk({"reasoning_content": " hard."}),
                chunk({"content": "Answer."}, "stop"),
                chunk(
                    None,
                    usage={
                        "prompt_tokens": 100,
                        "completion_tokens": 9,
                        "prompt_cache_hit_tokens": 60,
                        "prompt_cache_miss_tokens": 40,
                    },
                ),
                DONE,
            ]
        )
    )
    seen: list[str] = []
    response = make("deepseek", server).complete(request(), on_text=seen.append)
    assert seen == ["Answer."] and response.text == "Answer."
    assert (response.usage.input_tokens, response.usage.cache_read_input_tokens) == (40, 60)
    history = [Message("user", [TextBlock("hi")]), Message("assistant", [*response.content])]
    server.plan(openai_text_reply(["again"]))
    make("deepseek", server).complete(request([*history, Message("user", [TextBlock("more")])]))
    assert "reasoning_content" not in json.dumps(server.requests[1].body)


def _thinking_then_call() -> Reply:
    call = {"index": 0, "id": "call_1", "function": {"name": "open", "arguments": '{"p": "a"}'}}
    return Reply(
        chunks=[
            chunk({"role": "assistant", "reasoning_content": "Let me "}),
            chunk({"reasoning_content": "look."}),
            chunk({"tool_calls": [call]}),
            chunk({}, "tool_calls"),
            DONE,
        ]
    )


def _assistants(body: Any) -> list[Any]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def test_kimi_thinking_replays_its_reasoning_within_the_tool_loop_only(
    server: FakeServer,
) -> None:
    server.plan(_thinking_then_call(), *(openai_text_reply(["ok"]) for _ in range(3)))
    kimi = make("kimi", server)
    asked = ProviderRequest("sys", [Message("user", [TextBlock("hi")])], TOOLS, "kimi-k2-thinking")
    first = kimi.complete(asked)
    thought = ReasoningBlock("kimi", "kimi-k2-thinking", {"reasoning_content": "Let me look."})
    assert first.content[0] == thought and first.text == ""
    loop = [
        Message("user", [TextBlock("hi")]),
        Message("assistant", list(first.content)),
        Message("user", [ToolResultBlock("call_1", "A")]),
    ]
    kimi.complete(dataclasses.replace(asked, messages=loop))
    (sent,) = _assistants(server.requests[1].body)
    assert sent["reasoning_content"] == "Let me look." and sent["tool_calls"]
    # Another model gets none of it, and nor does a later turn.
    kimi.complete(dataclasses.replace(asked, messages=loop, model="kimi-k2-0905-preview"))
    assert "reasoning_content" not in json.dumps(server.requests[2].body)
    later = [*loop, Message("assistant", [TextBlock("A.")]), Message("user", [TextBlock("next")])]
    kimi.complete(dataclasses.replace(asked, messages=later))
    assert "reasoning_content" not in json.dumps(server.requests[3].body)


def test_profiles_that_do_not_replay_keep_no_reasoning(server: FakeServer) -> None:
    for name in ("deepseek", "glm"):
        server.plan(_thinking_then_call())
        response = make(name, server).complete(request())
        assert not any(isinstance(b, ReasoningBlock) for b in response.content)


def test_deepseek_out_of_resources_is_an_error_not_a_turn(server: FakeServer) -> None:
    server.plan(
        Reply(
            chunks=[chunk({"content": "Partial"}), chunk({}, "insufficient_system_resource"), DONE]
        )
    )
    with pytest.raises(ProviderError) as caught:
        make("deepseek", server).complete(request())
    assert (caught.value.kind, caught.value.retryable) == ("overloaded", False)
    assert len(server.requests) == 1


def test_kimi_usage_inside_the_choice(server: FakeServer) -> None:
    final = {
        "index": 0,
        "delta": {},
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 30, "completion_tokens": 5, "cached_tokens": 10},
    }
    server.plan(Reply(chunks=[chunk({"content": "hi"}), chunk(None, choices=[final]), DONE]))
    usage = make("kimi", server).complete(request()).usage
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (20, 10, 5)


def test_glm_finish_reasons_and_error_codes(server: FakeServer) -> None:
    server.plan(Reply(chunks=[chunk({"content": "no"}), chunk({}, "sensitive"), DONE]))
    assert make("glm", server).complete(request()).stop_reason == "refusal"
    server.plan(Reply(chunks=[chunk({"content": "x"}), chunk({}, "network_error"), DONE]))
    with pytest.raises(ProviderError) as caught:
        make("glm", server).complete(request())
    assert caught.value.kind == "server"
    body = {"error": {"code": "1261", "message": "Prompt exceeds max length"}}
    server.plan(Reply(400, chunks=[json.dumps(body).encode()]))
    with pytest.raises(ProviderError) as caught:
        make("glm", server).complete(request())
    assert caught.value.kind == "context_too_long"
    assert "Prompt exceeds max length" in caught.value.message


def test_vllm_flat_error_envelope(server: FakeServer) -> None:
    body = {"object": "error", "message": "model 'x' does not exist", "type": "NotFoundError"}
    server.plan(Reply(404, chunks=[json.dumps(body).encode()]))
    with pytest.raises(ProviderError) as caught:
        make("vllm", server).complete(request())
    assert caught.value.kind == "not_found"
    assert "model 'x' does not exist" in caught.value.message


def test_llama_cpp_context_error_and_default_model(server: FakeServer) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "request exceeds the context",
            "type": "exceed_context_size_error",
        }
    }
    server.plan(Reply(400, chunks=[json.dumps(body).encode()]))
    provider = make("llama.cpp", server)
    assert provider.model == "local"
    with pytest.raises(ProviderError) as caught:
        provider.complete(request())
    assert caught.value.kind == "context_too_long"


def test_ollama_reasoning_field_is_not_answer_text(server: FakeServer) -> None:
    server.plan(Reply(chunks=[chunk({"reasoning": "hmm"}), chunk({"content": "42"}, "stop"), DONE]))
    assert make("ollama", server, OLLAMA_BASE_URL="unused").complete(request()).text == "42"


def test_tool_results_precede_same_turn_text_and_user_text_coalesces(server: FakeServer) -> None:
    messages = [
        Message("user", [TextBlock("first")]),
        Message("user", [TextBlock("second")]),
        Message(
            "assistant", [ToolUseBlock("c1", "open", {"p": "a"}), ToolUseBlock("c2", "open", {})]
        ),
        Message(
            "user",
            [
                TextBlock("and then"),
                ToolResultBlock("c1", "one"),
                ToolResultBlock("c2", "two", is_error=True),
            ],
        ),
        Message("user", [TextBlock("also")]),
    ]
    server.plan(openai_text_reply(["ok"]))
    make("kimi", server).complete(request(messages))
    wire = server.requests[0].body["messages"]
    assert [(m["role"], m.get("content")) for m in wire] == [
        ("system", "sys"),
        ("user", "first\n\nsecond"),
        ("assistant", None),
        ("tool", "one"),
        ("tool", "ERROR: two"),
        ("user", "and then\n\nalso"),
    ]
    assert [m.get("tool_call_id") for m in wire[3:5]] == ["c1", "c2"]


@pytest.mark.parametrize(
    ("chunks", "ok"),
    [
        ([chunk({"content": "Done."}, "stop"), DONE], True),
        # A finish reason without [DONE] (the server closed after it), or [DONE] alone.
        ([chunk({"content": "Done."}, "stop")], True),
        ([chunk({"content": "Done."}), DONE], True),
        # Neither: a proxy's idle half-close after half a sentence.
        ([chunk({"content": "The fix is to"})], False),
        # A finish reason cut mid-line is not a finish reason.
        ([chunk({"content": "The fix"}), chunk({}, "stop")[:-3]], False),
    ],
)
def test_done_or_a_finish_reason_ends_a_stream(
    server: FakeServer, chunks: list[bytes], ok: bool
) -> None:
    server.plan(Reply(chunks=chunks))
    provider = make("openai-compatible", server)
    if ok:
        assert provider.complete(request()).text == "Done."
    else:
        with pytest.raises(ProviderError) as caught:
            provider.complete(request())
        assert (caught.value.kind, caught.value.retryable) == ("truncated", False)
    assert len(server.requests) == 1


def test_a_strict_profile_marks_only_strict_compatible_schemas(server: FakeServer) -> None:
    assert strict_compatible({**CLOSED, "additionalProperties": False})
    assert not strict_compatible(CLOSED)
    strict = dataclasses.replace(PROFILES["vllm"], strict_tools=True)
    server.plan(openai_text_reply(["ok"]))
    OpenAICompatProvider(
        model="m", base_url=f"{server.url}/v1", environ={}, profile=strict
    ).complete(request())
    tools = server.requests[0].body["tools"]
    assert [t["function"].get("strict") for t in tools] == [None, True]
