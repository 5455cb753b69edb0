"""``/handoff``, ``/resume`` and ``/recover`` in the real terminal (a pseudo-terminal)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .conftest import AgentPty, session_events

Start = Callable[..., AgentPty]


def _of(events: list[dict], kind: str) -> list[dict]:  # type: ignore[type-arg]
    return [event for event in events if event["type"] == kind]


def test_handoff_goes_on_in_the_successor_and_recover_sends_one_failover(
    agent: Start, state_dir: Path
) -> None:
    # Every session replays the script from its start: the first turn fails (a stalled
    # turn), the next answers.
    term = agent([{"error": {"message": "overloaded"}}, {"text": "Going on."}])
    term.prompt()
    term.line("start the work")
    term.expect("overloaded")
    term.prompt()
    term.line("/resume")
    term.expect("/resume: the session is not paused")
    term.prompt()
    term.line("/recover")
    term.expect("Going on.")
    term.expect("not that the work recovered")
    term.prompt()
    first = _of(session_events(state_dir), "session.started")[0]["session"]
    term.line("/handoff --post-check the docs")
    term.expect("handing over to session")
    term.expect(f"session {first} ended (handoff)")
    # The successor's kickoff is its first turn (the script's first turn: it fails).
    term.expect("overloaded")
    term.prompt()
    term.line("/quit")
    assert term.wait() == 0
    events = session_events(state_dir)
    (purpose,) = _of(events, "handoff.purpose")
    assert (purpose["purpose"], purpose["focus"], purpose["session"]) == (
        "post-check",
        "the docs",
        first,
    )
    (entry,) = _of(events, "handoff.entry")
    (claimed,) = _of(events, "handoff.kickoff_claimed")
    assert claimed["session"] == entry["sessionId"] != first
    (failover,) = _of(events, "handoff.failover")
    assert [e["attemptId"] for e in _of(events, "handoff.continued")] == [failover["attemptId"]]
