"""Who a provider is, for the record, and the bounded probe that validates its key.

Keys come from the environment only. What is recorded of one is its variable's
name and whether it is set, never its value; the API host is recorded without
userinfo or path; and ``key_check`` says how the key was checked:

- ``probed ok``: ``GET <base>/models`` answered 2xx within ``PROBE_TIMEOUT_S``;
- ``probe failed: <kind>``: it did not, with the kind from the error taxonomy
  (``auth`` is a refused key; ``connection`` or ``timeout`` says nothing of it);
- ``not checked``: no probe was made (a session's start, or the script provider).

The probe goes through the provider's own route (the proxy ``resolve_proxy``
chose), follows no redirect, is never retried and reads none of the body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .base import Provider
from .errors import ErrorKind, kind_for_status
from .transport import Route

# Each phase of the probe (connecting, sending, the answer's head): a person is waiting.
PROBE_TIMEOUT_S = 5.0
NOT_CHECKED = "not checked"
PROBED_OK = "probed ok"
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True)
class Identity:
    """What ``session.started`` and ``provider.changed`` record of who answers."""

    key_var: str | None
    key_set: bool
    api_host: str | None
    key_check: str

    def fields(self) -> dict[str, Any]:
        return {
            "keyVar": self.key_var,
            "keySet": self.key_set,
            "apiHost": self.api_host,
            "keyCheck": self.key_check,
        }

    def described(self) -> str:
        if self.api_host is None:
            return "no server"
        key = (
            f"key {self.key_var} ({'set' if self.key_set else 'not set'})"
            if self.key_var
            else "no key"
        )
        return f"host {self.api_host}, {key}, {self.key_check}"


def available(environ: Mapping[str, str]) -> list[str]:
    """One line per provider: its name, its key variable and whether it is set, its host."""
    from . import PROVIDER_NAMES, anthropic, openai_responses
    from .profiles import PROFILES

    # The providers that are no chat profile: (key variable, base-URL variable, default).
    fixed = {
        "anthropic": (
            anthropic.API_KEY_VAR,
            anthropic.BASE_URL_VAR,
            anthropic.DEFAULT_ANTHROPIC_BASE_URL,
        ),
        "openai": (
            openai_responses.API_KEY_VAR,
            openai_responses.BASE_URL_VAR,
            openai_responses.DEFAULT_OPENAI_BASE_URL,
        ),
    }
    lines = []
    for name in PROVIDER_NAMES:
        profile = PROFILES.get(name)
        key_var: str | None
        if name in fixed:
            key_var, base_var, default = fixed[name]
            base = environ.get(base_var, "").strip() or default
        elif profile is not None:
            key_var = profile.key_var
            variable = environ.get(profile.base_url_var, "") if profile.base_url_var else ""
            base = variable.strip() or profile.default_base_url or ""
        else:
            lines.append(f"{name}: calls no server")
            continue
        key = "no key" if key_var is None else f"{key_var} "
        if key_var is not None:
            key += "set" if environ.get(key_var, "").strip() else "not set"
        host = api_host(base) if base else "a base URL you give"
        lines.append(f"{name}: {key}, {host}")
    return lines


def api_host(base_url: str) -> str:
    """The host (and a port other than the scheme's) of a base URL: no userinfo, no path."""
    parts = urlsplit(base_url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port is not None else host


def identity(
    provider: Provider, environ: Mapping[str, str], key_check: str = NOT_CHECKED
) -> Identity:
    """The provider's identity, read from the attributes network providers carry."""
    base_url = getattr(provider, "base_url", None)
    key_var = getattr(provider, "key_var", None)
    if not isinstance(base_url, str):
        return Identity(None, False, None, NOT_CHECKED)
    key_set = bool(key_var and environ.get(key_var, "").strip())
    return Identity(key_var, key_set, api_host(base_url), key_check)


def probe(provider: Provider, environ: Mapping[str, str]) -> Identity:
    """The identity after a bounded ``GET /models`` with the provider's key."""
    base_url = getattr(provider, "base_url", None)
    route = getattr(provider, "route", None)
    if not isinstance(base_url, str) or not isinstance(route, Route):
        return identity(provider, environ)
    key_var = getattr(provider, "key_var", None)
    key = environ.get(key_var, "").strip() if key_var else ""
    headers: dict[str, str] = {}
    if provider.name == "anthropic":
        url = f"{base_url.rstrip('/')}/v1/models"
        headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    else:
        url = f"{base_url.rstrip('/')}/models"
        if key:
            headers = {"Authorization": f"Bearer {key}"}
    kind = _probe(url, headers, route)
    return identity(provider, environ, PROBED_OK if kind is None else f"probe failed: {kind}")


def _probe(url: str, headers: dict[str, str], route: Route) -> ErrorKind | None:
    import httpx

    try:
        with (
            httpx.Client(timeout=PROBE_TIMEOUT_S, **route.client_options()) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            status = response.status_code
    except httpx.TimeoutException:
        return "timeout"
    except httpx.HTTPError:
        return "connection"
    if 200 <= status < 300:
        return None
    return kind_for_status(status) if status >= 400 else "protocol"
