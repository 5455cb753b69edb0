"""The context window the loop holds: logging, frame, archive, figures, resume."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from ax_agent.providers import Message, ProviderRequest, TextBlock, ToolResultBlock, ToolUseBlock
from ax_agent.providers.base import ToolSchema
from ax_agent.seam.local import LocalSeam
from ax_agent.window.budget import budget_for
from ax_agent.window.elide import pairing_problems
from ax_agent.window.tokens import estimate_request
from ax_agent.window.window import SYSTEM_NOTE, ContextWindow, archived_message
from ax_log.events import parse_body
from ax_slate import RecordRequest, open_session, record
from libcommon.paths import state_layout

# A model with a small window (32,768 tokens), so a few dozen rounds fill it.
SMALL_MODEL = "qwen2.5-coder"


def request_of(messages: list[Message]) -> ProviderRequest:
    return ProviderRequest(
        system="You are ax.\n\n" + SYSTEM_NOTE,
        messages=messages,
        tools=[ToolSchema("read_file", "Read a file.", {"type": "object"})],
        model=SMALL_MODEL,
        max_tokens=4_096,
    )


def grow(messages: list[Message], step: int, size: int) -> None:
    call_id = f"toolu_{step}"
    messages.append(Message("assistant", [ToolUseBlock(call_id, "read_file", {"n": step})]))
    messages.append(Message("user", [ToolResultBlock(call_id, f"{step}:" + "r" * size)]))


def make_window(
    workspace: Path, session: str = "s-win", slate: bool = True
) -> tuple[ContextWindow, list[dict[str, Any]]]:
    layout = state_layout(workspace)
    if slate:
        open_session(layout, session)
        record(
            layout, session, RecordRequest(tool="read_file", args={"path": "a.py"}, outcome="ok")
        )
    logged: list[dict[str, Any]] = []
    window = ContextWindow(
        LocalSeam(layout, session, {}, None), lambda *events: logged.extend(events)
    )
    return window, logged


def test_each_request_is_bounded_valid_and_every_decision_is_logged(
    workspace: Path, state_dir: Path
) -> None:
    window, logged = make_window(workspace)
    messages = [Message("user", [TextBlock("Fix the tests.")])]
    budget = budget_for(SMALL_MODEL, 4_096)
    for step in range(150):
        grow(messages, step, 12_000 if step % 10 == 0 else 1_500)
        bounded = window.bound(request_of(messages))
        assert pairing_problems(bounded.messages) == []
        assert estimate_request(bounded) <= budget.request
        assert bounded.system == request_of(messages).system and bounded.tools
    assert len(messages) == 301  # the session's own messages are never changed
    kinds = [event["type"] for event in logged]
    assert "context.compacted" in kinds and "context.held" in kinds
    for event in logged:
        parse_body(event)
    compacted = [e for e in logged if e["type"] == "context.compacted"]
    assert [e["rewrite"] for e in compacted] == list(range(1, len(compacted) + 1))
    assert any(e["cutTo"] > 0 for e in compacted)
    assert any(item["form"] == "pack" for e in compacted for item in e["elided"])
    # A held stretch is logged once, not on every request it lasts.
    for before, after in itertools.pairwise(kinds):
        assert not (before == after == "context.held")
    # The frame stands in once rounds left: built from the slate on disk.
    first = bounded.messages[0].content[0]
    assert isinstance(first, TextBlock) and "[ax-slate frame for session s-win]" in first.text


def test_resume_adds_up_the_logged_rewrites(workspace: Path, state_dir: Path) -> None:
    window, logged = make_window(workspace)
    messages = [Message("user", [TextBlock("Go.")])]
    for step in range(120):
        grow(messages, step, 3_000)
        window.bound(request_of(messages))
    events = [{"type": "user.message", "content": "Go."}, *logged]
    again = ContextWindow.resumed(window.seam, lambda *e: None, events)
    assert dict(again.state.elided) == dict(window.state.elided)
    assert (again.state.cut, again.state.stubbed) == (window.state.cut, window.state.stubbed)
    # The resumed window sends the same view (its frame rebuilt from the slate).
    resumed = again.bound(request_of(messages))
    live = window.bound(request_of(messages))
    assert [m.content for m in resumed.messages[1:]] == [m.content for m in live.messages[1:]]


def test_without_a_slate_the_model_and_the_person_are_told_once(
    workspace: Path, state_dir: Path
) -> None:
    window, _ = make_window(workspace, slate=False)
    messages = [Message("user", [TextBlock("Go.")])]
    for step in range(260):
        grow(messages, step, 3_000)
        bounded = window.bound(request_of(messages))
    assert window.state.cut > 0
    assert len(window.problems) == 1 and window.problems[0].startswith("no slate frame: ")
    text = bounded.messages[0].content[0].text  # type: ignore[union-attr]
    assert "no readable slate" in text


def test_the_figures_say_what_the_request_is_made_of(workspace: Path, state_dir: Path) -> None:
    window, _ = make_window(workspace)
    assert window.figures() is None
    messages = [Message("user", [TextBlock("Go.")])]
    for step in range(260):
        grow(messages, step, 3_000)
        window.bound(request_of(messages))
    figures = window.figures()
    assert figures is not None
    parts = (
        figures.system,
        figures.tools,
        figures.frame,
        figures.history,
        figures.tool_results,
        figures.elided,
    )
    assert sum(parts) == figures.total and all(part > 0 for part in parts)
    assert (
        figures.counted_by == "estimate"
        and figures.budget == budget_for(SMALL_MODEL, 4_096).request
    )
    assert figures.left_messages == window.state.cut > 0
    lines = figures.lines()
    assert lines[0].startswith(f"model {SMALL_MODEL}: window 32768")
    assert any(line.strip().startswith("elided") for line in lines)
    assert figures.to_json()["total"] == figures.total


def test_a_providers_counter_is_used_for_the_figures(workspace: Path, state_dir: Path) -> None:
    window, _ = make_window(workspace)
    window.counter = lambda request: 4242
    window.bound(request_of([Message("user", [TextBlock("Go.")])]))
    figures = window.figures()
    assert figures is not None and (figures.total, figures.counted_by) == (4242, "provider")


def test_what_the_archive_keeps_of_each_event() -> None:
    assert archived_message({"type": "user.message", "ts": "t", "content": "hi"}) == {
        "role": "user",
        "ts": "t",
        "content": "hi",
    }
    tool = archived_message({"type": "tool.completed", "ts": "t", "callId": "c", "content": "x"})
    assert tool == {"role": "tool", "ts": "t", "callId": "c", "content": "x"}
    assert archived_message({"type": "tool.completed", "callId": "c"}) is None
    assert archived_message({"type": "context.compacted"}) is None


def test_pinned_instructions_stay_whole_outside_elision_and_keep_their_place(
    workspace: Path, state_dir: Path
) -> None:
    from ax_agent.instructions import Pinned
    from ax_agent.window.tokens import block_tokens

    window, logged = make_window(workspace)
    messages = [Message("user", [TextBlock("Fix the tests.")])]
    grow(messages, 0, 100)
    block = TextBlock("[ax: instruction files of a folder]\n" + "rule\n" * 2_000)
    pinned = [Pinned(2, block)]
    budget = budget_for(SMALL_MODEL, 4_096)
    previous: list[Message] | None = None
    for step in range(1, 200):
        grow(messages, step, 1_500)
        bounded = window.bound(request_of(messages), pinned)
        view = bounded.messages
        assert pairing_problems(view) == []
        holding = [m for m in view if any(b is block for b in m.content)]
        assert len(holding) == 1
        # Counted like the system prompt: the bounded request fits with the block in it.
        assert estimate_request(bounded) <= budget.request
        if window.state.cut > 2:
            # Its message left the request: the block rides on the stand-in instead.
            assert holding[0] is view[0]
        else:
            assert holding[0] is view[2] and view[2].content[-1] is block
            assert view[2].content[0] is messages[2].content[0]
        if previous is not None and logged and logged[-1]["type"] != "context.compacted":
            # Between rewrites the view only grows: the prefix (block included) is unchanged.
            assert [m.content for m in view[: len(previous)]] == [m.content for m in previous]
        previous = view
        logged.clear()
    assert window.state.cut > 2
    figures = window.figures()
    assert figures is not None and figures.instructions == block_tokens(block)
    assert figures.frame > 0 and "instructions" in "\n".join(figures.lines())
    # The session's history never holds it: only the views do.
    assert all(block not in m.content for m in messages)


def test_pinned_blocks_count_as_overhead_in_the_decision(workspace: Path, state_dir: Path) -> None:
    from ax_agent.instructions import Pinned
    from ax_agent.window.tokens import block_tokens

    block = TextBlock("rules " * 500)
    messages = [Message("user", [TextBlock("Go.")])]
    grow(messages, 0, 100)
    plain, _ = make_window(workspace, session="s-plain")
    plain.bound(request_of(messages))
    pinned, _ = make_window(workspace, session="s-pinned")
    pinned.bound(request_of(messages), [Pinned(2, block)])
    assert plain.decision is not None and pinned.decision is not None
    assert pinned.decision.tokens_before - plain.decision.tokens_before == block_tokens(block)


def test_a_pinned_block_goes_before_a_notice_and_after_a_stub() -> None:
    from ax_agent.instructions import Pinned
    from ax_agent.window.elide import ContextState
    from ax_agent.window.window import place_pinned

    result = ToolResultBlock("toolu_1", "output")
    history = [
        Message("user", [TextBlock("Go."), TextBlock("and more")]),
        Message("assistant", [ToolUseBlock("toolu_1", "read_file", {})]),
        Message("user", [result]),
    ]
    notice = TextBlock("[ax notice: the request is close to its context budget.]")
    stub = TextBlock("[ax: an earlier message from the user …]")
    view = [Message("user", [stub]), history[1], Message("user", [result, notice])]
    first, last = TextBlock("first"), TextBlock("last")
    state = ContextState(stubbed=frozenset({0}))
    placed = place_pinned(view, [Pinned(0, first), Pinned(2, last)], history, state)
    # The block sits right after the message's own content, so the message reads the
    # same in later requests, when the notice is gone.
    assert placed[2].content == [result, last, notice]
    assert placed[0].content == [stub, first]
    assert view[2].content == [result, notice]  # the view it was given is not changed
