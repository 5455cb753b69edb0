"""One acceptance state: COMPLETE, or the blockers and caveats that say why not.

``acceptance_state`` is the one function ``/accept``, the contextual question
at ``/quit`` and the report (``ax-agent``'s ``/report`` and the journal pass
it to ``build_report``; ``ax-report`` alone renders the state ``/accept``
recorded) all read. It is pure over (plan, events) and reads the same folds as
the gates:

- the last turn: interrupted, or stopped short of the model's answer;
- the plan: a plan that exists but is not approved and current (its
  standing, given by the caller, which reads the file); each task not done;
  each task's verification gate (``tasks.verify``: its blockers, and its loud
  toolchain waivers as caveats); the plan's completion gates, on the
  workspace after its newest change;
- review (``tasks.review``): its blockers; refutes, acceptances, a waiver and
  the inspector's advisory findings as caveats;
- repairs (``recovery.ledger``): open ones block, dismissed ones are caveats;
- unchecked changed files: a file changed with no genuine passing run (a
  paired start and pass, ``tasks.verify.check_runs``) started after the
  change; a targeted run covers only the files in its scope. A check
  completion with no start proves nothing, and is a caveat;
- web research consulted (``research.*`` and ``web.*`` events, when a session
  has them): a caveat, since outside text informed the work; and one caveat per
  finding (``research.source``) that rests on a single source, on sources that
  disagree, or on none verified. Research never blocks and never verifies: no
  research event counts as a check run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from libcommon.paths import StateLayout

from .plans.model import Plan, PlanTask
from .plans.validate import overlaps
from .recovery.ledger import repair_ledger
from .tasks.fold import fold_tasks
from .tasks.review import review_state
from .tasks.verify import Ledger, check_runs, verify_task

# A turn ended with the model's answer (anything else left the work unfinished).
FINISHED_REASONS = frozenset({"end_turn", "stop_sequence"})
# Changed files named in the unchecked-files blocker before "and N more".
UNFINISHED_MAX_PATHS = 5
# Event type prefixes that record web research consulted.
RESEARCH_PREFIXES = ("research.", "web.")
_DONE = frozenset({"completed", "parent-owned"})
_CHANGES = frozenset({"file.mutated", "undo.applied", "task.applied"})
# What /accept records the state in (the report reads the newest).
ACCEPTED_EVENT = "session.accepted"


@dataclass(frozen=True)
class Acceptance:
    blockers: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.blockers

    def lines(self) -> list[str]:
        head = "COMPLETE" if self.complete else f"NOT COMPLETE: {len(self.blockers)} blocker(s)"
        lines = [head]
        lines += [f"  blocker: {item}" for item in self.blockers]
        lines += [f"  caveat: {item}" for item in self.caveats]
        return lines

    def as_json(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "blockers": list(self.blockers),
            "caveats": list(self.caveats),
        }


def acceptance_state(
    plan: Plan | None, events: Iterable[Mapping[str, Any]], plan_problem: str | None = None
) -> Acceptance:
    """The session's acceptance state (see the module docstring)."""
    events = list(events)
    blockers: list[str] = []
    caveats: list[str] = []
    turn = last_turn_problem(events)
    if turn is not None:
        blockers.append(turn)
    ledger = check_runs(events)
    if plan_problem is not None:
        blockers.append(f"plan: {plan_problem}")
    if plan is not None:
        _plan(plan, events, ledger, blockers, caveats)
    review = review_state(plan, events)
    blockers += review.blockers()
    caveats += review.caveats()
    caveats += [f"advisory (inspector): {finding.text()}" for finding in review.advisory]
    repairs = repair_ledger(events, ledger)
    blockers += repairs.blockers()
    caveats += repairs.caveats()
    unchecked = unchecked_files(events, ledger)
    if unchecked:
        shown = ", ".join(unchecked[:UNFINISHED_MAX_PATHS])
        more = len(unchecked) - UNFINISHED_MAX_PATHS
        blockers.append(
            "files changed with no passing check started after the change: "
            + shown
            + (f" and {more} more" if more > 0 else "")
        )
    caveats += [f"event {forged.position}: {forged.why}" for forged in ledger.forged]
    research = sum(1 for e in events if str(e.get("type", "")).startswith(RESEARCH_PREFIXES))
    if research:
        caveats.append(
            f"web research was consulted ({research} event(s)): outside text informed it"
        )
        caveats += _weak_findings(events)
    return Acceptance(tuple(blockers), tuple(caveats))


