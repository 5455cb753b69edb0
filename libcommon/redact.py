"""The one secret redactor.

Everything ax persists or shows passes through ``redact`` first. The patterns
aim at secret *shapes* (provider key formats, bearer tokens, private-key blocks,
URL userinfo, ``*_TOKEN=`` style assignments); a false positive costs a few
characters of a log, a false negative leaks a credential, so they lean wide.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

# (kind, pattern): the whole match is the secret.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}")),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
]

# These keep a prefix (the scheme, the header word, the variable name) so the
# redacted text still says what was there.
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9._~+/=-]{8,})")
# Greedy up to the last '@' of the authority, so a password holding '@' is covered.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s?#]+)@")
_SECRET_NAME = (
    r"[A-Z0-9_.-]*(?:_TOKEN|_KEY|_SECRET|_PASSWORD|_PASSWD|_PAT|_CREDENTIALS?)"
    r"|PASSWORD|SECRET|TOKEN|API_?KEY"
)
# NAME=value, NAME: value, "NAME": "value"; a quoted value is covered up to its closing quote.
_ASSIGNMENT = re.compile(
    rf"""(?i)\b({_SECRET_NAME})(["']?\s*[:=]\s*)(?:(["'])(.*?)\3|([^\s"',;]+))"""
)
_SECRET_KEY_NAME = re.compile(rf"(?i)(?:{_SECRET_NAME})")
_HEADER = re.compile(r"(?i)\b((?:x-api-key|api-key|authorization|cookie)\s*:\s*)([^\r\n]+)")


def redact(text: str) -> str:
    """Replace every secret-shaped substring of ``text`` with a marker."""
    for kind, pattern in _PATTERNS:
        text = pattern.sub(f"[REDACTED:{kind}]", text)
    text = _HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _BEARER.sub(_redact_scheme_token, text)
    text = _URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    return _ASSIGNMENT.sub(_redact_assignment, text)


def _redact_scheme_token(match: re.Match[str]) -> str:
    value = match.group(3)
    # Prose ("Basic configuration", "the token returned") has no digits or base64
    # punctuation; real credentials almost always do, or are long.
    if not (re.search(r"[0-9+/=]", value) or len(value) >= 24):
        return match.group(0)
    return match.group(1) + match.group(2) + REDACTED


def _redact_assignment(match: re.Match[str]) -> str:
    name, separator, quote, quoted, bare = match.groups()
    value = quoted if quote else bare
    if value.startswith("[REDACTED") or value.startswith("$"):
        # Already redacted, or a reference like $API_KEY rather than a value.
        return match.group(0)
    quote = quote or ""
    return f"{name}{separator}{quote}{REDACTED}{quote}"


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-shaped value.

    Dict keys are kept; a string stored under a secret-named key (``DB_PASSWORD``,
    ``api_key``) is replaced whole, whatever it looks like.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            key: REDACTED
            if isinstance(item, str)
            and isinstance(key, str)
            and _SECRET_KEY_NAME.fullmatch(key)
            and not item.startswith("$")
            else redact_value(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value
