"""URLs as identifiers: checked as written, never escaped, never fetched by ax.

A URL a model names is an identifier the provider resolves on its own
infrastructure, so ax owns no redirect policy and no SSRF guard; still, one
that names this machine or a private network is refused outright (the
provider may be a local stand-in, and a private address is never a source).
``checked_url`` refuses, naming why: a secret-shaped value (a token in a query
string would leave this machine), a value ``sanitise`` would alter (control,
invisible or bidi characters, marker text, surrounding space), a scheme but
http(s), a user or password, no host, a bare IP host in any spelling
(dotted, integer, hex, octal, IPv6), a loopback, private or link-local name
(``localhost``, ``*.local``, ``*.internal``, a name without a dot).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from libcommon.redact import redact

from .errors import ResearchError
from .untrusted import sanitise

URL_MAX_CHARS = 2048
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa", ".intranet")
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$", re.IGNORECASE)


def _refuse(raw: str, why: str) -> ResearchError:
    shown = raw if len(raw) <= 200 else raw[:199] + "…"
    return ResearchError("url-refused", f"{shown!r} is refused: {why}")


def checked_url(raw: str) -> str:
    """``raw`` when it may name a source as written, else ``url-refused`` naming why."""
    if not raw:
        raise _refuse(raw, "it is empty")
    if len(raw) > URL_MAX_CHARS:
        raise _refuse(raw, f"it is longer than {URL_MAX_CHARS} characters")
    if sanitise(raw) != raw or raw != raw.strip() or any(c.isspace() for c in raw):
        raise _refuse(
            raw,
            "it holds space, control, invisible or marker characters; a URL is an "
            "identifier, so it is refused rather than altered",
        )
    if redact(raw) != raw:
        raise _refuse(raw, "it holds a secret-shaped value, which would leave this machine")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise _refuse(raw, f"it is not a URL ({exc})") from None
    del port
    if parts.scheme.lower() not in ("http", "https"):
        raise _refuse(raw, "only http and https URLs name web sources")
    if parts.username is not None or parts.password is not None:
        raise _refuse(raw, "it carries a user or password")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise _refuse(raw, "it names no host")
    refusal = _host_refusal(host)
    if refusal is not None:
        raise _refuse(raw, refusal)
    return raw


def checked_query(text: str) -> str:
    """``text`` when it may be sent to the provider as written, else ``query-refused``.

    A query leaves this machine, so one holding a secret-shaped value (a key, a
    token, a private key) is refused rather than redacted, and so is one that
    sanitising would alter (control or invisible characters, marker text): what
    the person approved is what is sent.
    """
    if redact(text) != text:
        raise ResearchError(
            "query-refused",
            "the query holds a secret-shaped value (a key or token), which would leave this "
            "machine; ask without it",
        )
    if sanitise(text) != text:
        raise ResearchError(
            "query-refused",
            "the query holds control, invisible or marker characters; write it as plain text",
        )
    return text


def _host_refusal(host: str) -> str | None:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is not None or _NUMERIC_HOST.fullmatch(host):
        return "its host is a bare IP address (a source is named by its host name)"
    if not host.isascii():
        return "its host is not ASCII (write an internationalised name in its xn-- form)"
    name = host.lower()
    if name == "localhost" or name.endswith(LOCAL_SUFFIXES):
        return "its host names this machine or a private network"
    if "." not in name:
        return "its host has no dot, a name only a private network resolves"
    return None


def source_key(url: str) -> str:
    """What makes two sources distinct: the normalised host and path.

    Case-folded host without ``www.`` and a trailing dot, the path without a
    trailing slash; scheme, port, query and fragment do not make another source.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower().removeprefix("www.")
    path = parts.path.rstrip("/")
    return f"{host}{path}"
