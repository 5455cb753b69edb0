"""What is unfinished in a session, read from its log (for the journal's Handoff; ``/accept``
reads the acceptance state, ``ax_agent.acceptance``, whose last-turn rule is this one).

Three things make work unfinished: the last turn did not end with the model's
answer (it was interrupted or stopped by a limit or an error); the last check
did not pass; files changed after the last passing check (or with no check run
at all). The list is shown and recorded; accepting anyway is the person's call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FINISHED_REASONS = frozenset({"end_turn", "stop_sequence"})
# Changed files named in one unfinished item before "and N more".
UNFINISHED_MAX_PATHS = 5


def unfinished_in(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """What ``events`` (one session's, in log order) leave unfinished."""
    last_turn: Mapping[str, Any] | None = None
    last_check: Mapping[str, Any] | None = None
    changed: list[str] = []
    for record in events:
        kind = record.get("type")
        if kind in ("turn.completed", "turn.aborted"):
            last_turn = record
        elif kind == "check.completed":
            last_check = record
            if record.get("verdict") == "passed":
                changed = []
        elif kind == "file.mutated":
            path = str(record.get("path"))
            if path not in changed:
                changed.append(path)
        elif kind == "undo.applied":
            changed = [path for path in changed if path not in record.get("paths", [])]
    found = []
    turn = _turn_problem(last_turn)
    if turn is not None:
        found.append(turn)
    if last_check is not None and last_check.get("verdict") != "passed":
        found.append(
            f"the last {last_check.get('kind')} check did not pass ({last_check.get('verdict')})"
        )
    if changed:
        shown = ", ".join(changed[:UNFINISHED_MAX_PATHS])
        more = len(changed) - UNFINISHED_MAX_PATHS
        when = "since the last passing check" if last_check is not None else "and no check ran"
        found.append(f"files changed {when}: {shown}" + (f" and {more} more" if more > 0 else ""))
    return found


def last_turn_problem(events: Iterable[Mapping[str, Any]]) -> str | None:
    """Why the last turn did not end with the model's answer, or None."""
    last = None
    for record in events:
        if record.get("type") in ("turn.completed", "turn.aborted"):
            last = record
    return _turn_problem(last)


def _turn_problem(last_turn: Mapping[str, Any] | None) -> str | None:
    if last_turn is not None and last_turn.get("type") == "turn.aborted":
        return f"the last turn was interrupted ({last_turn.get('phase')})"
    if last_turn is not None and last_turn.get("stopReason") not in FINISHED_REASONS:
        return f"the last turn did not finish ({last_turn.get('stopReason')})"
    return None
