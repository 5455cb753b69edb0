"""``@plan`` and an unknown sigil in the real ax-agent, on a pseudo-terminal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.terminal.conftest import AgentPty, session_events


def test_at_plan_reaches_a_planner_and_an_unknown_sigil_is_refused_by_name(
    agent: Callable[..., AgentPty], state_dir: Path
) -> None:
    delegate = {
        "name": "delegate_task",
        "input": {"tasks": [{"role": "planner", "label": "plan", "prompt": "split the parser"}]},
    }
    term = agent(
        [
            {"tool_calls": [delegate], "expect": "routed this request with @plan"},
            {"text": "The planner says: two steps.", "expect": "first lexer, then parser"},
        ],
        tasks={"plan": [{"text": "first lexer, then parser"}]},
    )
    term.prompt()
    term.line("@deploy everything")
    term.expect("ax-agent: @deploy is not a sigil (known: @plan, @review); nothing was sent")
    term.prompt()
    term.line("@plan split the parser")
    term.expect("The planner says: two steps.")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    events = session_events(state_dir)
    assert "@deploy" not in str([e for e in events if e["type"] == "user.message"])
    [started] = [e for e in events if e["type"] == "task.started"]
    assert (started["taskId"], started["role"]) == ("plan", "planner")
    assert [e["taskId"] for e in events if e["type"] == "task.completed"] == ["plan"]
