"""The research host, its key variable and the allowance, from the USER configuration only.

``research`` in ``<state>/config.json`` (the workspace layer cannot hold the key:
a repository must never choose where its agent's queries go, nor how many):

    {"research": {"baseUrl": "https://api.tavily.com", "keyVar": "TAVILY_API_KEY",
                  "limits": {"searches": 10, "extracts": 10, "credits": 20, "chars": 200000}}}

Every key is optional. ``baseUrl`` names the one host the research tools reach:
https, or http only to a loopback address (a local stand-in for the provider);
no user, query or fragment. The limits may only be lowered: each is capped by
the harness's ceiling of the same name. The key itself is read from the
environment variable ``keyVar`` names, like the model providers' keys, and
never recorded.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator

from libcommon.contracts import Contract

from .errors import ResearchError

DEFAULT_BASE_URL = "https://api.tavily.com"
DEFAULT_KEY_VAR = "TAVILY_API_KEY"
# The session's allowance ceilings (all research calls of a session and its researchers,
# together); the user configuration may set each lower, never higher.
MAX_SEARCHES = 20
MAX_EXTRACTS = 20
MAX_CREDITS = 40
MAX_CHARS = 400_000
BASE_URL_MAX_CHARS = 2048
KEY_VAR_PATTERN = r"^[A-Z][A-Z0-9_]{0,63}$"


class ResearchLimits(Contract):
    searches: Annotated[int, Field(ge=0, le=MAX_SEARCHES)] = MAX_SEARCHES
    extracts: Annotated[int, Field(ge=0, le=MAX_EXTRACTS)] = MAX_EXTRACTS
    credits: Annotated[int, Field(ge=0, le=MAX_CREDITS)] = MAX_CREDITS
    chars: Annotated[int, Field(ge=0, le=MAX_CHARS)] = MAX_CHARS


class ResearchSettings(Contract):
    base_url: Annotated[str, Field(min_length=1, max_length=BASE_URL_MAX_CHARS)] = DEFAULT_BASE_URL
    key_var: Annotated[str, Field(pattern=KEY_VAR_PATTERN)] = DEFAULT_KEY_VAR
    limits: ResearchLimits = Field(default_factory=ResearchLimits)

    @field_validator("base_url")
    @classmethod
    def _one_host(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("an https:// URL naming the research provider's host")
        if parts.username is not None or parts.password is not None:
            raise ValueError("no user or password in the URL (the key comes from keyVar)")
        if parts.query or parts.fragment:
            raise ValueError("no query or fragment in the URL")
        if parts.scheme == "http" and not _loopback(parts.hostname):
            raise ValueError("http:// only to a loopback address; use https://")
        return value.rstrip("/")

    @property
    def host(self) -> str:
        parts = urlsplit(self.base_url)
        return parts.hostname or ""


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def research_settings(raw: Mapping[str, Any] | None) -> ResearchSettings:
    """The settings from the user configuration's ``research`` value (None: defaults)."""
    try:
        return ResearchSettings.model_validate(dict(raw or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "research"
        raise ResearchError(
            "not-configured",
            f"the user configuration's research.{where} is not usable: {first['msg']} "
            "(fix it in <state>/config.json)",
        ) from None


def api_key(settings: ResearchSettings, environ: Mapping[str, str]) -> str:
    """The provider key from the environment; ``no-key`` naming the variable when unset."""
    key = environ.get(settings.key_var, "").strip()
    if not key:
        raise ResearchError(
            "no-key",
            f"{settings.key_var} is not set: web research needs the provider's API key "
            f"in that environment variable (the name is research.keyVar in the user config)",
        )
    return key
