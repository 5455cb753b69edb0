"""The plan's per-turn note: what rides on each user message while the session has a plan.

The detailed view goes with the first turn that meets a content hash the
model has not been shown (or whose detailed view has since left the request,
or been sent as a stub);
every other turn carries the pointer, which always holds the live task states,
because they change without the hash changing. A session with no plan gets no
note. What the model was shown lives in this process only: a resumed session's
rebuilt history holds no notes, so its first turn is shown the detailed view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.errors import CorruptStore

from .store import read_plan
from .views import agent_view, fence, pointer_view

if TYPE_CHECKING:
    from ..session import Session


def plan_note(session: Session, anchor: int) -> str | None:
    """The note for the user message at history index ``anchor``, or None without a plan."""
    from ax_log import read_events

    from ..tasks.fold import fold_tasks

    try:
        loaded = read_plan(session.layout, session.id)
    except CorruptStore as exc:
        return fence(
            f"The session's plan file cannot be read ({exc.message}). Nothing can be "
            "delegated to an executor until a person repairs or removes it."
        )
    if loaded is None:
        return None
    events = read_events(session.layout.session_log(session.id), session.id)
    states = fold_tasks(loaded.plan, events)
    shown = session.plan_shown
    if shown is not None and shown[0] == loaded.sha256 and _still_sent(session, shown[1]):
        return pointer_view(loaded.document, loaded.sha256, states)
    session.plan_shown = (loaded.sha256, anchor)
    return agent_view(loaded.document, loaded.sha256, states)


def _still_sent(session: Session, anchor: int) -> bool:
    """The message at ``anchor`` is still sent whole (bounded context may cut or stub it)."""
    if session.window is None:
        return True
    state = session.window.state
    return anchor >= state.cut and anchor not in state.stubbed
