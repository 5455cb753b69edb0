"""The chat-compatible servers' wire deviations, as data: one profile per provider name.

One adapter (openai_compat.py) speaks Chat Completions to all of them; each
profile says where that server differs. What every field means:

- ``default_base_url``: where requests go when no ``--base-url``, user config or
  ``base_url_var`` names another (None: one must be given).
- ``key_var``: the environment variable holding the key (keys are read from the
  environment only); ``key_required``: whether a request without one is refused
  before it is sent.
- ``max_tokens_param``: the body field of the output budget.
- ``include_usage``: whether to ask for token counts in the stream
  (``stream_options.include_usage``); servers that count anyway get False.
- ``usage_in_choice``: the server puts the final counts in ``choices[0].usage``.
- ``cached_tokens_paths``: where the usage object says how much of the prompt
  was read from the server's cache.
- ``strict_tools``: whether tool schemas that fit the strict subset (every object
  closed, every property required) go out with ``strict: true``.
- ``reasoning_fields``: delta fields carrying the model's reasoning text; it is
  never shown or kept as answer text.
- ``reasoning_replay``: what is sent back of earlier reasoning. ``never``: the
  server refuses it in input (DeepSeek answers 400 to ``reasoning_content`` in a
  request), so nothing is sent; ``drop``: the server does not use it, nothing is
  sent; ``tool_loop``: a thinking model wants its own reasoning back while it
  works through tool calls (Kimi's), so the reasoning text is kept as a
  ReasoningBlock of this profile and that model, and sent back in its field on
  the assistant messages of the current turn's tool loop, never on earlier turns.
- ``extra_finish_reasons``: the server's own finish reasons that end a turn
  normally; ``error_finish_reasons``: those that mean the answer failed (the
  stream's content is not a turn), with their kind in the error taxonomy.
- ``error_message_paths`` / ``error_code_paths``: where the server's error
  envelope keeps its message and its type or code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .base import StopReason
from .errors import ErrorKind

Path = tuple[str, ...]

# The envelope OpenAI and most servers use: {"error": {"message", "type", "code"}}.
OPENAI_ERROR_MESSAGE: tuple[Path, ...] = (("error", "message"), ("error",))
OPENAI_ERROR_CODE: tuple[Path, ...] = (("error", "code"), ("error", "type"))
OPENAI_CACHED: tuple[Path, ...] = (("prompt_tokens_details", "cached_tokens"),)


@dataclass(frozen=True)
class ChatProfile:
    name: str
    label: str
    default_base_url: str | None
    key_var: str | None
    key_required: bool
    base_url_var: str | None
    default_model: str | None = None
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    include_usage: bool = True
    usage_in_choice: bool = False
    cached_tokens_paths: tuple[Path, ...] = OPENAI_CACHED
    strict_tools: bool = False
    reasoning_fields: tuple[str, ...] = ("reasoning_content", "reasoning")
    reasoning_replay: Literal["never", "drop", "tool_loop"] = "drop"
    extra_finish_reasons: Mapping[str, StopReason] = field(default_factory=dict)
    error_finish_reasons: Mapping[str, ErrorKind] = field(default_factory=dict)
    error_message_paths: tuple[Path, ...] = OPENAI_ERROR_MESSAGE
    error_code_paths: tuple[Path, ...] = OPENAI_ERROR_CODE


GENERIC = ChatProfile(
    name="openai-compatible",
    label="any OpenAI-compatible Chat Completions server",
    default_base_url=None,
    key_var="OPENAI_API_KEY",
    key_required=False,
    base_url_var=None,
    # Servers of every kind answer with one of these envelopes.
    error_message_paths=(("error", "message"), ("error",), ("message",), ("detail",)),
    error_code_paths=(("error", "code"), ("error", "type"), ("code",), ("type",)),
)

DEEPSEEK = ChatProfile(
    name="deepseek",
    label="DeepSeek",
    default_base_url="https://api.deepseek.com/v1",
    key_var="DEEPSEEK_API_KEY",
    key_required=True,
    base_url_var="DEEPSEEK_BASE_URL",
    default_model="deepseek-chat",
    # DeepSeek counts cache hits in its own fields, not prompt_tokens_details.
    cached_tokens_paths=(("prompt_cache_hit_tokens",),),
    reasoning_fields=("reasoning_content",),
    reasoning_replay="never",
    # The server ran out of capacity mid-answer: the text so far is not a turn.
    error_finish_reasons={"insufficient_system_resource": "overloaded"},
)

KIMI = ChatProfile(
    name="kimi",
    label="Kimi (Moonshot AI)",
    default_base_url="https://api.moonshot.ai/v1",
    key_var="MOONSHOT_API_KEY",
    key_required=True,
    base_url_var="MOONSHOT_BASE_URL",
    default_model="kimi-k2-0905-preview",
    # Moonshot sends the final counts inside the last choice, unasked.
    include_usage=False,
    usage_in_choice=True,
    cached_tokens_paths=(("cached_tokens",), *OPENAI_CACHED),
    reasoning_fields=("reasoning_content",),
    # kimi-k2-thinking: its reasoning_content must stay in context across a tool loop.
    reasoning_replay="tool_loop",
)

GLM = ChatProfile(
    name="glm",
    label="GLM (Z.ai / Zhipu)",
    default_base_url="https://api.z.ai/api/paas/v4",
    key_var="ZAI_API_KEY",
    key_required=True,
    base_url_var="ZAI_BASE_URL",
    default_model="glm-4.6",
    # GLM sends usage with the final chunk unasked.
    include_usage=False,
    reasoning_fields=("reasoning_content",),
    extra_finish_reasons={"sensitive": "refusal", "model_context_window_exceeded": "max_tokens"},
    error_finish_reasons={"network_error": "server"},
)

LLAMA_CPP = ChatProfile(
    name="llama.cpp",
    label="llama.cpp's llama-server",
    default_base_url="http://127.0.0.1:8080/v1",
    key_var="LLAMA_API_KEY",
    key_required=False,
    base_url_var="LLAMA_BASE_URL",
    # llama-server answers with the model it loaded, whatever the request names.
    default_model="local",
)

VLLM = ChatProfile(
    name="vllm",
    label="vLLM's OpenAI-compatible server",
    default_base_url="http://127.0.0.1:8000/v1",
    key_var="VLLM_API_KEY",
    key_required=False,
    base_url_var="VLLM_BASE_URL",
    max_tokens_param="max_completion_tokens",
    # vLLM's envelope is flat: {"object": "error", "message", "type", "code"}.
    error_message_paths=(("message",), ("error", "message")),
    error_code_paths=(("type",), ("error", "type")),
)

OLLAMA = ChatProfile(
    name="ollama",
    label="Ollama's OpenAI-compatible endpoint",
    default_base_url="http://127.0.0.1:11434/v1",
    key_var=None,
    key_required=False,
    base_url_var="OLLAMA_BASE_URL",
    reasoning_fields=("reasoning",),
)

PROFILES: dict[str, ChatProfile] = {
    profile.name: profile for profile in (GENERIC, DEEPSEEK, KIMI, GLM, LLAMA_CPP, VLLM, OLLAMA)
}
