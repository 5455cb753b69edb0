"""Every network path goes through resolve_proxy: a real recording proxy on loopback.

Plain-HTTP targets are forwarded by the proxy; HTTPS targets go through a CONNECT
tunnel to a TLS fake server whose self-signed certificate SSL_CERT_FILE names.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent.providers.fakes import FakeServer, anthropic_text_reply, openai_text_reply
from agent.providers.proxyserver import Forwarded, RecordingProxy

from ax_agent.providers import (
    Message,
    ProviderError,
    ProviderRequest,
    TextBlock,
    make_provider,
    streaming,
)
from ax_agent.providers.registry import probe

ANTHROPIC_KEY = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789"
OPENAI_KEY = "sk-proj-FAKEfakeFAKEfake0123456789abcdef"
PASSWORD = "pr0xyS3cretPassw0rd"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "BACKOFF_BASE_S", 0.01)


@pytest.fixture
def proxy() -> Iterator[RecordingProxy]:
    recording = RecordingProxy()
    yield recording
    recording.close()


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: no certificate for the TLS server")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[FakeServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    server = FakeServer(tls=context)
    yield server
    server.close()


def request() -> ProviderRequest:
    return ProviderRequest("", [Message("user", [TextBlock("hi")])], [], "", 64)


def chat(server: FakeServer, **environ: str) -> object:
    return make_provider(
        "openai-compatible", model="m", base_url=f"{server.url}/v1", script=None, environ=environ
    )


def test_plain_http_goes_through_http_proxy(server: FakeServer, proxy: RecordingProxy) -> None:
    server.plan(openai_text_reply(["via proxy"]))
    provider = chat(server, HTTP_PROXY=proxy.url())
    assert provider.complete(request()).text == "via proxy"  # type: ignore[attr-defined]
    assert proxy.seen == [Forwarded("POST", f"{server.url}/v1/chat/completions", False)]
    assert len(server.requests) == 1


def test_no_proxy_sends_it_direct(server: FakeServer, proxy: RecordingProxy) -> None:
    server.plan(openai_text_reply(["direct"]))
    provider = chat(server, HTTP_PROXY=proxy.url(), NO_PROXY="localhost,127.0.0.0/8")
    assert provider.complete(request()).text == "direct"  # type: ignore[attr-defined]
    assert proxy.seen == []


def test_the_override_beats_no_proxy(server: FakeServer, proxy: RecordingProxy) -> None:
    server.plan(openai_text_reply(["forced"]))
    provider = chat(server, AX_PROXY=proxy.url(), NO_PROXY="*")
    assert provider.complete(request()).text == "forced"  # type: ignore[attr-defined]
    assert [f.method for f in proxy.seen] == ["POST"]


def test_the_client_ignores_what_resolve_proxy_did_not_choose(
    server: FakeServer, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process environment names the proxy, the session's does not: direct.
    monkeypatch.setenv("HTTP_PROXY", proxy.url())
    monkeypatch.setenv("ALL_PROXY", proxy.url())
    server.plan(openai_text_reply(["direct"]))
    assert chat(server).complete(request()).text == "direct"  # type: ignore[attr-defined]
    assert proxy.seen == []


def test_the_responses_provider_goes_through_the_chosen_proxy(
    server: FakeServer, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.providers.responses_fakes import text_reply

    # What the process environment names is not the session's choice.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    server.plan(text_reply("via proxy"))
    environ = {
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "http_proxy": proxy.url(),
    }
    provider = make_provider("openai", model="gpt-5", base_url=None, script=None, environ=environ)
    assert provider.complete(request()).text == "via proxy"
    assert proxy.seen == [Forwarded("POST", f"{server.url}/v1/responses", False)]


def test_a_proxy_refusing_the_responses_provider_never_shows_its_url(
    server: FakeServer,
) -> None:
    proxy = RecordingProxy(credentials=("ax", "right"))
    try:
        environ = {
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "ALL_PROXY": proxy.url(f"ax:{PASSWORD}"),
        }
        provider = make_provider("openai", model="m", base_url=None, script=None, environ=environ)
        with pytest.raises(ProviderError) as caught:
            provider.complete(request())
        error = caught.value
        text = f"{error.message} {error.hint} {error!r}"
        assert PASSWORD not in text and str(proxy.port) not in text and OPENAI_KEY not in text
        assert "ALL_PROXY" in error.message
        assert (error.kind, error.retryable) == ("connection", False)
        assert server.requests == [] and len(proxy.seen) == 1
    finally:
        proxy.close()


def test_anthropic_sdk_tunnels_https_through_connect_with_credentials(
    tls_server: FakeServer, certificate: tuple[Path, Path]
) -> None:
    proxy = RecordingProxy(credentials=("ax", PASSWORD))
    try:
        tls_server.plan(anthropic_text_reply(["tunnelled"]))
        environ = {
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "ANTHROPIC_BASE_URL": tls_server.url,
            "https_proxy": proxy.url(f"ax:{PASSWORD}"),
            "SSL_CERT_FILE": str(certificate[0]),
        }
        provider = make_provider(
            "anthropic", model="c", base_url=None, script=None, environ=environ
        )
        assert provider.complete(request()).text == "tunnelled"
        port = tls_server.httpd.server_address[1]
        assert proxy.seen == [Forwarded("CONNECT", f"localhost:{port}", True)]
        assert tls_server.requests[0].path == "/v1/messages"
    finally:
        proxy.close()


def test_the_key_probe_goes_through_the_proxy(
    tls_server: FakeServer, certificate: tuple[Path, Path], proxy: RecordingProxy
) -> None:
    tls_server.plan(anthropic_text_reply(["models"]))
    environ = {
        "DEEPSEEK_API_KEY": "sk-deepseekFAKEfakeFAKEfake0123",
        "DEEPSEEK_BASE_URL": f"{tls_server.url}/v1",
        "HTTPS_PROXY": proxy.url(),
        "SSL_CERT_FILE": str(certificate[0]),
    }
    provider = make_provider("deepseek", model=None, base_url=None, script=None, environ=environ)
    assert probe(provider, environ).key_check == "probed ok"
    assert [f.method for f in proxy.seen] == ["CONNECT"]
    assert tls_server.requests[0].path == "/v1/models"


def test_a_refusing_proxy_is_a_connection_error_that_never_shows_its_url(
    server: FakeServer,
) -> None:
    proxy = RecordingProxy(credentials=("ax", "right"))
    try:
        provider = chat(server, HTTP_PROXY=proxy.url(f"ax:{PASSWORD}"))
        with pytest.raises(ProviderError) as caught:
            provider.complete(request())  # type: ignore[attr-defined]
        error = caught.value
        text = f"{error.message} {error.hint} {error!r}"
        assert PASSWORD not in text and str(proxy.port) not in text
        assert "HTTP_PROXY" in error.message
        assert (error.kind, error.retryable) == ("connection", False)
        assert server.requests == [] and len(proxy.seen) == 1
    finally:
        proxy.close()


def test_a_refused_tunnel_never_shows_the_proxy_url(
    tls_server: FakeServer, certificate: tuple[Path, Path]
) -> None:
    proxy = RecordingProxy(credentials=("ax", "right"))
    try:
        environ = {
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "ANTHROPIC_BASE_URL": tls_server.url,
            "HTTPS_PROXY": proxy.url(f"ax:{PASSWORD}"),
            "SSL_CERT_FILE": str(certificate[0]),
        }
        provider = make_provider(
            "anthropic", model="c", base_url=None, script=None, environ=environ
        )
        with pytest.raises(ProviderError) as caught:
            provider.complete(request())
        error = caught.value
        text = f"{error.message} {error.hint} {error!r}"
        assert PASSWORD not in text and str(proxy.port) not in text
        assert "HTTPS_PROXY" in error.message and error.kind == "connection"
        assert tls_server.requests == []
    finally:
        proxy.close()


def test_a_session_through_a_proxy_writes_neither_its_url_nor_its_password(
    server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    proxy = RecordingProxy(credentials=("ax", PASSWORD))
    state = tmp_path / "state"
    try:
        server.plan(openai_text_reply(["answered through the proxy"]))
        proxy_url = proxy.url(f"ax:{PASSWORD}")
        env = {
            **{k: v for k, v in os.environ.items() if "proxy" not in k.lower()},
            "AX_STATE_DIR": str(state),
            "HTTP_PROXY": proxy_url,
        }
        agent = Path(sys.executable).parent / "ax-agent"
        argv = [
            str(agent), "-C", str(workspace), "--provider", "openai-compatible",
            "--base-url", f"{server.url}/v1", "--model", "m", "-p", "hi",
            "--trust-this-workspace",
        ]  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "answered through the proxy"
        assert [f.method for f in proxy.seen] == ["POST"]
        written = [p for p in state.rglob("*") if p.is_file()]
        assert any(p.suffix == ".jsonl" for p in written)
        for needle in (PASSWORD, proxy_url, f"127.0.0.1:{proxy.port}"):
            assert needle not in done.stdout + done.stderr
            for path in written:
                assert needle.encode() not in path.read_bytes(), path
    finally:
        proxy.close()
