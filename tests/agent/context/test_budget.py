"""Token accounting, the model catalog and the budget derived from them."""

from __future__ import annotations

import math

import pytest

from ax_agent.providers import Message, ProviderRequest, TextBlock, ToolResultBlock, ToolUseBlock
from ax_agent.providers.base import ToolSchema
from ax_agent.window import catalog, tokens
from ax_agent.window.budget import TARGET_RATIO, TRIGGER_RATIO, Budget, budget_for


def test_the_estimate_is_four_characters_a_token_plus_framing() -> None:
    assert tokens.text_tokens("") == 0
    assert tokens.text_tokens("abcd") == 1
    assert tokens.text_tokens("abcde") == 2
    text = TextBlock("x" * 400)
    assert tokens.block_tokens(text) == tokens.BLOCK_OVERHEAD_TOKENS + 100
    result = ToolResultBlock("c1", "y" * 398)
    assert tokens.block_tokens(result) == tokens.BLOCK_OVERHEAD_TOKENS + 100
    use = ToolUseBlock("c1", "read_file", {"path": "a.py"})
    assert tokens.block_tokens(use) == tokens.BLOCK_OVERHEAD_TOKENS + math.ceil(
        len('c1read_file{"path":"a.py"}') / 4
    )
    message = Message("user", [text, result])
    assert tokens.message_tokens(message) == tokens.MESSAGE_OVERHEAD_TOKENS + 2 * (
        tokens.BLOCK_OVERHEAD_TOKENS + 100
    )


def test_an_unserialisable_or_string_input_is_still_priced() -> None:
    assert tokens.block_tokens(ToolUseBlock("c", "t", "raw text")) > tokens.BLOCK_OVERHEAD_TOKENS
    assert tokens.block_tokens(ToolUseBlock("c", "t", {"x": {1, 2}})) > tokens.BLOCK_OVERHEAD_TOKENS


def _request() -> ProviderRequest:
    return ProviderRequest(
        system="s" * 400,
        messages=[Message("user", [TextBlock("hello")])],
        tools=[ToolSchema("t", "d", {"type": "object"})],
        model="claude-sonnet-4-5",
    )


def test_the_providers_counter_is_asked_first_and_the_estimate_answers_otherwise() -> None:
    request = _request()
    estimate = tokens.estimate_request(request)
    assert estimate == tokens.fixed_tokens(request) + tokens.messages_tokens(request.messages)
    assert tokens.count_request(request) == estimate
    assert tokens.count_request(request, lambda r: 1234) == 1234

    def broken(r: ProviderRequest) -> int:
        raise RuntimeError("no counting endpoint")

    assert tokens.count_request(request, broken) == estimate
    assert tokens.count_request(request, lambda r: -1) == estimate


def test_the_memo_prices_each_message_once_by_identity() -> None:
    memo = tokens.TokenMemo()
    message = Message("user", [TextBlock("x" * 40)])
    assert memo.message(message) == tokens.message_tokens(message)
    twin = Message("user", [TextBlock("x" * 4000)])
    assert memo.message(twin) == tokens.message_tokens(twin)
    assert memo.message(message) == tokens.message_tokens(message)


def test_the_catalog_is_data_with_a_default_for_unknown_models() -> None:
    known = catalog.model_limits("claude-sonnet-4-5")
    assert (known.context_window, known.max_output, known.known) == (200_000, 64_000, True)
    unknown = catalog.model_limits("some-local-model")
    assert unknown.known is False and unknown.model == "some-local-model"
    assert unknown.context_window == 128_000 and unknown.max_output == 8_192
    assert "claude-sonnet-4-5" in catalog.catalog_models()
    # Read once per process.
    assert catalog._catalog() is catalog._catalog()


def test_request_plus_output_fits_the_window() -> None:
    budget = budget_for("claude-sonnet-4-5", 8_192)
    assert budget.max_output == 8_192
    assert budget.request + budget.max_output < budget.context_window
    assert budget.trigger == int(budget.request * TRIGGER_RATIO)
    assert budget.target == int(budget.request * TARGET_RATIO)
    assert budget.target < budget.trigger < budget.request
    # An output asked for beyond the model's cap is capped.
    assert budget_for("gpt-4o", 100_000).max_output == 16_384
    assert budget_for("gpt-4o").max_output == 16_384


def test_a_budget_with_no_room_is_refused() -> None:
    with pytest.raises(ValueError, match="leaves no room"):
        Budget.of(10_000, 9_800)
    with pytest.raises(ValueError, match="positive"):
        Budget.of(0, 10)
