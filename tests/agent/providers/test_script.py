"""The script provider: every turn feature, exhaustion, hang and abort, and bad scripts."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ax_agent.providers import (
    PROVIDER_NAMES,
    Message,
    ProviderAborted,
    ProviderError,
    ProviderRequest,
    ScriptExhausted,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    make_provider,
)
from ax_agent.providers.script import SCRIPT_MAX_BYTES, ScriptProvider
from libcommon.errors import UsageError


def write(tmp_path: Path, script: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script) if not isinstance(script, str) else script)
    return path


def scripted(tmp_path: Path, *turns: dict[str, Any], **top: Any) -> ScriptProvider:
    path = write(tmp_path, {"turns": list(turns), **top})
    made = make_provider("script", model=None, base_url=None, script=path, environ={})
    assert isinstance(made, ScriptProvider)
    return made


def ask(text: str = "go", *extra: Message) -> ProviderRequest:
    return ProviderRequest("system", [Message("user", [TextBlock(text)]), *extra], [], model="")


def test_text_is_streamed_in_pieces_that_join_to_the_answer(tmp_path: Path) -> None:
    provider = scripted(tmp_path, {"text": "Reading  the code now."}, {"text": ["Do", "ne", "."]})
    seen: list[str] = []
    first = provider.complete(ask(), on_text=seen.append)
    assert seen == ["Reading  ", "the ", "code ", "now."]
    assert first.content == [TextBlock("Reading  the code now.")]
    assert first.stop_reason == "end_turn"
    assert first.model == "script"
    seen.clear()
    second = provider.complete(ask(), on_text=seen.append)
    assert seen == ["Do", "ne", "."]
    assert second.text == "Done."


def test_tool_calls_with_generated_and_given_ids(tmp_path: Path) -> None:
    provider = scripted(
        tmp_path,
        {
            "text": "Looking.",
            "toolCalls": [
                {"name": "read_file", "input": {"path": "a.py"}},
                {"name": "run_check", "input": '{"kind": "test"}'},
                {"name": "list_dir"},
            ],
        },
        {"toolCalls": [{"name": "edit_file", "input": [1, 2], "id": "toolu_mine"}]},
        {
            "toolCalls": [{"name": "read_file", "input": {"path": "b.py"}}],
            "stopReason": "max_tokens",
        },
    )
    first = provider.complete(ask())
    assert first.stop_reason == "tool_use"
    assert first.content == [
        TextBlock("Looking."),
        ToolUseBlock("toolu_script_1", "read_file", {"path": "a.py"}),
        ToolUseBlock("toolu_script_2", "run_check", '{"kind": "test"}'),  # a string stays one
        ToolUseBlock("toolu_script_3", "list_dir", {}),
    ]
    second = provider.complete(ask())
    assert second.content == [ToolUseBlock("toolu_mine", "edit_file", [1, 2])]
    third = provider.complete(ask())
    # Ids count calls over the whole script, given ids included.
    assert third.tool_uses == [ToolUseBlock("toolu_script_5", "read_file", {"path": "b.py"})]
    assert third.stop_reason == "max_tokens"


def test_the_same_script_gives_the_same_responses(tmp_path: Path) -> None:
    turns: list[dict[str, Any]] = [{"text": "a b", "toolCalls": [{"name": "x"}]}, {"text": "c"}]
    runs = []
    for _ in range(2):
        provider = scripted(tmp_path, *turns)
        runs.append([provider.complete(ask()), provider.complete(ask())])
    assert runs[0] == runs[1]


def test_usage_and_model(tmp_path: Path) -> None:
    provider = scripted(
        tmp_path,
        {
            "text": "hi",
            "usage": {"inputTokens": 100, "outputTokens": 5, "cacheReadInputTokens": 80},
        },
        {"text": "again"},
        model="scripted-sonnet",
    )
    first = provider.complete(ask())
    assert first.usage == Usage(input_tokens=100, output_tokens=5, cache_read_input_tokens=80)
    assert first.model == "scripted-sonnet"
    assert provider.complete(ask()).usage == Usage()


def test_expect_checks_the_last_user_message(tmp_path: Path) -> None:
    provider = scripted(
        tmp_path,
        {"expect": "fix the test", "toolCalls": [{"name": "run_check"}]},
        {"expect": "1 failed", "text": "It fails."},
        {"expect": "never sent", "text": "unreachable"},
    )
    provider.complete(ask("please fix the test"))
    results = [
        Message("assistant", [ToolUseBlock("toolu_script_1", "run_check", {})]),
        Message("user", [ToolResultBlock("toolu_script_1", "== 1 failed, 3 passed ==")]),
    ]
    assert provider.complete(ask("please fix the test", *results)).text == "It fails."
    with pytest.raises(ProviderError) as caught:
        provider.complete(ask("something else"))
    assert "turn 3" in caught.value.message
    assert "'never sent'" in caught.value.message
    assert "something else" in caught.value.message


def test_running_out_is_loud_and_names_the_call(tmp_path: Path) -> None:
    provider = scripted(tmp_path, {"text": "one"}, {"text": "two"})
    provider.complete(ask())
    provider.complete(ask())
    assert provider.remaining == 0
    with pytest.raises(ScriptExhausted) as caught:
        provider.complete(ask())
    assert "model call 3" in caught.value.message
    assert "2 turns" in caught.value.message


def test_hang_ends_promptly_on_abort_after_its_text(tmp_path: Path) -> None:
    provider = scripted(tmp_path, {"text": "Working on it", "hang": True})
    abort = threading.Event()
    seen: list[str] = []
    threading.Timer(0.2, abort.set).start()
    started = time.monotonic()
    with pytest.raises(ProviderAborted):
        provider.complete(ask(), on_text=seen.append, abort=abort)
    elapsed = time.monotonic() - started
    assert 0.15 < elapsed < 1.0  # it really blocked, and it ended with the abort
    assert "".join(seen) == "Working on it"


def test_hang_without_an_abort_event_fails_instead_of_blocking(tmp_path: Path) -> None:
    provider = scripted(tmp_path, {"hang": True})
    with pytest.raises(ProviderError) as caught:
        provider.complete(ask())
    assert "no abort event" in caught.value.message


def test_an_abort_already_set_returns_no_response(tmp_path: Path) -> None:
    provider = scripted(tmp_path, {"text": "never said"})
    abort = threading.Event()
    abort.set()
    seen: list[str] = []
    with pytest.raises(ProviderAborted):
        provider.complete(ask(), on_text=seen.append, abort=abort)
    assert seen == []


def test_scripted_provider_error(tmp_path: Path) -> None:
    provider = scripted(
        tmp_path,
        {"text": "Half an ans", "error": {"message": "stream interrupted", "retryable": False}},
        {"error": {"message": "overloaded", "retryable": True}},
    )
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        provider.complete(ask(), on_text=seen.append)
    assert caught.value.message == "stream interrupted" and not caught.value.retryable
    assert seen  # the text streamed first, as a real interrupted stream would
    with pytest.raises(ProviderError) as caught:
        provider.complete(ask())
    assert caught.value.retryable


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ({"turns": [{"txt": "typo"}]}, "turns.0.txt"),
        ({"turns": [{"stopReason": "done"}]}, "turns.0.stopReason: 'done' is not allowed"),
        ({"turns": [{"hang": True, "toolCalls": [{"name": "x"}]}]}, "hang or error turn"),
        ({"turns": [{"toolCalls": [{"input": {}}]}]}, "turns.0.toolCalls.0.name"),
        ({"steps": []}, "turns"),
        ([{"text": "a list is not a script"}], "(root)"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_scripts_are_usage_errors_naming_the_field(
    tmp_path: Path, script: Any, problem: str
) -> None:
    path = write(tmp_path, script)
    with pytest.raises(UsageError) as caught:
        make_provider("script", model=None, base_url=None, script=path, environ={})
    assert problem in caught.value.message
    assert str(path) in caught.value.message


def test_missing_and_oversized_scripts(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        make_provider(
            "script", model=None, base_url=None, script=tmp_path / "nope.json", environ={}
        )
    assert "nope.json" in caught.value.message
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"turns": [{"text": "x" * SCRIPT_MAX_BYTES}]}))
    with pytest.raises(UsageError) as caught:
        make_provider("script", model=None, base_url=None, script=big, environ={})
    assert "larger than" in caught.value.message


def test_make_provider_refuses_unknown_names_and_misplaced_options(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        make_provider("gpt", model=None, base_url=None, script=None, environ={})
    assert all(name in (caught.value.hint or "") for name in PROVIDER_NAMES)
    with pytest.raises(UsageError, match="needs a script file"):
        make_provider("script", model=None, base_url=None, script=None, environ={})
    path = write(tmp_path, {"turns": []})
    with pytest.raises(UsageError, match="script provider"):
        make_provider(
            "openai-compatible",
            model="m",
            base_url="http://127.0.0.1:1/v1",
            script=path,
            environ={},
        )
