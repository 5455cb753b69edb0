"""The registry: identities (names and presence, never values), the bounded key probe, /provider."""

from __future__ import annotations

import json
import socket
import time
from types import SimpleNamespace
from typing import Any

import pytest
from agent.providers.fakes import FakeServer, Reply

from ax_agent.providers import Provider, make_provider, registry
from ax_agent.providers.registry import api_host, available, identity, probe
from ax_agent.terminal import commands
from libcommon.errors import OperationFailed

DEEPSEEK_KEY = "sk-deepseekFAKEfakeFAKEfake0123"
ANTHROPIC_KEY = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789"
MODELS = Reply(chunks=[b'{"object": "list", "data": [{"id": "deepseek-chat"}]}'])


def deepseek(server: FakeServer, key: str = DEEPSEEK_KEY) -> tuple[Provider, dict[str, str]]:
    environ = {"DEEPSEEK_API_KEY": key, "DEEPSEEK_BASE_URL": f"{server.url}/v1"}
    return make_provider(
        "deepseek", model=None, base_url=None, script=None, environ=environ
    ), environ


def test_probe_ok_records_names_host_and_how(server: FakeServer) -> None:
    server.plan(MODELS)
    provider, environ = deepseek(server)
    checked = probe(provider, environ)
    assert checked.fields() == {
        "keyVar": "DEEPSEEK_API_KEY",
        "keySet": True,
        "apiHost": f"127.0.0.1:{server.httpd.server_address[1]}",
        "keyCheck": "probed ok",
    }
    sent = server.requests[0]
    assert sent.path == "/v1/models"
    assert sent.headers["authorization"] == f"Bearer {DEEPSEEK_KEY}"
    assert DEEPSEEK_KEY not in json.dumps(checked.fields()) + checked.described()


@pytest.mark.parametrize(("status", "kind"), [(401, "auth"), (403, "permission"), (500, "server")])
def test_probe_failures_carry_their_kind(server: FakeServer, status: int, kind: str) -> None:
    server.plan(Reply(status, chunks=[b'{"error": {"message": "no"}}']))
    provider, environ = deepseek(server)
    assert probe(provider, environ).key_check == f"probe failed: {kind}"
    assert len(server.requests) == 1  # never retried


def test_anthropic_probe_uses_its_own_headers(server: FakeServer) -> None:
    server.plan(MODELS)
    environ = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": server.url}
    provider = make_provider("anthropic", model=None, base_url=None, script=None, environ=environ)
    assert probe(provider, environ).key_check == "probed ok"
    sent = server.requests[0]
    assert sent.path == "/v1/models"
    assert sent.headers["x-api-key"] == ANTHROPIC_KEY
    assert sent.headers["anthropic-version"] == registry.ANTHROPIC_VERSION


def test_the_responses_provider_is_probed_and_recorded_like_the_others(
    server: FakeServer,
) -> None:
    server.plan(MODELS)
    key = "sk-proj-FAKEfakeFAKEfake0123456789abcdef"
    environ = {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": f"{server.url}/v1"}
    provider = make_provider("openai", model=None, base_url=None, script=None, environ=environ)
    assert identity(provider, environ).key_check == "not checked"
    checked = probe(provider, environ)
    assert checked.fields() == {
        "keyVar": "OPENAI_API_KEY",
        "keySet": True,
        "apiHost": f"127.0.0.1:{server.httpd.server_address[1]}",
        "keyCheck": "probed ok",
    }
    sent = server.requests[0]
    assert sent.path == "/v1/models"
    assert sent.headers["authorization"] == f"Bearer {key}"


def test_probe_is_bounded_against_a_silent_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "PROBE_TIMEOUT_S", 0.3)
    # The kernel accepts the connection; nothing ever answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        environ = {
            "DEEPSEEK_API_KEY": DEEPSEEK_KEY,
            "DEEPSEEK_BASE_URL": f"http://127.0.0.1:{silent.getsockname()[1]}/v1",
        }
        provider = make_provider(
            "deepseek", model=None, base_url=None, script=None, environ=environ
        )
        started = time.monotonic()
        assert probe(provider, environ).key_check == "probe failed: timeout"
        assert time.monotonic() - started < 2


def test_probe_reads_only_the_head_of_the_answer(server: FakeServer) -> None:
    server.plan(Reply(chunks=[b'{"data": ['], hang=True))
    provider, environ = deepseek(server)
    started = time.monotonic()
    assert probe(provider, environ).key_check == "probed ok"
    assert time.monotonic() - started < 2


def test_probe_of_an_unreachable_server_is_a_connection_failure() -> None:
    closed = FakeServer()
    closed.close()
    provider, environ = deepseek(closed)
    assert probe(provider, environ).key_check == "probe failed: connection"


def test_identity_without_a_server_and_before_any_probe(server: FakeServer) -> None:
    script = SimpleNamespace(name="script", model="m")
    assert identity(script, {}).fields() == {  # type: ignore[arg-type]
        "keyVar": None,
        "keySet": False,
        "apiHost": None,
        "keyCheck": "not checked",
    }
    provider, environ = deepseek(server)
    assert identity(provider, environ).key_check == "not checked"


def test_api_host_drops_userinfo_and_path() -> None:
    assert api_host("https://user:pw@api.example.com/v1") == "api.example.com"
    assert api_host("http://127.0.0.1:8080/v1") == "127.0.0.1:8080"
    assert api_host("http://[::1]:8000/v1") == "[::1]:8000"


