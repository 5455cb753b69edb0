"""The catalog as data: per-model capabilities, the working budget, an unknown model's note."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from agent.providers.fakes import FakeServer, anthropic_text_reply, openai_text_reply
from agent.providers.responses_fakes import text_reply
from agenttest import open_session, write_script

from ax_agent.headless import run_headless
from ax_agent.loop import run_turn
from ax_agent.providers import Message, ProviderRequest, TextBlock, make_provider
from ax_agent.providers.anthropic import build_params
from ax_agent.session import StartOptions, start_session
from ax_agent.window import catalog
from ax_agent.window.budget import SAFETY_MARGIN_RATIO, budget_for, output_cap
from ax_agent.window.tokens import estimate_request
from ax_log import read_events
from libcommon.paths import state_layout

# Ids their providers have retired: a catalog entry for one would be a lie.
RETIRED = ("claude-3-5-haiku-latest", "claude-3-5-sonnet-latest", "claude-3-opus-latest", "gpt-4")


def test_every_entry_states_its_capabilities_and_no_retired_id_is_listed() -> None:
    models = catalog.catalog_models()
    assert not set(RETIRED) & set(models)
    for name in models:
        entry = catalog.model_limits(name)
        assert entry.known and entry.reasoning in catalog.REASONING_MODES
        assert entry.caching in catalog.CACHING_STYLES
    gpt5 = catalog.model_limits("gpt-5")
    assert (gpt5.vision, gpt5.reasoning, gpt5.caching) == (True, "always", "automatic")
    claude = catalog.model_limits("claude-sonnet-4-5")
    assert (claude.reasoning, claude.caching) == ("optional", "breakpoints")
    assert catalog.model_limits("qwen2.5-coder").vision is False
    assert "2027-01-22" in catalog.model_limits("claude-opus-4-5").notes


def test_an_uncatalogued_model_gets_conservative_defaults_and_a_note() -> None:
    unknown = catalog.model_limits("my-local-model")
    assert not unknown.known and unknown.model == "my-local-model"
    assert (unknown.vision, unknown.reasoning, unknown.caching) == (False, "none", "none")
    assert "not in ax's catalog" in unknown.notes


@pytest.mark.parametrize(
    ("field", "value"),
    [("reasoning", "sometimes"), ("caching", "maybe"), ("vision", "yes"), ("budgetTokens", 0)],
)
def test_a_malformed_entry_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, field: str, value: object
) -> None:
    entry = {"contextWindow": 1000, "maxOutput": 100, "vision": False, "reasoning": "none"}
    entry |= {"caching": "none", field: value}
    with pytest.raises(ValueError, match="model m: bad"):
        catalog._entry("m", entry, known=True)


def test_the_working_budget_keeps_under_an_input_cap() -> None:
    # gpt-5's window is 400,000, but the API takes at most 272,000 tokens of input.
    budget = budget_for("gpt-5", 8192)
    assert budget.request == 272_000 - int(400_000 * SAFETY_MARGIN_RATIO)
    assert budget_for("gpt-4o", 8192).request == 128_000 - 8192 - int(128_000 * 0.05)


def test_output_is_clamped_so_that_input_and_output_fit_the_window() -> None:
    assert output_cap("gpt-4o", 8192, 1_000) == 8192
    assert output_cap("gpt-4o", 100_000, 1_000) == 16_384  # the model's own cap
    # 120,000 in a 128,000 window less the margin leaves 1,600: that is what is asked.
    assert output_cap("gpt-4o", 8192, 120_000) == 128_000 - 120_000 - 6_400
    # A request with no room left still asks for a little, for the API to refuse by name.
    assert output_cap("gpt-4o", 8192, 127_000) == 1024


def _big_request(model: str) -> ProviderRequest:
    # About 120,000 estimated tokens: gpt-4o's window leaves less than 8,192 for output.
    return ProviderRequest("", [Message("user", [TextBlock("x" * 4 * 120_000)])], [], model)


def test_the_providers_ask_for_the_output_that_fits(server: FakeServer) -> None:
    request = _big_request("gpt-4o")
    estimate = estimate_request(request)
    expected = output_cap("gpt-4o", request.max_tokens, estimate)
    assert expected < request.max_tokens  # the clamp binds here
    assert build_params(request, "unused")["max_tokens"] == output_cap(
        "gpt-4o", request.max_tokens, estimate
    )
    server.plan(text_reply("ok"), text_reply("ok"))
    openai = make_provider(
        "openai",
        model="gpt-4o",
        base_url=None,
        script=None,
        environ={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": f"{server.url}/v1"},
    )
    openai.complete(request)
    body = server.requests[0].body
    assert body["max_output_tokens"] == expected
    # gpt-4o does not reason: no encrypted reasoning is asked for; gpt-5 does.
    assert "include" not in body
    openai.complete(ProviderRequest("", [Message("user", [TextBlock("hi")])], [], "gpt-5"))
    assert server.requests[1].body["include"] == ["reasoning.encrypted_content"]


def test_the_chat_profiles_ask_for_the_output_that_fits(server: FakeServer) -> None:
    request = _big_request("gpt-4o")
    expected = output_cap("gpt-4o", request.max_tokens, estimate_request(request))
    assert expected < request.max_tokens
    server.plan(openai_text_reply(["ok"]), openai_text_reply(["ok"]))
    for name in ("openai-compatible", "vllm"):
        chosen = make_provider(
            name, model="m", base_url=f"{server.url}/v1", script=None, environ={}
        )
        chosen.complete(request)
    # Each profile's own field carries it.
    assert server.requests[0].body["max_tokens"] == expected
    assert server.requests[1].body["max_completion_tokens"] == expected


def test_anthropic_request_uses_the_clamp_on_the_wire(server: FakeServer) -> None:
    server.plan(anthropic_text_reply(["ok"]))
    chosen = make_provider(
        "anthropic",
        model="claude-haiku-4-5",
        base_url=None,
        script=None,
        environ={
            "ANTHROPIC_API_KEY": "sk-ant-fake0123456789abcdef",
            "ANTHROPIC_BASE_URL": server.url,
        },
    )
    request = ProviderRequest("", [Message("user", [TextBlock("x" * 4 * 190_000)])], [], "")
    chosen.complete(request)
    sent = server.requests[0].body["max_tokens"]
    assert sent == output_cap("claude-haiku-4-5", request.max_tokens, estimate_request(request))
    assert sent < request.max_tokens


def _options(workspace: Path, server: FakeServer) -> StartOptions:
    environ = {
        **os.environ,
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": f"{server.url}/v1",
    }
    return StartOptions(
        workspace=workspace,
        environ=environ,
        provider="openai",
        model="my-local-model",
        trust_once=True,
        tools=[],
    )


def test_an_uncatalogued_model_is_noted_once_in_the_events(
    workspace: Path, server: FakeServer
) -> None:
    server.plan(text_reply("one"), text_reply("two"))
    session = start_session(_options(workspace, server))
    run_turn(session, "a")
    run_turn(session, "b")
    session.end("completed")
    events = list(read_events(state_layout(workspace).session_log(session.id), session.id))
    noted = [e for e in events if e["type"] == "model.uncatalogued"]
    assert len(noted) == 1
    assert (noted[0]["model"], noted[0]["provider"]) == ("my-local-model", "openai")
    assert (noted[0]["contextWindow"], noted[0]["maxOutput"]) == (128_000, 8_192)
    assert "not in ax's catalog" in noted[0]["note"]


def test_the_note_reaches_stderr_in_headless_mode(workspace: Path, server: FakeServer) -> None:
    server.plan(*(text_reply("done") for _ in range(2)))
    said: list[str] = []
    assert run_headless(_options(workspace, server), "go", "text", io.StringIO(), said.append) == 0
    assert [line for line in said if "my-local-model:" in line] == [
        "ax-agent: model my-local-model: " + catalog.model_limits("x").notes
    ]


def test_the_script_provider_calls_no_model_and_gets_no_note(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "one"}])
    session = open_session(workspace, script)
    run_turn(session, "a")
    session.end("completed")
    events = list(read_events(state_layout(workspace).session_log(session.id), session.id))
    assert not [e for e in events if e["type"] == "model.uncatalogued"]
