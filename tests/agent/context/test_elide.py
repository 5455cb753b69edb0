"""Elision rule by rule, on hand-built histories; every view is checked for valid pairing."""

from __future__ import annotations

import hashlib

import pytest

from ax_agent.providers import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ax_agent.window.budget import Budget
from ax_agent.window.elide import (
    ANTHROPIC_CACHE,
    BIG_RESULT_BYTES,
    KEEP_RECENT_ROUNDS,
    NO_CACHE,
    PACK_HEAD_CHARS,
    PACK_TAIL_CHARS,
    ContextState,
    Decision,
    elide,
    pairing_problems,
    state_from_events,
)
from ax_agent.window.tokens import messages_tokens

FRAME = "[frame] Anchors: {} Trail: #1 emit -> ok Notes: [plan] fix the parser"


def user(text: str) -> Message:
    return Message("user", [TextBlock(text)])


def round_of(call_id: str, output: str, tool: str = "read_file") -> list[Message]:
    return [
        Message("assistant", [TextBlock(f"calling {call_id}"), ToolUseBlock(call_id, tool, {})]),
        Message("user", [ToolResultBlock(call_id, output)]),
    ]


def history_of(outputs: list[str], opening: str = "Fix the bug.") -> list[Message]:
    history = [user(opening)]
    for number, output in enumerate(outputs, 1):
        history += round_of(f"c{number}", output)
    return history


def budget(request: int, trigger: int, target: int) -> Budget:
    return Budget(
        context_window=request * 2, max_output=1000, request=request, trigger=trigger, target=target
    )


def run(
    history: list[Message],
    b: Budget,
    state: ContextState | None = None,
    **options: object,
) -> tuple[list[Message], Decision]:
    view, decision = elide(history, b, state or ContextState(), **options)  # type: ignore[arg-type]
    assert pairing_problems(view) == []
    return view, decision


def results(view: list[Message]) -> dict[str, str]:
    return {
        block.tool_use_id: block.content
        for message in view
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }


def test_under_the_trigger_the_view_is_the_history() -> None:
    history = history_of(["a" * 400] * 5)
    view, decision = run(history, budget(10_000, 8_000, 5_000))
    assert view == history
    assert decision.action == "none" and decision.state == ContextState()


def test_the_oldest_results_become_markers_until_the_target_in_one_batch() -> None:
    outputs = [f"out{i} " + "x" * 4000 for i in range(10)]
    history = history_of(outputs)
    b = budget(20_000, 8_000, 5_000)
    view, decision = run(history, b, pricing=NO_CACHE, rows={"c1": 7})
    assert (decision.action, decision.reason) == ("rewrite", "saving")
    elided = [item.call_id for item in decision.elided]
    assert len(elided) > 1  # a batch, not one result at a time
    assert elided == [f"c{i}" for i in range(1, len(elided) + 1)]  # oldest first
    assert decision.tokens_after <= b.target
    sent = results(view)
    first = sent["c1"]
    data = outputs[0].encode()
    assert f"{len(data)} bytes" in first
    assert hashlib.sha256(data).hexdigest() in first
    assert 'history_search {"call":"c1","row":7}' in first
    assert 'history_search {"call":"c2"}' in sent["c2"]
    # The user's message and the last rounds are untouched.
    assert view[0] is history[0]
    recent = [f"c{i}" for i in range(11 - KEEP_RECENT_ROUNDS, 11)]
    for call_id in recent:
        assert sent[call_id] == outputs[int(call_id[1:]) - 1]
    # The session's messages are never changed.
    assert [m.content[0].content for m in history[2::2]] == outputs  # type: ignore[union-attr]


def test_what_was_elided_stays_elided() -> None:
    history = history_of(["x" * 4000] * 10)
    _, first = run(history, budget(20_000, 8_000, 5_000), pricing=NO_CACHE)
    history += round_of("c11", "small")
    # A far larger budget now: nothing is due, and still nothing grows back.
    view, later = run(history, budget(1_000_000, 900_000, 500_000), first.state)
    assert later.action == "none"
    for item in first.elided:
        assert "was elided" in results(view)[item.call_id]


