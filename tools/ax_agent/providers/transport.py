"""How every provider's HTTP client is built: the proxy from libcommon.proxy, CAs, timeouts.

The clients never read the environment themselves (``trust_env=False``): the
proxy comes from ``resolve_proxy`` over the environment the session was given,
so one precedence holds for every network path. ``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` still name the CAs to trust (a proxy that inspects TLS signs
with its own), as they would for httpx reading the environment.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from libcommon.errors import UsageError
from libcommon.proxy import OVERRIDE_VAR, proxy_source, resolve_proxy
from libcommon.redact import redact

CA_FILE_VAR = "SSL_CERT_FILE"
CA_DIR_VAR = "SSL_CERT_DIR"


@dataclass(frozen=True)
class Route:
    """How requests to one base URL travel; ``proxy`` is never shown, ``via`` may be."""

    proxy: str | None = field(repr=False)
    # The variable that chose the proxy (for messages), or None when direct.
    via: str | None
    verify: ssl.SSLContext | bool = field(repr=False)

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``httpx.Client`` (and the SDK's ``DefaultHttpxClient``)."""
        return {"proxy": self.proxy, "verify": self.verify, "trust_env": False}

    def scrub(self, text: str) -> str:
        """``text`` without the proxy URL (whose userinfo may be a password) or other secrets."""
        if self.proxy:
            text = text.replace(self.proxy, f"the proxy named by {self.via}")
        return redact(text)

    def status_message(self, url: str, status: int, detail: str) -> str:
        """The words for an HTTP error answer, naming the proxy when it is the proxy's 407."""
        if status == 407:
            return f"the proxy named by {self.via} refused the request to {url} (HTTP 407)"
        return f"{url} answered HTTP {status}: {detail}"

    def described(self) -> str:
        return f"through the proxy named by {self.via}" if self.via else "directly"


def route(url: str, environ: Mapping[str, str]) -> Route:
    """The route to ``url``. Raises UsageError for a proxy variable that holds no proxy URL."""
    override = environ.get(OVERRIDE_VAR)
    proxy = resolve_proxy(url, environ, override)
    via = proxy_source(url, environ, override) if proxy else None
    return Route(proxy, via, _verify(environ))


def _verify(environ: Mapping[str, str]) -> ssl.SSLContext | bool:
    cafile = environ.get(CA_FILE_VAR, "").strip() or None
    capath = environ.get(CA_DIR_VAR, "").strip() or None
    if cafile is None and capath is None:
        return True
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(
            f"cannot load the CA certificates {CA_FILE_VAR} or {CA_DIR_VAR} names: {exc}",
            hint=f"point {CA_FILE_VAR} at a PEM file of certificates, or unset it",
        ) from None
