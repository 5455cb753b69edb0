"""Pauses (issue 26): what the turn loop and the session start need of a handoff.

The saved ``handoff.state`` holds the pause. ``context-budget``: a bounded request
reached the user's ``contextBudget`` (counted from ``budgetFloor``), and new prompts
are refused until ``/resume`` or a handoff; the state saves themselves still run.
``adoption``: the successor could not adopt its entry, its kickoff stays pending.
This module imports neither the loop nor the session (they import it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from libcommon.errors import OperationFailed
from libcommon.paths import StateLayout

from .records import PauseReason, Record
from .snapshot import build_snapshot

if TYPE_CHECKING:
    from ..session import Session


def log_events(layout: StateLayout, session_id: str) -> list[Record]:
    from ax_log import read_events

    return list(read_events(layout.session_log(session_id), session_id))


def state_event(
    session: Session,
    pause: PauseReason | None,
    *,
    kickoff_pending: bool,
    detail: str | None = None,
    floor: int = 0,
) -> dict[str, Any]:
    return {
        "type": "handoff.state",
        "snapshot": build_snapshot(
            session.layout, session.id, log_events(session.layout, session.id)
        ),
        "pauseReason": pause,
        "kickoffPending": kickoff_pending,
        "model": session.model,
        "reasoningEffort": session.effort,
        "detail": detail,
        "budgetFloor": floor,
    }


def apply_state(session: Session, state: Record) -> None:
    session.pause_reason = state.get("pauseReason")
    session.effort = state.get("reasoningEffort")
    session.budget_floor = int(state.get("budgetFloor") or 0)


def cure(reason: str) -> str:
    if reason == "adoption":
        return "choose a permitted model and run /resume --model NAME (ax-agent resume)"
    return "/handoff --context-budget to go on in a fresh session, or /resume"


def paused_line(reason: str, detail: Any) -> str:
    why = f": {detail}" if detail else ""
    return f"ax-agent: the session is paused ({reason}{why}); {cure(reason)}"


def request_tokens(session: Session) -> int:
    window = session.window
    if window is None or window.decision is None:
        return 0
    return int(window.decision.tokens_after)


def budget_reached(session: Session) -> bool:
    """Whether the bounded request about to be sent reaches the context budget."""
    budget = session.context_budget
    if budget is None:
        return False
    return request_tokens(session) - session.budget_floor >= budget


def pause_for_budget(session: Session) -> str:
    """Save the context-budget pause; the sentence that says why."""
    detail = (
        f"the request reached {request_tokens(session) - session.budget_floor} tokens of the "
        f"context budget of {session.context_budget}"
    )
    session.record(state_event(session, "context-budget", kickoff_pending=False, detail=detail))
    session.pause_reason = "context-budget"
    return detail


def refuse_if_paused(session: Session) -> None:
    """New prompts are refused while the session is paused (state saves still run)."""
    reason = session.pause_reason
    if reason is not None:
        raise OperationFailed(
            f"the session is paused ({reason}); the prompt was not sent",
            hint=cure(reason),
        )
