"""Opaque reasoning: kept verbatim, persisted, replayed on resume, sent only where it belongs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent.providers.fakes import (
    FakeServer,
    Reply,
    message_end,
    message_start,
    sse,
    text_block,
    tool_block,
)
from agent.providers.responses_fakes import (
    ENCRYPTED,
    call_item,
    message_item,
    reasoning_item,
    stream,
    text_reply,
)

from ax_agent.providers import (
    Message,
    ProviderRequest,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    make_provider,
    reasoning,
)
from ax_agent.providers.base import ReasoningBlock
from ax_agent.window.budget import Budget
from ax_agent.window.elide import ContextState, elide
from ax_agent.window.tokens import message_tokens
from ax_log import read_events
from libcommon import jsonio
from libcommon.paths import state_layout
from libcommon.redact import redact_value

KEY = "sk-proj-FAKEfakeFAKEfake0123456789abcdef"
WAIT_S = 20.0


def test_the_redactor_would_change_the_fixture_ciphertext() -> None:
    # The fixture's ciphertext holds a run that looks like an OpenAI key: stored
    # as it is, the log's redactor would change it and the replay would be refused.
    assert redact_value(ENCRYPTED) != ENCRYPTED


def test_a_reasoning_block_survives_the_log_redactor_byte_for_byte() -> None:
    block = ReasoningBlock("openai", "gpt-5", reasoning_item(), ("encrypted_content",))
    stored = redact_value(reasoning.to_json(block))
    assert reasoning.from_json(jsonio.loads(jsonio.dumps(stored))) == block


def test_a_block_whose_readable_part_was_redacted_is_not_rebuilt() -> None:
    # A thinking text that quotes a secret is redacted in the log; sending it back
    # would break its signature, so the resumed conversation leaves it out.
    data = {"type": "thinking", "thinking": f"the key is {KEY}", "signature": "c2ln" * 20}
    block = ReasoningBlock("anthropic", "claude-sonnet-4-5", data, ("signature",))
    stored = redact_value(reasoning.to_json(block))
    assert KEY not in jsonio.dumps(stored).decode()
    assert reasoning.from_json(stored) is None
    clean = ReasoningBlock(
        "anthropic", "claude-sonnet-4-5", {**data, "thinking": "hm"}, ("signature",)
    )
    assert reasoning.from_json(redact_value(reasoning.to_json(clean))) == clean


def test_a_chat_profiles_plain_reasoning_is_stored_and_rebuilt_as_it_was() -> None:
    # Kimi's reasoning_content is text, not ciphertext: nothing is sealed, all is redacted.
    block = ReasoningBlock("kimi", "kimi-k2-thinking", {"reasoning_content": "Let me look."})
    stored = redact_value(reasoning.to_json(block))
    assert stored["opaque"] == {}
    assert reasoning.from_json(jsonio.loads(jsonio.dumps(stored))) == block


def _openai(server: FakeServer) -> Any:
    return make_provider(
        "openai",
        model="gpt-5",
        base_url=None,
        script=None,
        environ={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"{server.url}/v1"},
    )


def test_openai_replays_its_own_reasoning_verbatim_and_drops_foreign_blocks(
    server: FakeServer,
) -> None:
    item = reasoning_item()
    server.plan(
        Reply(chunks=stream([item, call_item("call_a", "read_file", '{"path": "a"}')])),
        text_reply("done"),
        text_reply("done again"),
    )
    chosen = _openai(server)
    request = ProviderRequest("", [Message("user", [TextBlock("go")])], [], "")
    first = chosen.complete(request)
    assert first.content[0] == ReasoningBlock("openai", "gpt-5", item, ("encrypted_content",))
    foreign = [
        ReasoningBlock("anthropic", "gpt-5", {"type": "thinking", "thinking": "x"}),
        ReasoningBlock("openai", "o3", reasoning_item("rs_other")),
    ]
    history = [
        Message("user", [TextBlock("go")]),
        Message("assistant", [*foreign, *first.content]),
        Message("user", [ToolResultBlock("call_a", "A")]),
    ]
    chosen.complete(ProviderRequest("", history, [], ""))
    sent = server.requests[1].body["input"]
    assert [entry["type"] for entry in sent] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert sent[1] == item
    # Another model of the same provider gets none of it.
    chosen.complete(ProviderRequest("", history, [], "gpt-5-mini"))
    assert [e["type"] for e in server.requests[2].body["input"]].count("reasoning") == 0


def _thinking_reply() -> Reply:
    thinking_start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }

    def delta(kind: str, **fields: str) -> bytes:
        body = {"type": "content_block_delta", "index": 0, "delta": {"type": kind, **fields}}
        return sse("content_block_delta", body)

    redacted = {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk-sk-_" + "A" * 30},
    }
    return Reply(
        chunks=[
            message_start(),
            sse("content_block_start", thinking_start),
            delta("thinking_delta", thinking="Let me "),
            delta("thinking_delta", thinking="look."),
            delta("signature_delta", signature="EqQBCkYIBxgCKkA"),
            sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            sse("content_block_start", redacted),
            sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
            *text_block(2, ["Reading."]),
            *tool_block(3, "toolu_1", "read_file", ['{"path": "a"}']),
            *message_end("tool_use"),
        ]
    )


def test_anthropic_keeps_thinking_and_sends_it_back_first_and_uncached(
    server: FakeServer,
) -> None:
    from agent.providers.fakes import anthropic_text_reply

    server.plan(_thinking_reply(), anthropic_text_reply(["ok"]), anthropic_text_reply(["ok"]))
    chosen = make_provider(
        "anthropic",
        model="claude-sonnet-4-5",
        base_url=None,
        script=None,
        environ={
            "ANTHROPIC_API_KEY": "sk-ant-fake0123456789abcdef",
            "ANTHROPIC_BASE_URL": server.url,
        },
    )
    first = chosen.complete(ProviderRequest("", [Message("user", [TextBlock("go")])], [], ""))
    thinking = {"type": "thinking", "thinking": "Let me look.", "signature": "EqQBCkYIBxgCKkA"}
    redacted = {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk-sk-_" + "A" * 30}
    assert first.content[:2] == [
        ReasoningBlock("anthropic", "claude-sonnet-4-5", thinking, ("signature",)),
        ReasoningBlock("anthropic", "claude-sonnet-4-5", redacted, ("data",)),
    ]
    # The resumed order puts the text first; the wire puts the reasoning back at the head.
    answer = Message("assistant", [first.content[2], first.content[3], *first.content[:2]])
    history = [Message("user", [TextBlock("go")]), answer]
    chosen.complete(ProviderRequest("", history, [], ""))
    sent = server.requests[1].body["messages"][1]["content"]
    assert sent[:2] == [thinking, redacted]
    assert [b["type"] for b in sent[2:]] == ["text", "tool_use"]
    # The last message ends in reasoning here: the cache mark skips it.
    assert "cache_control" not in sent[0] and "cache_control" not in sent[1]
    assert sent[-1]["cache_control"] == {"type": "ephemeral"}
    chosen.complete(ProviderRequest("", history, [], "claude-haiku-4-5"))
    other = server.requests[2].body["messages"][1]["content"]
    assert [b["type"] for b in other] == ["text", "tool_use"]


def test_reasoning_is_weighed_and_never_replaced_by_elision() -> None:
    block = ReasoningBlock("openai", "gpt-5", reasoning_item(), ("encrypted_content",))
    plain = Message("assistant", [ToolUseBlock("c0", "read_file", {"path": "f"})])
    with_reasoning = Message("assistant", [block, *plain.content])
    assert message_tokens(with_reasoning) > message_tokens(plain) + len(ENCRYPTED) // 4
    history: list[Message] = [Message("user", [TextBlock("go")])]
    for n in range(12):
        history.append(Message("assistant", [block, ToolUseBlock(f"c{n}", "read_file", {})]))
        history.append(Message("user", [ToolResultBlock(f"c{n}", "x" * 20_000)]))
    view, decision = elide(history, Budget.of(60_000, 4_000), ContextState())
    assert decision.action == "rewrite"
    kept = [m for m in view if m.role == "assistant"]
    assert kept and all(m.content[0] is block for m in kept)
    assert sum(isinstance(b, ReasoningBlock) for m in view for b in m.content) == len(kept)


# --- a real session, killed and resumed, against a fake Responses server -------------------


def _agent(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    exe = Path(sys.executable).parent / "ax-agent"
    return subprocess.Popen(
        [str(exe), *args], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"{what} did not happen within {WAIT_S}s")


def test_encrypted_reasoning_is_replayed_byte_for_byte_after_a_kill_and_resume(
    server: FakeServer, workspace: Path, state_dir: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    item = reasoning_item()
    server.plan(
        Reply(
            chunks=stream(
                [
                    item,
                    message_item("Reading."),
                    call_item("call_r", "read_file", '{"path": "a.txt"}'),
                ]
            )
        ),
        # The request after the tool ran hangs: the agent is killed while it waits.
        Reply(chunks=[], hang=True),
        *(text_reply("It says alpha.") for _ in range(3)),
    )
    env = {
        **os.environ,
        "AX_STATE_DIR": str(state_dir),
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": f"{server.url}/v1",
    }
    base = [
        "-C",
        str(workspace),
        "--provider",
        "openai",
        "--model",
        "gpt-5",
        "--trust-this-workspace",
    ]
    process = _agent(*base, "-p", "read a.txt", "--output-format", "stream-json", env=env)
    try:
        assert process.stdout is not None
        session = jsonio.loads(process.stdout.readline())["session"]
        _wait_for(server.hung.is_set, "the second model request")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = state_layout(workspace).session_log(session)
    stored = [
        block
        for event in read_events(log, session)
        if event["type"] == "assistant.message"
        for block in event["content"]
        if block["type"] == "reasoning"
    ]
    assert len(stored) == 1 and ENCRYPTED not in jsonio.dumps(stored).decode()

    resumed = _agent(*base, "--resume", session, "-p", "what does it say?", env=env)
    out, err = resumed.communicate(timeout=WAIT_S * 3)
    assert resumed.returncode == 0, err
    assert out.strip() == "It says alpha."
    request = next(
        r.body
        for r in server.requests
        if any(i.get("content") == "what does it say?" for i in r.body["input"])
    )
    replayed = [i for i in request["input"] if i["type"] == "reasoning"]
    assert replayed == [item]
    assert replayed[0]["encrypted_content"] == ENCRYPTED
    kinds = [i["type"] for i in request["input"]]
    assert kinds[kinds.index("reasoning") + 1 :][:3] == [
        "message",
        "function_call",
        "function_call_output",
    ]