def test_available_lists_names_and_presence_never_values() -> None:
    lines = available({"DEEPSEEK_API_KEY": DEEPSEEK_KEY, "OLLAMA_BASE_URL": "http://box:1/v1"})
    text = "\n".join(lines)
    assert "deepseek: DEEPSEEK_API_KEY set, api.deepseek.com" in text
    assert "kimi: MOONSHOT_API_KEY not set, api.moonshot.ai" in text
    assert "ollama: no key, box:1" in text
    assert "openai-compatible: OPENAI_API_KEY not set, a base URL you give" in text
    assert "openai: OPENAI_API_KEY not set, api.openai.com" in text
    assert DEEPSEEK_KEY not in text


class _Session:
    def __init__(self, provider: Provider, environ: dict[str, str]) -> None:
        self.provider = provider
        self.model = provider.model
        self.environ = environ
        self.recorded: list[dict[str, Any]] = []

    def record(self, *events: dict[str, Any]) -> None:
        self.recorded.extend(events)


def context(session: _Session) -> Any:
    said: list[str] = []
    options = SimpleNamespace(provider=session.provider.name, model=None, base_url=None)
    ctx = SimpleNamespace(session=session, options=options, said=said)
    return ctx


@pytest.fixture
def said(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    lines: list[str] = []
    monkeypatch.setattr(commands, "_say", lambda _ctx, text: lines.append(text))
    return lines


def test_model_switch_probes_and_records_how_the_key_was_checked(
    server: FakeServer, said: list[str]
) -> None:
    provider, environ = deepseek(server)
    session = _Session(provider, environ)
    server.plan(MODELS)
    commands._model(context(session), ["deepseek-reasoner"])
    (event,) = session.recorded
    assert event["type"] == "provider.changed"
    assert (event["model"], event["keyVar"], event["keyCheck"]) == (
        "deepseek-reasoner",
        "DEEPSEEK_API_KEY",
        "probed ok",
    )
    assert session.provider.base_url == f"{server.url}/v1"  # type: ignore[attr-defined]
    assert DEEPSEEK_KEY not in json.dumps(session.recorded) + "\n".join(said)
    assert "probed ok" in said[-1]


def test_a_refused_key_does_not_switch(server: FakeServer, said: list[str]) -> None:
    provider, environ = deepseek(server)
    session = _Session(provider, environ)
    server.plan(Reply(401, chunks=[b'{"error": {"message": "Authentication Fails"}}']))
    with pytest.raises(OperationFailed) as caught:
        commands._model(context(session), ["deepseek-reasoner"])
    assert "DEEPSEEK_API_KEY" in caught.value.message
    assert session.provider is provider and session.recorded == []


def test_an_unreachable_server_still_switches_and_says_so(said: list[str]) -> None:
    closed = FakeServer()
    closed.close()
    provider, environ = deepseek(closed)
    session = _Session(provider, environ)
    commands._model(context(session), ["other"])
    assert session.recorded[0]["keyCheck"] == "probe failed: connection"


def test_switching_provider_never_sends_the_new_key_to_the_old_server(
    server: FakeServer, said: list[str]
) -> None:
    local = make_provider(
        "openai-compatible", model="m", base_url=f"{server.url}/v1", script=None, environ={}
    )
    environ = {"MOONSHOT_API_KEY": "sk-moonshotFAKEfakeFAKEfake0123"}
    session = _Session(local, environ)
    closed = FakeServer()
    closed.close()
    environ["MOONSHOT_BASE_URL"] = f"{closed.url}/v1"
    commands._provider(context(session), ["kimi"])
    assert server.requests == []
    assert session.recorded[0]["apiHost"] == f"127.0.0.1:{closed.httpd.server_address[1]}"


def test_the_config_base_url_belongs_to_the_config_provider_only(server: FakeServer) -> None:
    from ax_agent.session import StartOptions, _provider
    from ax_policy.models import PolicyConfig

    config = PolicyConfig(provider="openai-compatible", model="m", base_url=f"{server.url}/v1")
    environ = {"DEEPSEEK_API_KEY": DEEPSEEK_KEY}
    chosen = _provider(StartOptions(environ=environ), config)
    assert chosen.base_url == f"{server.url}/v1"  # type: ignore[attr-defined]
    other = _provider(StartOptions(environ=environ, provider="deepseek"), config)
    # DeepSeek's key goes to DeepSeek, not to the server the config names for another provider.
    assert other.base_url == "https://api.deepseek.com/v1"  # type: ignore[attr-defined]


def test_the_config_model_belongs_to_the_config_provider_when_it_names_one() -> None:
    from ax_agent.session import StartOptions, _provider
    from ax_policy.models import PolicyConfig

    environ = {"DEEPSEEK_API_KEY": DEEPSEEK_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    config = PolicyConfig(provider="anthropic", model="claude-opus-4-1")
    assert _provider(StartOptions(environ=environ), config).model == "claude-opus-4-1"
    other = _provider(StartOptions(environ=environ, provider="deepseek"), config)
    assert other.model == "deepseek-chat"
    # A config that names no provider gives its model to whichever is chosen.
    loose = PolicyConfig(model="qwen3")
    assert _provider(StartOptions(environ=environ, provider="deepseek"), loose).model == "qwen3"
