"""triage_finding: the parent judges one of its reviewers' findings (the review ledger).

A model tool rather than a terminal command: the parent agent is the one that
reads the code and runs the checks a finding is judged by, and the ledger
labels a refute as an UNVERIFIED MODEL CLAIM precisely because a model made
it. A person's word enters through the plan (a waived review) and ``/accept``.

The call is refused, with nothing recorded, when ``tasks.review.triage_problem``
says so (the fold asks the same question on replay, so a forged
``review.triaged`` clears nothing): an unknown finding, an empty reason,
``accept`` of a critical or high one, ``address`` without refs to workspace
changes that exist and postdate the finding. Otherwise it records
``review.triaged``. The record is ax's own state (``internal``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ax_policy import ToolFacts

from ..seam.models import AppendRequest
from ..tasks.review import WORK_EVENTS, review_state, triage_problem
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, error, guarded

TRIAGE_REASON_MAX_CHARS = 1000
TRIAGE_REFS_MAX = 20
# Workspace changes after a finding listed when address names none that count.
CANDIDATE_REFS_SHOWN = 10


class TriageFindingInput(ToolInput):
    finding: str = Field(
        min_length=1, max_length=200, description="The finding's id, as group/task/number."
    )
    action: Literal["verify", "refute", "accept", "address"] = Field(
        description="verify: it is real and unfixed (it keeps blocking); refute: it is wrong "
        "(shown everywhere as an unverified model claim); accept: live with it (medium and "
        "low only); address: it is fixed by the changes named in refs."
    )
    reason: str = Field(min_length=1, max_length=TRIAGE_REASON_MAX_CHARS, description="Why.")
    refs: list[int] = Field(
        default_factory=list,
        max_length=TRIAGE_REFS_MAX,
        description="For address: the seq of the events that changed the workspace to fix it.",
    )


def _events(ctx: ToolContext) -> list[dict[str, Any]]:
    from ax_log import read_events

    return list(read_events(ctx.layout.session_log(ctx.session_id), ctx.session_id))


@guarded
def run(request: TriageFindingInput, ctx: ToolContext) -> ToolResult:
    from ..plans.store import read_plan

    events = _events(ctx)
    loaded = read_plan(ctx.layout, ctx.session_id)
    state = review_state(loaded.plan if loaded is not None else None, events)
    finding = state.find(request.finding)
    problem = triage_problem(
        finding,
        request.finding,
        request.action,
        request.reason,
        request.refs,
        events,
        len(events) + 1,
    )
    if problem is not None:
        lines = [f"Not recorded: {problem}."]
        if finding is None:
            shown = ", ".join(f.key for f in state.findings) or "none"
            lines.append(f"The blocking findings: {shown}.")
        elif request.action == "address":
            lines.append(_candidates(events, finding.position))
        return error("\n".join(lines), f"triage refused: {request.finding}")
    event = {
        "type": "review.triaged",
        "finding": request.finding,
        "action": request.action,
        "reason": request.reason,
        "refs": list(request.refs),
    }
    ctx.seam.call("log.append", AppendRequest(events=[event]))
    message = f"recorded: finding {request.finding} {request.action}"
    if request.action == "refute":
        message += " (shown everywhere as an UNVERIFIED MODEL CLAIM, and a caveat at acceptance)"
    elif request.action == "verify":
        message += " (it keeps blocking until it is addressed)"
    return ToolResult(content=message + ".", summary=message)


def _candidates(events: list[dict[str, Any]], after: int) -> str:
    found = []
    for position, event in enumerate(events, start=1):
        if position > after and event.get("type") in WORK_EVENTS:
            where = event.get("path") or ", ".join(map(str, event.get("applied") or []))
            found.append(f"seq {event.get('seq', position)} {event.get('type')} {where}")
    if not found:
        return "No change to the workspace is recorded after the finding."
    shown = found[-CANDIDATE_REFS_SHOWN:]
    return "Workspace changes after the finding: " + "; ".join(shown) + "."


TOOL = ModelTool(
    name="triage_finding",
    description=(
        "Judge one finding your reviewer tasks reported (its id is group/task/number): "
        "verify (real, unfixed: it keeps blocking), refute (wrong: recorded as an unverified "
        "model claim and shown at acceptance), accept (medium or low only: live with it), "
        "or address (fixed: refs are the seq of the workspace changes that fixed it). Every "
        "finding blocks acceptance until it is triaged."
    ),
    input_model=TriageFindingInput,
    facts=ToolFacts(name="triage_finding", internal=True),
    run=run,
)
