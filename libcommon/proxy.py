"""Which proxy, if any, a request to a URL goes through: one pure function over the environment.

``resolve_proxy(url, env, override)`` returns the proxy URL or None (go direct).
The precedence, first match wins:

1. ``override`` (ax reads it from ``AX_PROXY``): an explicit choice, used for
   every URL, and ``NO_PROXY`` does not apply to it.
2. ``NO_PROXY`` / ``no_proxy`` matching the URL's host: go direct.
3. The protocol's variable: ``https_proxy`` / ``HTTPS_PROXY`` for https URLs;
   ``http_proxy`` for http URLs, and ``HTTP_PROXY`` too unless the process runs
   as a CGI script (``REQUEST_METHOD`` set: "httpoxy", a request header would
   become the proxy).
4. ``all_proxy`` / ``ALL_PROXY``.

For each name the lower-case spelling wins over the upper-case one, as curl
reads them. An empty value counts as unset. A value without a scheme means
``http://``. ``NO_PROXY`` is a list split on commas and white space; each entry
is ``*`` (every host), a host name (that host and its subdomains; a leading dot
or ``*.`` means the same), an IP address, a CIDR block (``10.0.0.0/8``,
``fd00::/8``), or any of these with ``:port`` (then only that port matches).

``proxy_source`` names the variable the answer came from, for messages and
events: the proxy URL itself may carry a user and password, so it is never
written anywhere, and only the name is.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

from .errors import UsageError

OVERRIDE_VAR = "AX_PROXY"
# SOCKS would need a package ax does not install: such a value is refused, not ignored.
PROXY_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def resolve_proxy(url: str, env: Mapping[str, str], override: str | None = None) -> str | None:
    """The proxy URL for a request to ``url``, or None to connect directly.

    Raises UsageError naming the variable (never its value) when the chosen
    value is not a proxy URL.
    """
    found = _resolve(url, env, override)
    return None if found is None else found[1]


def proxy_source(url: str, env: Mapping[str, str], override: str | None = None) -> str | None:
    """The variable ``resolve_proxy`` took its answer from (``AX_PROXY`` for the override)."""
    found = _resolve(url, env, override)
    return None if found is None else found[0]


def _resolve(url: str, env: Mapping[str, str], override: str | None) -> tuple[str, str] | None:
    if override is not None and override.strip():
        return OVERRIDE_VAR, _checked(OVERRIDE_VAR, override.strip())
    target = urlsplit(url)
    scheme = target.scheme.lower()
    host = (target.hostname or "").lower()
    try:
        port = target.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    if host and bypasses(host, port, _first(env, "no_proxy", "NO_PROXY")[1]):
        return None
    if scheme == "https":
        names: tuple[str, ...] = ("https_proxy", "HTTPS_PROXY")
    elif scheme == "http":
        names = ("http_proxy",) if env.get("REQUEST_METHOD") else ("http_proxy", "HTTP_PROXY")
    else:
        names = ()
    for group in (names, ("all_proxy", "ALL_PROXY")):
        name, value = _first(env, *group)
        if name is not None:
            return name, _checked(name, value)
    return None


def _first(env: Mapping[str, str], *names: str) -> tuple[str | None, str]:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return None, ""


def _checked(name: str, value: str) -> str:
    candidate = value if "://" in value else f"http://{value}"
    parts = urlsplit(candidate)
    try:
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme.lower() not in PROXY_SCHEMES or not parts.hostname:
        raise UsageError(
            f"{name} does not hold a proxy URL ax can use (the value is not shown: it may "
            "hold a password)",
            hint=f"set {name} to http://HOST:PORT (or https://HOST:PORT), or unset it",
        )
    return candidate


def bypasses(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether ``NO_PROXY``'s value ``no_proxy`` sends ``host`` (and ``port``) direct."""
    host = host.strip("[]").rstrip(".").lower()
    address = _address(host)
    for raw in no_proxy.replace(",", " ").split():
        entry = raw.lower()
        if entry == "*":
            return True
        entry_host, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if address is not None:
            if _address_matches(address, entry_host):
                return True
            continue
        name = entry_host.removeprefix("*").removeprefix(".").rstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        inner, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return inner, int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, int(port) if port.isdigit() else None
    return entry, None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _address_matches(address: ipaddress.IPv4Address | ipaddress.IPv6Address, entry: str) -> bool:
    try:
        network = ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
    return network.version == address.version and address in network