def test_the_cache_gate_holds_a_small_saving_that_would_invalidate_a_long_prefix() -> None:
    history = history_of(["x" * 4000] * 10)
    b = budget(30_000, 10_000, 9_500)
    view, held = run(history, b, pricing=ANTHROPIC_CACHE)
    assert (held.action, held.reason) == ("held", "cache")
    assert view == history
    assert held.saving > 0 and held.invalidated > held.saving
    assert held.state.elided == {}
    # Without a prompt cache every saving is worth it.
    _, done = run(history, b, pricing=NO_CACHE)
    assert done.action == "rewrite" and done.elided


def test_over_the_hard_cap_the_rewrite_is_forced() -> None:
    history = history_of(["x" * 4000] * 10)
    b = budget(9_000, 8_000, 5_000)
    view, decision = run(history, b, pricing=ANTHROPIC_CACHE)
    assert (decision.action, decision.reason) == ("rewrite", "forced")
    assert decision.tokens_before > b.request >= decision.tokens_after
    assert messages_tokens(view) <= b.request
    assert not decision.over_budget


def test_a_big_result_is_verbatim_for_two_requests_then_a_pack() -> None:
    big = "".join(f"line {i}: {'y' * 60}\n" for i in range(400))
    assert len(big.encode()) > BIG_RESULT_BYTES
    history = history_of([big])
    b = budget(1_000_000, 900_000, 500_000)
    state = ContextState()
    for _ in range(2):
        view, decision = run(history, b, state, pricing=NO_CACHE)
        assert results(view)["c1"] == big and decision.action == "none"
        history += round_of(f"n{len(history)}", "ok")
    view, decision = run(history, b, state, pricing=NO_CACHE)
    assert decision.action == "rewrite"
    pack = results(view)["c1"]
    assert pack.startswith("[ax: large tool result")
    assert f"{len(big.encode())} bytes" in pack
    assert hashlib.sha256(big.encode()).hexdigest() in pack
    assert big[:PACK_HEAD_CHARS] in pack and big[-PACK_TAIL_CHARS:] in pack
    assert 'history_search {"call":"c1"}' in pack
    assert [item.form for item in decision.elided] == ["pack"]


def test_a_result_of_exactly_ten_kib_stays_verbatim() -> None:
    exact = "z" * BIG_RESULT_BYTES
    history = history_of([exact, "a", "b", "c"])
    view, decision = run(history, budget(1_000_000, 900_000, 500_000), pricing=NO_CACHE)
    assert results(view)["c1"] == exact and decision.action == "none"


def _many_small_rounds(count: int) -> list[Message]:
    # Small outputs: a marker would not be smaller, so only rounds leaving helps.
    return history_of([f"ok {i}" for i in range(count)])


def test_rounds_leave_after_a_notice_and_the_frame_stands_in() -> None:
    history = _many_small_rounds(60)
    b = budget(10_000, 2_000, 1_000)
    view, held = run(history, b, frame=FRAME, pricing=NO_CACHE)
    assert (held.action, held.reason) == ("held", "notice")
    assert held.notice is not None and held.cut_to > 0
    last = view[-1].content[-1]
    assert isinstance(last, TextBlock) and last.text == held.notice
    assert "about to leave the request" in held.notice and "c1 to" in held.notice
    assert "read_file x" in held.notice and "slate_note" in held.notice
    # Announced: the next request lets them go.
    view, done = run(history, b, held.state, frame=FRAME, pricing=NO_CACHE)
    assert done.action == "rewrite" and done.cut_to > 0
    cut = done.state.cut
    assert history[cut].role == "assistant"
    assert view[0].role == "user" and FRAME in view[0].content[0].text  # type: ignore[union-attr]
    assert f"the first {cut} messages" in view[0].content[0].text  # type: ignore[union-attr]
    assert view[1] is history[cut]
    assert done.notice is None and messages_tokens(view) <= b.target
    assert done.state.frame == FRAME


def test_a_note_written_after_the_rounds_covers_them() -> None:
    history = _many_small_rounds(60)
    history += round_of("note1", "saved note 'plan'", tool="slate_note")
    view, decision = run(history, budget(10_000, 2_000, 1_000), frame=FRAME, pricing=NO_CACHE)
    assert decision.action == "rewrite" and decision.notice is None
    assert all("ax notice" not in getattr(b, "text", "") for m in view for b in m.content)


