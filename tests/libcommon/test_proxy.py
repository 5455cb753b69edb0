"""resolve_proxy: the stated precedence, NO_PROXY's forms, and values that are refused by name."""

from __future__ import annotations

import pytest

from libcommon.errors import UsageError
from libcommon.proxy import bypasses, proxy_source, resolve_proxy

P = "http://proxy:3128"
Q = "http://other:8080"


@pytest.mark.parametrize(
    ("url", "env", "override", "expected"),
    [
        ("https://api.x.com/v1", {}, None, None),
        ("https://api.x.com/v1", {"HTTPS_PROXY": P}, None, P),
        ("https://api.x.com/v1", {"https_proxy": P, "HTTPS_PROXY": Q}, None, P),
        ("https://api.x.com/v1", {"HTTP_PROXY": P}, None, None),
        ("http://api.x.com/v1", {"HTTP_PROXY": P}, None, P),
        ("http://api.x.com/v1", {"http_proxy": P, "HTTP_PROXY": Q}, None, P),
        ("http://api.x.com/v1", {"HTTPS_PROXY": P}, None, None),
        # The protocol's variable beats ALL_PROXY; ALL_PROXY serves both protocols.
        ("https://api.x.com", {"ALL_PROXY": Q, "HTTPS_PROXY": P}, None, P),
        ("https://api.x.com", {"ALL_PROXY": Q}, None, Q),
        ("http://api.x.com", {"all_proxy": P, "ALL_PROXY": Q}, None, P),
        # An empty value is unset.
        ("https://api.x.com", {"HTTPS_PROXY": "", "ALL_PROXY": Q}, None, Q),
        # NO_PROXY overrides an environment proxy ...
        ("https://api.x.com", {"HTTPS_PROXY": P, "NO_PROXY": "x.com"}, None, None),
        ("https://api.x.com", {"ALL_PROXY": P, "no_proxy": "*"}, None, None),
        # ... but not the explicit override, which wins over everything.
        ("https://api.x.com", {"HTTPS_PROXY": P, "NO_PROXY": "*"}, Q, Q),
        ("https://api.x.com", {}, Q, Q),
        ("https://api.x.com", {"HTTPS_PROXY": P}, "  ", P),
        # No scheme means http://.
        ("https://api.x.com", {"HTTPS_PROXY": "proxy:3128"}, None, P),
        # httpoxy: under CGI, HTTP_PROXY may be a request header; only http_proxy counts.
        ("http://api.x.com", {"HTTP_PROXY": P, "REQUEST_METHOD": "GET"}, None, None),
        ("http://api.x.com", {"http_proxy": P, "REQUEST_METHOD": "GET"}, None, P),
    ],
)
def test_precedence(
    url: str, env: dict[str, str], override: str | None, expected: str | None
) -> None:
    assert resolve_proxy(url, env, override) == expected


def test_source_names_the_variable_never_the_value() -> None:
    assert proxy_source("https://a.b", {"https_proxy": P}) == "https_proxy"
    assert proxy_source("https://a.b", {"ALL_PROXY": P}) == "ALL_PROXY"
    assert proxy_source("https://a.b", {}, Q) == "AX_PROXY"
    assert proxy_source("https://a.b", {"NO_PROXY": "a.b", "ALL_PROXY": P}) is None


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "expected"),
    [
        ("api.x.com", 443, "x.com", True),
        ("x.com", 443, "x.com", True),
        ("api.x.com", 443, ".x.com", True),
        ("x.com", 443, ".x.com", True),
        ("api.x.com", 443, "*.x.com", True),
        ("notx.com", 443, "x.com", False),
        ("api.x.com", 443, "y.com, x.com", True),
        ("api.x.com", 443, "y.com x.com", True),
        ("API.X.COM", 443, "x.com", True),
        ("api.x.com.", 443, "x.com", True),
        ("api.x.com", 443, "x.com:443", True),
        ("api.x.com", 8443, "x.com:443", False),
        ("10.1.2.3", 80, "10.0.0.0/8", True),
        ("11.1.2.3", 80, "10.0.0.0/8", False),
        ("10.1.2.3", 80, "10.1.2.3", True),
        ("127.0.0.1", 80, "localhost", False),
        ("::1", 80, "::1", True),
        ("[::1]", 80, "[::1]:80", True),
        ("fd00::5", 80, "fd00::/8", True),
        ("10.1.2.3", 80, "::/0", False),
        ("anything", None, "*", True),
        ("a.com", 443, "", False),
    ],
)
def test_no_proxy_forms(host: str, port: int | None, no_proxy: str, expected: bool) -> None:
    assert bypasses(host, port, no_proxy) is expected


def test_no_proxy_reads_the_url_host_and_default_port() -> None:
    env = {"HTTPS_PROXY": P, "NO_PROXY": "[::1],api.x.com:443"}
    assert resolve_proxy("https://[::1]:8000/v1", env) is None
    assert resolve_proxy("https://api.x.com/v1", env) is None
    assert resolve_proxy("https://api.x.com:8443/v1", env) == P


@pytest.mark.parametrize(
    "value", ["socks5://user:hunter2@host:1080", "ftp://host", "http://", "http://h:port"]
)
def test_an_unusable_value_is_refused_by_name_without_showing_it(value: str) -> None:
    with pytest.raises(UsageError) as caught:
        resolve_proxy("https://a.b", {"HTTPS_PROXY": value})
    assert "HTTPS_PROXY" in caught.value.message
    assert "hunter2" not in f"{caught.value.message} {caught.value.hint}"
    assert value not in caught.value.message


def test_pure_reads_only_the_mapping_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", P)
    assert resolve_proxy("https://a.b", {}) is None
