"""``/plan`` and ``/plan approve`` in the real ax-agent, on a pseudo-terminal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agent.terminal.conftest import AgentPty, session_events

PLAN = {
    "goal": "Split the parser",
    "tasks": [
        {"id": "explore", "title": "Map the parser", "role": "explorer"},
        {"id": "lexer", "title": "Move the lexer", "role": "executor", "touches": ["src"]},
    ],
}


def test_a_person_reads_and_approves_the_plan_the_model_wrote(
    agent: Callable[..., AgentPty], state_dir: Path
) -> None:
    edited = json.loads(json.dumps(PLAN))
    edited["tasks"][1]["touches"] = ["src", "lib"]
    term = agent(
        [
            {"tool_calls": [{"name": "plan_write", "input": PLAN}]},
            {"text": "Planned."},
            {"tool_calls": [{"name": "plan_write", "input": edited}]},
            {"text": "Widened."},
        ]
    )
    term.prompt()
    term.line("plan it")
    term.expect("Planned.")
    # The contextual question, after the turn: declining records nothing, and it is not
    # asked again for the same plan.
    term.expect("awaits your approval. Approve it?")
    term.line("n")
    term.prompt()
    term.line("/plan")
    term.expect("Status: draft, not approved")
    term.expect("`lexer` Move the lexer — **queued**")
    term.prompt()
    term.line("/plan approve")
    term.expect("Approved the plan (sha256 ")
    term.prompt()
    term.line("widen it")
    term.expect(
        "The plan changed and is no longer approved: executor tasks lexer are blocked; "
        "review it with /plan, then /plan approve."
    )
    term.expect("Widened.")
    # The amendment invalidated the approval: asked once; yes runs /plan approve itself.
    term.expect("An amendment ended the plan's approval")
    term.line("y")
    term.expect("Approved the plan (sha256 ")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    events = session_events(state_dir)
    approved = [e for e in events if e["type"] == "plan.approved"]
    written = [e for e in events if e["type"] == "plan.written"]
    assert [e["sha256"] for e in approved] == [e["sha256"] for e in written]
    assert written[0]["sha256"] != written[1]["sha256"]
    assert {e["approver"] for e in approved} == {"terminal"}
