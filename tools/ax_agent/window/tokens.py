"""Token accounting without a tokenizer: a calibrated estimate, or the provider's counter.

ax ships no tokenizer. The estimate is ax-slate's rule of thumb (about four
characters per token, rounded up) plus a fixed cost per message and per
content block for the wire's framing (role, type tags, ids, JSON punctuation).
It is used to budget, not to bill: a provider that can count a request
(``TokenCounter``) is asked first, and the estimate answers when it cannot.
Every function here is O(1) per block apart from a tool call's input, which is
small, so a view of thousands of messages can be priced on every request.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from ..providers.base import (
    ContentBlock,
    Message,
    ProviderRequest,
    ReasoningBlock,
    TextBlock,
    ToolUseBlock,
)

# The same calibration ax-slate budgets its frame with (ax_slate.CHARS_PER_TOKEN).
CHARS_PER_TOKEN = 4
# Framing the wire adds around each message and each block (role, type, ids, quotes).
MESSAGE_OVERHEAD_TOKENS = 4
BLOCK_OVERHEAD_TOKENS = 8
# A tool schema's JSON is sent once per request, with its own framing.
TOOL_OVERHEAD_TOKENS = 12
# What one image in a tool result is counted as: providers scale an image down to
# about this many tokens' worth (Anthropic: width x height / 750 at most 1568 px a side).
IMAGE_TOKENS = 1_600

# A provider's own count of a whole request; it may raise to say it cannot.
TokenCounter = Callable[[ProviderRequest], int]


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def block_tokens(block: ContentBlock) -> int:
    if isinstance(block, TextBlock):
        return BLOCK_OVERHEAD_TOKENS + text_tokens(block.text)
    if isinstance(block, ToolUseBlock):
        return BLOCK_OVERHEAD_TOKENS + text_tokens(block.id + block.name + _input_text(block))
    if isinstance(block, ReasoningBlock):
        # Weighed as sent (ciphertext included): an estimate on the safe side.
        return BLOCK_OVERHEAD_TOKENS + text_tokens(_reasoning_text(block))
    images = IMAGE_TOKENS * len(block.images)
    return BLOCK_OVERHEAD_TOKENS + text_tokens(block.tool_use_id + block.content) + images


def _input_text(block: ToolUseBlock) -> str:
    from libcommon import jsonio

    if isinstance(block.input, str):
        return block.input
    try:
        return jsonio.dumps(block.input).decode()
    except TypeError:
        return repr(block.input)


def _reasoning_text(block: ReasoningBlock) -> str:
    from ..providers.reasoning import canonical

    return canonical(block.data).decode("utf-8", "surrogatepass")


def message_tokens(message: Message) -> int:
    return MESSAGE_OVERHEAD_TOKENS + sum(block_tokens(block) for block in message.content)


def messages_tokens(messages: Iterable[Message]) -> int:
    return sum(message_tokens(message) for message in messages)


def fixed_tokens(request: ProviderRequest) -> int:
    """The system prompt and tool schemas: the part of a request that is not history."""
    from libcommon import jsonio

    tools = sum(
        TOOL_OVERHEAD_TOKENS
        + text_tokens(tool.name + tool.description + jsonio.dumps(tool.input_schema).decode())
        for tool in request.tools
    )
    return text_tokens(request.system) + tools


def estimate_request(request: ProviderRequest) -> int:
    return fixed_tokens(request) + messages_tokens(request.messages)


def count_request(request: ProviderRequest, counter: TokenCounter | None = None) -> int:
    """The provider's count when it has one and it answers, else the estimate."""
    if counter is not None:
        try:
            counted = counter(request)
        except Exception:  # a counter that fails must never stop a request: estimate instead
            counted = -1
        if counted >= 0:
            return counted
    return estimate_request(request)


class TokenMemo:
    """Token counts of messages already priced, by identity.

    A session's messages never change once appended, so each is priced once
    instead of on every request. The memo keeps the message itself beside its
    count, so an id reused by a new object is never mistaken for the old one.
    """

    def __init__(self) -> None:
        self._known: dict[int, tuple[Message, int]] = {}

    def message(self, message: Message) -> int:
        hit = self._known.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        tokens = message_tokens(message)
        self._known[id(message)] = (message, tokens)
        return tokens