def test_without_a_slate_the_rounds_still_leave_and_the_model_is_told() -> None:
    history = _many_small_rounds(60)
    view, decision = run(history, budget(2_000, 1_500, 800), frame=None)
    assert decision.reason == "forced" and decision.state.frame is None
    assert "no readable slate" in view[0].content[0].text  # type: ignore[union-attr]


def test_only_the_two_newest_operator_messages_stay_in_full() -> None:
    history: list[Message] = []
    asks = [f"Request {n}: " + "please " * 300 for n in range(4)]
    for n, ask in enumerate(asks):
        history.append(user(ask))
        history += round_of(f"c{n}", "x" * 6000)
        history.append(Message("assistant", [TextBlock(f"Done with request {n}.")]))
    history.append(user("And now?"))
    history += round_of("last", "fine")
    b = budget(20_000, 8_000, 6_000)
    view, held = run(history, b, pricing=ANTHROPIC_CACHE)
    assert held.cut_to == 0
    # Held until announced: the notice names the user messages that will stop being sent.
    assert held.action == "held" and held.notice is not None
    assert "3 earlier message(s) from the user" in held.notice
    assert 'history_search {"query":"Request 0: please please please please"}' in held.notice
    view, done = run(history, b, held.state, pricing=NO_CACHE)
    assert done.action == "rewrite"
    operators = [
        m
        for m in view
        if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content)
    ]
    texts = [m.content[0].text for m in operators]  # type: ignore[union-attr]
    assert texts[-2:] == [asks[3], "And now?"]
    assert all(t.startswith("[ax: an earlier message from the user") for t in texts[:-2])
    assert 'history_search {"query":"Request 0: please' in texts[0]
    assert len(done.stubbed) == 3


def test_the_logged_rewrites_rebuild_the_same_state() -> None:
    history = history_of(["x" * 4000] * 6)
    state = ContextState()
    events = []
    for step in range(40):
        history += round_of(f"r{step}", "y" * (3000 if step % 3 else 12000))
        _, decision = run(history, budget(12_000, 8_000, 5_000), state, frame=FRAME)
        state = decision.state
        if decision.action == "rewrite":
            events.append(decision.event())
    assert events and any(event["cutTo"] for event in events)
    rebuilt = state_from_events(events)
    assert dict(rebuilt.elided) == dict(state.elided)
    assert (rebuilt.cut, rebuilt.stubbed, rebuilt.rewrites) == (
        state.cut,
        state.stubbed,
        state.rewrites,
    )


def test_the_logged_figures_validate_against_the_event_registry() -> None:
    from ax_log.events import parse_body

    history = history_of(["x" * 4000] * 10)
    _, rewrite = run(history, budget(20_000, 8_000, 5_000), pricing=NO_CACHE)
    _, held = run(history, budget(30_000, 10_000, 9_500), pricing=ANTHROPIC_CACHE)
    for decision in (rewrite, held):
        parse_body(decision.event())


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([Message("assistant", [TextBlock("hi")])], "first message is not the user's"),
        ([user("a"), Message("user", [])], "is empty"),
        (
            [user("a"), Message("assistant", [ToolUseBlock("c1", "t", {})]), user("b")],
            "call c1 has no result",
        ),
        ([user("a"), Message("user", [ToolResultBlock("c9", "x")])], "answers no call"),
        (
            [
                user("a"),
                Message("assistant", [ToolUseBlock("c1", "t", {})]),
                Message("user", [ToolResultBlock("c1", "x"), ToolResultBlock("c1", "x")]),
            ],
            "answered twice",
        ),
        ([user("a"), Message("user", [ToolUseBlock("c1", "t", {})])], "user message holds"),
        (
            [user("a"), Message("assistant", [ToolResultBlock("c1", "x")])],
            "assistant message holds",
        ),
    ],
)
def test_the_validator_finds_each_broken_pairing(messages: list[Message], problem: str) -> None:
    assert any(problem in found for found in pairing_problems(messages))


def test_a_valid_history_passes_the_validator() -> None:
    assert pairing_problems(history_of(["a", "b"])) == []