# What each weak research verdict says in a caveat (issue 25).
_WEAK_FINDING = {
    "single-source": "rests on a single source",
    "disputed": "rests on sources that disagree",
    "unverified": "is unverified",
}


def _weak_findings(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """A caveat per research finding that rests on one source or on disagreeing ones."""
    said: dict[str, str] = {}
    for event in events:
        if event.get("type") != "research.source":
            continue
        why = _WEAK_FINDING.get(str(event.get("verdict")))
        note = str(event.get("noteId"))
        if why is not None and note not in said:
            sources = ", ".join(str(url) for url in event.get("sources") or [])
            said[note] = f"web finding {note} {why}: {event.get('claim')} ({sources})"
    return list(said.values())


def last_turn_problem(events: Iterable[Mapping[str, Any]]) -> str | None:
    """Why the last turn did not end with the model's answer, or None."""
    last = None
    for record in events:
        if record.get("type") in ("turn.completed", "turn.aborted"):
            last = record
    if last is not None and last.get("type") == "turn.aborted":
        return f"the last turn was interrupted ({last.get('phase')})"
    if last is not None and last.get("stopReason") not in FINISHED_REASONS:
        return f"the last turn did not finish ({last.get('stopReason')})"
    return None


def _plan(
    plan: Plan,
    events: Sequence[Mapping[str, Any]],
    ledger: Ledger,
    blockers: list[str],
    caveats: list[str],
) -> None:
    for view in fold_tasks(plan, events, ledger).values():
        if view.state not in _DONE:
            blockers.append(f"task {view.id} is {view.state}")
        if view.verification is not None:
            blockers += [f"task {view.id}: {item}" for item in view.verification.blockers()]
            caveats += [f"task {view.id}: {item}" for item in view.verification.caveats()]
    if plan.gates.completion:
        final = PlanTask(id="completion", title="completion gates", role="parent",
                         checks=list(plan.gates.completion))  # fmt: skip
        anchor = max((p for p, e in enumerate(events, 1) if _is_change(e)), default=None)
        verification = verify_task(
            plan, final, anchor, ledger, "nothing changed the workspace, so nothing to gate"
        )
        if anchor is not None:
            blockers += [f"completion gate: {item}" for item in verification.blockers()]
            caveats += [f"completion gate: {item}" for item in verification.caveats()]


def _is_change(event: Mapping[str, Any]) -> bool:
    return event.get("type") in _CHANGES and (
        event.get("type") != "task.applied" or bool(event.get("applied"))
    )


def _paths(event: Mapping[str, Any]) -> list[str]:
    if event.get("type") == "file.mutated":
        return [str(event.get("path"))]
    return [str(path) for path in event.get("paths") or event.get("applied") or []]


def unchecked_files(events: Sequence[Mapping[str, Any]], ledger: Ledger | None = None) -> list[str]:
    """Files whose newest change no genuine passing run started after (in change order)."""
    ledger = ledger or check_runs(events)
    changed: dict[str, int] = {}
    for position, event in enumerate(events, start=1):
        if _is_change(event):
            for path in _paths(event):
                changed.pop(path, None)
                changed[path] = position
    passes = [r for r in ledger.runs if r.verdict == "passed" and r.started is not None]
    # A whole-project pass checks every file changed before its start: one number suffices,
    # so a long session's many files and runs stay linear; targeted passes check their scope.
    whole = max((r.started or 0 for r in passes if r.kind != "test-targeted"), default=0)
    targeted = [r for r in passes if r.kind == "test-targeted"]
    return [
        path
        for path, at in changed.items()
        if at >= whole
        and not any(
            (run.started or 0) > at and any(overlaps(item, path) for item in run.scope)
            for run in targeted
        )
    ]


def session_acceptance(layout: StateLayout, session_id: str) -> Acceptance:
    """The acceptance state of a stored session: its log, and its plan file as it is now."""
    from ax_log import log_path, read_events

    from .plans.store import plan_state

    events = list(read_events(log_path(layout, session_id), session_id))
    state = plan_state(layout, session_id, events)
    plan = state.loaded.plan if state.loaded is not None else None
    problem = None if not state.exists or state.approved_and_current else state.detail
    return acceptance_state(plan, events, problem)


def accepted_event(state: Acceptance) -> dict[str, Any]:
    """What ``/accept`` records: the state, whole (``unfinished``: its blockers)."""
    return {
        "type": ACCEPTED_EVENT,
        "unfinished": list(state.blockers),
        "complete": state.complete,
        "caveats": list(state.caveats),
    }
