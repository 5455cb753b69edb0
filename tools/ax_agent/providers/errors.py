"""The one taxonomy of provider failures, shared by every provider.

Each failure is one ``ErrorKind``. The kind decides whether the same request may
succeed later (``RETRYABLE_KINDS``), and the retry loop in streaming.py gives a
rate limit a deeper budget than the other transient kinds, because a throttle
is expected to clear. What a kind means:

- ``auth`` (401, or a missing key), ``permission`` (403), ``not_found`` (404:
  the model or the endpoint), ``bad_request`` (another 4xx), ``quota`` (402, or
  a 429 that says the account is out of credit: waiting does not help),
  ``context_too_long`` (the request does not fit the model's window);
- ``rate_limit`` (429), ``overloaded`` (529, 503 or an overloaded error),
  ``server`` (another 5xx), ``connection`` (no answer: refused, reset, DNS, TLS,
  the proxy, a connect timeout): these are retried, in the connection phase only,
  except a proxy's 407 (its credentials will not change between attempts);
- ``timeout`` (the server went silent past the read timeout: waiting that long
  again helps no one), ``truncated`` (the stream ended before the response was
  complete), ``protocol`` (the server sent something that is not the wire
  format), ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, get_args

ErrorKind = Literal[
    "auth",
    "permission",
    "not_found",
    "bad_request",
    "quota",
    "context_too_long",
    "rate_limit",
    "overloaded",
    "server",
    "connection",
    "timeout",
    "truncated",
    "protocol",
    "other",
]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)
RETRYABLE_KINDS: frozenset[ErrorKind] = frozenset(
    {"rate_limit", "overloaded", "server", "connection"}
)
# How much of a server's own error message goes into ours.
ERROR_MESSAGE_MAX_CHARS = 500

# Error types and codes the providers use (Anthropic's error.type, OpenAI's and the
# chat-compatible servers' error.type or error.code), lower-cased.
_KIND_BY_CODE: dict[str, ErrorKind] = {
    "authentication_error": "auth",
    "invalid_api_key": "auth",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "model_not_found": "not_found",
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "insufficient_quota": "quota",
    "billing_error": "quota",
    "exceeded_current_quota_error": "quota",
    "context_length_exceeded": "context_too_long",
    "exceed_context_size_error": "context_too_long",
    "request_too_large": "context_too_long",
    "string_above_max_length": "context_too_long",
    # GLM (Zhipu / Z.ai) numeric codes: out of balance, and a prompt over the window.
    "1113": "quota",
    "1261": "context_too_long",
}
# Codes too generic to overrule an HTTP status (OpenAI labels many answers, a 429's among
# them, server_error): they name the kind only of a failure reported inside a 200 stream.
_KIND_BY_STREAM_CODE: dict[str, ErrorKind] = {"server_error": "server"}
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|prompt is too long|too many tokens"
    r"|input is too long|reduce the length|exceeds? the (model's )?(context|maximum)",
    re.IGNORECASE,
)
_QUOTA_WORDS = re.compile(
    r"insufficient[ _](balance|quota)|quota exceeded|exceeded your current quota|billing",
    re.IGNORECASE,
)


def value_at(data: object, path: Sequence[str]) -> object:
    """What a decoded JSON document holds at ``path`` (object keys), or None."""
    for name in path:
        if not isinstance(data, dict):
            return None
        data = data.get(name)
    return data


def read_envelope(
    data: object,
    message_paths: Sequence[Sequence[str]],
    code_paths: Sequence[Sequence[str]],
    fallback: str,
) -> tuple[str, str | None]:
    """The message and the type or code of a decoded error envelope.

    Each is taken from the first of its paths that holds one; the message is
    ``fallback`` when none does, and is cut to ``ERROR_MESSAGE_MAX_CHARS``.
    """
    message = next(
        (str(v) for p in message_paths if isinstance(v := value_at(data, p), str) and v),
        fallback,
    )
    code = next(
        (
            str(v)
            for p in code_paths
            if isinstance(v := value_at(data, p), str | int) and not isinstance(v, bool)
        ),
        None,
    )
    return message[:ERROR_MESSAGE_MAX_CHARS], code


def kind_for_status(status: int, code: str | None = None, message: str = "") -> ErrorKind:
    """The kind of an HTTP error answer, from its status, its error type or code, and its text.

    A code the table knows wins over the status (an Anthropic 529 and an
    ``overloaded_error`` event mean the same), except that a 2xx status never
    makes a failure retryable on its own.
    """
    known = _KIND_BY_CODE.get((code or "").lower())
    if known is None and 200 <= status < 300:
        known = _KIND_BY_STREAM_CODE.get((code or "").lower())
    if known is not None:
        return known
    if status in (400, 413, 422) and _CONTEXT_WORDS.search(message):
        return "context_too_long"
    if status in (402,) or (status in (400, 403, 429) and _QUOTA_WORDS.search(message)):
        return "quota"
    if status == 407:
        # The proxy, not the server, refused: its credentials are wrong or missing.
        return "connection"
    if status == 401:
        return "auth"
    if status == 403:
        return "permission"
    if status == 404:
        return "not_found"
    if status == 413:
        return "context_too_long"
    if status == 429:
        return "rate_limit"
    if status in (503, 529):
        return "overloaded"
    if status >= 500 or status == 408:
        return "server"
    if status >= 400:
        return "bad_request"
    return "other"


def hint_for(kind: ErrorKind, key_var: str | None) -> str:
    """What a person can do about a failure of this kind."""
    key = key_var or "the provider's key variable"
    return {
        "auth": f"the server refused the key: set or check {key}",
        "permission": f"the key in {key} may not use this model or endpoint",
        "not_found": "check the model name (--model) and the base URL",
        "bad_request": "the server refused the request; the message says why",
        "quota": "the account is out of credit or quota; waiting will not help",
        "context_too_long": "the conversation no longer fits the model's window: /clear, or "
        "choose a model with a larger window",
        "rate_limit": "rate limited: wait a little and try again",
        "overloaded": "the server is overloaded: try again shortly",
        "server": "the server is failing: try again shortly",
        "connection": "check the network, the base URL and the proxy variables",
        "timeout": "the server went silent; try again, or a smaller request",
        "truncated": "nothing of the partial answer was kept; send the request again",
        "protocol": "is the base URL an endpoint of this provider's wire format?",
        "other": "send the request again",
    }[kind]
