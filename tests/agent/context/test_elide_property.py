"""Property: over any growing history, every view is valid, fits, and never grows back."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ax_agent.providers import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ax_agent.window.budget import Budget
from ax_agent.window.elide import (
    ANTHROPIC_CACHE,
    NO_CACHE,
    ContextState,
    ElisionMemo,
    elide,
    is_operator_message,
    pairing_problems,
)
from ax_agent.window.tokens import messages_tokens

# One round: some calls with output sizes; or an operator message; or a note.
size = st.one_of(
    st.integers(min_value=0, max_value=200), st.integers(min_value=2_000, max_value=6_000)
)
call_sizes = st.lists(size, min_size=1, max_size=3)
event = st.one_of(
    call_sizes.map(lambda sizes: ("calls", sizes)),
    st.integers(min_value=1, max_value=3_000).map(lambda size: ("operator", size)),
    st.just(("note", 0)),
)


def grow(events: list[tuple[str, Any]]) -> list[list[Message]]:
    """The history after each event (each ends with a user message, as before a request)."""
    history = [Message("user", [TextBlock("start")])]
    snapshots = [list(history)]
    for number, (kind, value) in enumerate(events):
        if kind == "operator":
            history.append(Message("assistant", [TextBlock("ok")]))
            history.append(Message("user", [TextBlock(f"op{number} " + "w" * int(value))]))
        else:
            sizes = value if kind == "calls" else [10]
            tool = "slate_note" if kind == "note" else "read_file"
            ids = [f"c{number}_{i}" for i in range(len(sizes))]
            history.append(
                Message("assistant", [ToolUseBlock(i, tool, {"n": number}) for i in ids])
            )
            history.append(
                Message(
                    "user",
                    [
                        ToolResultBlock(i, f"{i}:" + "r" * size)
                        for i, size in zip(ids, sizes, strict=True)
                    ],
                )
            )
        snapshots.append(list(history))
    return snapshots


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(event, min_size=20, max_size=80),
    request=st.integers(min_value=8_000, max_value=30_000),
    cached=st.booleans(),
)
def test_every_view_is_valid_fits_and_is_monotonic(
    events: list[tuple[str, Any]], request: int, cached: bool
) -> None:
    budget = Budget(
        context_window=request * 2,
        max_output=1_000,
        request=request,
        trigger=int(request * 0.75),
        target=int(request * 0.5),
    )
    state = ContextState()
    memo = ElisionMemo()
    for history in grow(events):
        options: dict[str, Any] = {
            "frame": "[frame] notes",
            "overhead": 500,
            "pricing": ANTHROPIC_CACHE if cached else NO_CACHE,
        }
        view, decision = elide(history, budget, state, **options)
        # The memo carried from request to request changes nothing but the cost.
        remembered, same = elide(history, budget, state, memo=memo, **options)
        assert (remembered, same) == (view, decision)
        assert pairing_problems(view) == []
        assert not decision.over_budget
        assert 500 + messages_tokens(view) <= budget.request
        new = decision.state
        assert set(state.elided) <= set(new.elided)
        for call_id, item in state.elided.items():
            assert item.form == "pack" or new.elided[call_id].form == "marker"
        assert new.cut >= state.cut and new.stubbed >= state.stubbed
        # Only results and user messages change, never an assistant message.
        kept = view[1:] if new.cut else view
        for index, sent in zip(range(new.cut, len(history)), kept, strict=True):
            original = history[index]
            if original.role == "assistant":
                assert sent is original
            elif is_operator_message(original) and index in new.stubbed:
                stub = sent.content[0]
                assert isinstance(stub, TextBlock) and stub.text.startswith("[ax: an earlier")
            else:
                # Untouched, but for markers in place of results and the notice at the end.
                assert len(sent.content) == len(original.content) + (
                    1 if decision.notice is not None and index == len(history) - 1 else 0
                )
                for was, now in zip(original.content, sent.content, strict=False):
                    assert now is was or (
                        isinstance(was, ToolResultBlock)
                        and isinstance(now, ToolResultBlock)
                        and now.tool_use_id in new.elided
                    )
        state = new
