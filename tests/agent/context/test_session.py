"""A scripted session of 2,000 steps with large outputs, through the real turn loop.

Every request stays under budget with valid pairing; every output that was
elided reads back byte-identical through history_search; a resume rebuilds the
same elided set from the log alone.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from agent.context.scripted import EMIT, call_id, emitted, recall_output, session_turns
from agenttest import events_of, open_session, real_tools, write_script

from ax_agent.loop import run_turn
from ax_agent.providers import ProviderRequest
from ax_agent.window.budget import budget_for
from ax_agent.window.elide import pairing_problems
from ax_agent.window.tokens import TokenMemo, fixed_tokens
from ax_log.events import parse_body

STEPS = 2_000
TURNS = 4
RECALL_EVERY = 4


@pytest.mark.slow
def test_two_thousand_steps_stay_bounded_recallable_and_resumable(
    workspace: Path, tmp_path: Path
) -> None:
    turns = session_turns(STEPS, TURNS)
    script = write_script(tmp_path / "s.json", [turn for calls in turns for turn in calls])
    session = open_session(workspace, script, tools=[*real_tools(), EMIT], max_steps=STEPS)
    assert session.window is not None
    sent: list[int] = []
    memo = TokenMemo()
    complete = session.provider.complete

    def checked(request: ProviderRequest, **options: Any) -> Any:
        problems = pairing_problems(request.messages)
        assert problems == [], problems[:3]
        budget = budget_for(request.model, request.max_tokens)
        # The same estimate as estimate_request, each unchanged message priced once.
        size = fixed_tokens(request) + sum(memo.message(m) for m in request.messages)
        assert size <= budget.request
        sent.append(size)
        return complete(request, **options)

    session.provider.complete = checked  # type: ignore[method-assign]
    for number in range(TURNS):
        result = run_turn(session, f"Part {number + 1} of the work: keep going.")
        assert (result.stop_reason, result.steps) == ("end_turn", STEPS // TURNS + 1)
    session.end("done")
    assert len(sent) == STEPS + TURNS

    window = session.window
    state = window.state
    assert state.cut > 0 and len(state.elided) > STEPS // 2
    assert any(item.form == "pack" for item in state.elided.values())
    events = events_of(session)
    compacted = [event for event in events if event["type"] == "context.compacted"]
    assert len(compacted) == state.rewrites > 0
    for event in compacted:
        parse_body(
            {key: value for key, value in event.items() if key not in ("v", "seq", "ts", "session")}
        )

    # Nothing the model needs is lost: every elided output is the one that was sent
    # (its hash), and reads back byte-identical. Reading back is a scan of the archive,
    # so the suite reads every RECALL_EVERY-th one and every pack; the benchmark
    # (tests/bench/context.py) reads back all of them.
    for target, item in state.elided.items():
        step = int(target.removeprefix("toolu_"))
        original = emitted(step)
        assert item.sha256 == hashlib.sha256(original.encode()).hexdigest()
        assert item.bytes == len(original.encode()) and item.row is not None
        if step % RECALL_EVERY == 0 or item.form == "pack":
            assert recall_output(session, target, item.row) == original, target
    # Without the row the call is found by search.
    assert recall_output(session, call_id(1)) == emitted(1)

    # A resume rebuilds the same elided set from the log alone.
    again = write_script(tmp_path / "again.json", [{"text": "Resumed."}])
    resumed = open_session(workspace, again, tools=[*real_tools(), EMIT], resume=session.id)
    try:
        assert resumed.window is not None
        assert dict(resumed.window.state.elided) == dict(state.elided)
        assert (resumed.window.state.cut, resumed.window.state.stubbed) == (
            state.cut,
            state.stubbed,
        )
        assert len(resumed.messages) == len(session.messages)
        assert run_turn(resumed, "Anything left?").stop_reason == "end_turn"
    finally:
        resumed.end("done")
