"""Contextual consent: a question asked where a person would otherwise need to remember a
command.

Four decisions, each a pure fold over the plan file and the log (``offer``):

- a plan awaiting its first approval (a draft, and the log records no
  approval of any plan): ``/plan approve SHA``;
- an approval an amendment invalidated (the log approved another sha):
  ``/plan approve SHA`` for the amended one;
- an open repair escalation (the ledger's person-decides item):
  ``/repair dismiss N REASON``;
- a session that would accept cleanly (COMPLETE, work done, nothing accepted
  since): ``/accept``. A session with an approved plan whose tasks are all
  done is asked at the turn boundary (the plan's delivery is the moment); a
  session with no plan only at the typed ``/quit``, never at end of input or
  a double Ctrl+C: walking away is not consent.

Three properties hold it together. It is asked on a terminal only (off one,
a question would eat a driver's next line). It is asked after the turn's
``finally`` (``repl.Terminal`` calls it once the turn has fully ended), at
most one question per boundary. And it appends nothing of its own: "yes"
runs the slash command's own line through the same dispatch
(``commands.run_line``), "no" records nothing and the terminal remembers, in
memory only, not to ask it again for the same state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from libcommon.paths import StateLayout

from . import commands

OfferKind = Literal["approve", "reapprove", "repair", "accept"]
# The reason a dismissal at the question records (the person answered a question naming it).
QUESTION_DISMISS_REASON = "dismissed by the person at the terminal's question"
_WORK = frozenset({"file.mutated", "undo.applied", "task.applied"})


@dataclass(frozen=True)
class Offer:
    kind: OfferKind
    question: str
    # The slash command line a "yes" runs (exactly what a person would type).
    command: str
    # What the state was (accept: the log's length), so a "no" silences this state only.
    basis: str = ""

    @property
    def key(self) -> str:
        """The decision's identity: declining it silences this state, not the next one."""
        return f"{self.kind} {self.command} {self.basis}"


def offer(
    layout: StateLayout, session_id: str, events: Sequence[Mapping[str, Any]], *, at_quit: bool
) -> Offer | None:
    """The one question this boundary may ask, or None (see the module docstring)."""
    from ..acceptance import session_acceptance
    from ..plans.store import plan_state
    from ..recovery.ledger import repair_ledger

    state = plan_state(layout, session_id, events)
    loaded = state.loaded
    if loaded is not None and state.standing in ("draft", "diverged", "unconsented"):
        short, tasks = loaded.sha256[:12], len(loaded.plan.tasks)
        command = f"/plan approve {loaded.sha256}"
        if not any(e.get("type") == "plan.approved" for e in events):
            question = f"The plan (sha256 {short}, {tasks} tasks) awaits your approval. Approve it?"
            return Offer("approve", question, command)
        question = (
            f"An amendment ended the plan's approval ({state.detail}). "
            f"Approve the amended plan (sha256 {short}, {tasks} tasks)?"
        )
        return Offer("reapprove", question, command)
    for repair in repair_ledger(events).repairs:
        if repair.escalation:
            question = (
                f"Repair {repair.number} waits for your decision: {repair.line()}. "
                "Dismiss it? (It stays a caveat at acceptance.)"
            )
            return Offer(
                "repair", question, f"/repair dismiss {repair.number} {QUESTION_DISMISS_REASON}"
            )
    delivered = state.approved_and_current and _plan_done(loaded, events)
    if not (delivered or (at_quit and not state.exists)) or not _unaccepted_work(events):
        return None
    if not session_acceptance(layout, session_id).complete:
        return None
    question = "This session's work accepts cleanly (COMPLETE). Accept it?"
    return Offer("accept", question, "/accept", str(len(events)))


def _plan_done(loaded: Any, events: Sequence[Mapping[str, Any]]) -> bool:
    from ..tasks.fold import fold_tasks

    views = fold_tasks(loaded.plan, events).values()
    return all(view.state in ("completed", "parent-owned") for view in views)


def _unaccepted_work(events: Sequence[Mapping[str, Any]]) -> bool:
    """Work was done, and no ``/accept`` has been recorded since the newest of it."""
    last_work = max((p for p, e in enumerate(events) if e.get("type") in _WORK), default=None)
    if last_work is None:
        return False
    return not any(e.get("type") == "session.accepted" for e in events[last_work:])


def ask(context: commands.Context, found: Offer) -> bool:
    """Ask ``found``; on yes, run its command line exactly as typed. Whether it was run."""
    if context.confirm is None or not context.confirm(found.question):
        return False
    commands.run_line(context, found.command)
    return True
