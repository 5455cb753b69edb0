"""What a person does with a plan, shared by the terminal (``/plan``) and the command line.

``plan_lines`` is the generated view with each task's live state and where
the plan stands; ``approve`` binds the current content hash and records the
consent (``plan.approved``) through the caller's recorder, after the file
says approved: a crash between the two leaves a plan that says approved
without the consent, which blocks executors (fail closed) until approved again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from libcommon.errors import UsageError
from libcommon.paths import StateLayout, state_layout

from .store import LoadedPlan, approve_plan, plan_state
from .views import markdown_view

# A hash prefix a person names must be at least this long to mean one plan.
SHA_PREFIX_MIN_CHARS = 4
_SHA_PREFIX = re.compile(rf"^[0-9a-f]{{{SHA_PREFIX_MIN_CHARS},64}}$")


def session_events(
    workspace: str | os.PathLike[str] | None, environ: Mapping[str, str], session_id: str
) -> tuple[StateLayout, list[dict[str, Any]]]:
    """The layout and the events of an existing session (refused when it has no log)."""
    from ax_log import read_events, require_log

    layout = state_layout(workspace, environ)
    return layout, list(read_events(require_log(layout, session_id), session_id))


def plan_lines(
    layout: StateLayout, session_id: str, events: Iterable[Mapping[str, Any]]
) -> list[str]:
    from ..tasks.fold import fold_tasks

    events = list(events)
    state = plan_state(layout, session_id, events)
    if state.loaded is None:
        return [state.detail if state.standing == "absent" else f"the plan: {state.detail}"]
    loaded = state.loaded
    states = fold_tasks(loaded.plan, events)
    lines = markdown_view(loaded.document, loaded.sha256, states).split("\n")
    lines += ["", f"Standing: {state.detail}."]
    lines += [f"- {problem}" for problem in state.problems]
    return lines


def check_prefix(expected: str | None) -> str | None:
    if expected is not None and not _SHA_PREFIX.fullmatch(expected.lower()):
        raise UsageError(
            f"{expected!r} is not a content hash prefix",
            hint=f"give {SHA_PREFIX_MIN_CHARS}-64 hex digits of the sha256 /plan shows",
        )
    return expected


def approve(
    layout: StateLayout,
    session_id: str,
    record: Callable[[dict[str, Any]], Any],
    approver: str,
    expected: str | None = None,
) -> LoadedPlan:
    loaded = approve_plan(layout, session_id, check_prefix(expected))
    record(
        {
            "type": "plan.approved",
            "sha256": loaded.sha256,
            "path": str(loaded.path),
            "tasks": len(loaded.plan.tasks),
            "approver": approver,
        }
    )
    return loaded
