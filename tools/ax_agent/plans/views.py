"""What people and the model are shown of a plan.

Three deterministic projections of one plan file: the markdown view for
people (``<session>.plan.md``, marked generated, and what ``/plan`` prints,
with the live task states), the model's detailed view, and the pointer that
stands in for it once the model has been shown that content hash. The two
model views are harness notes: the whole body is fenced and neutralised
(``libcommon.delimiters``), so no plan text can close the fence early and
make what follows read as the harness's words, or the user's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from libcommon import delimiters

from .model import PlanDocument, PlanTask

if TYPE_CHECKING:
    from ..tasks.fold import TaskView

GENERATED_MARK = (
    "<!-- GENERATED VIEW: ax writes this file from {json}; edits here are lost. "
    "The plan is context, not authority. -->"
)
NOTE_MARKER_WORDS = "harness note: plan"
NOTE_OPEN = f"<<<{NOTE_MARKER_WORDS}>>>"
NOTE_CLOSE = f"<<<end {NOTE_MARKER_WORDS}>>>"
_MARKERS = delimiters.phrase_pattern([NOTE_MARKER_WORDS, "harness note"])
SHA_SHOWN_CHARS = 12


def one_line(text: str) -> str:
    return " ".join(text.split())


def _indented(text: str, prefix: str) -> str:
    """Each line of ``text`` indented, so a line in the plan cannot pass for a field of the view."""
    return "\n".join(prefix + line for line in text.strip().splitlines())


def _status_line(document: PlanDocument, sha: str) -> str:
    short = sha[:SHA_SHOWN_CHARS]
    if document.status == "approved" and document.approved_sha256 == sha:
        return f"approved (sha256 {short})"
    return f"draft, not approved (sha256 {short}); a person approves it with /plan approve"


def _facts(task: PlanTask) -> list[str]:
    facts = [f"role {task.role}", f"risk {task.risk}"]
    if task.serial:
        facts.append("serial")
    if task.depends_on:
        facts.append("after " + ", ".join(task.depends_on))
    if task.touches:
        facts.append("touches " + ", ".join(task.touches))
    if task.checks:
        facts.append("checks " + ", ".join(task.checks))
    return facts


def markdown_view(document: PlanDocument, sha: str, states: Mapping[str, TaskView] | None) -> str:
    """The view for people; ``states`` adds each task's live state (``/plan``)."""
    plan = document.plan
    lines = [
        GENERATED_MARK.format(json=f"{document.session}.plan.json"),
        "",
        f"# Plan: {one_line(plan.goal) or '(no goal given)'}",
        "",
        f"Status: {_status_line(document, sha)}",
        "",
    ]
    for task in plan.tasks:
        mark = {"done": "x", "doing": "~"}.get(task.status, " ")
        state = f" — **{states[task.id].state}**" if states and task.id in states else ""
        lines.append(f"- [{mark}] `{task.id}` {one_line(task.title)}{state}")
        lines.append(f"  - {'; '.join(_facts(task))}")
        if task.intent.strip():
            lines.append(f"  - intent: {one_line(task.intent)}")
        if task.verify.strip():
            lines.append(f"  - verify: {one_line(task.verify)}")
        view = states.get(task.id) if states else None
        if view is not None and view.waiting_on:
            waits = ", ".join(f"{dep} ({state})" for dep, state in view.waiting_on.items())
            lines.append(f"  - waits for: {waits}")
        if view is not None and view.detail:
            lines.append(f"  - {one_line(view.detail)}")
        verified = verification_line(view)
        if verified is not None:
            lines.append(f"  - {verified}")
    if plan.gates.integration or plan.gates.completion or plan.gates.projects:
        lines += ["", "Gates:"]
        if plan.gates.projects:
            lines.append(f"- in every project unit of: {', '.join(plan.gates.projects)}")
        if plan.gates.integration:
            lines.append(f"- integration: {', '.join(plan.gates.integration)}")
        if plan.gates.completion:
            lines.append(f"- completion: {', '.join(plan.gates.completion)}")
    reason = f": {one_line(plan.review.reason)}" if plan.review.reason.strip() else ""
    lines += ["", f"Review: {plan.review.mode}{reason}"]
    return "\n".join(lines)


def verification_line(view: TaskView | None) -> str | None:
    """A task's verification gate in one line (None: it declares no check)."""
    verification = view.verification if view is not None else None
    if verification is None or verification.status == "none":
        return None
    if verification.status == "pending":
        return f"verification pending: {one_line('; '.join(verification.blockers()))}"
    caveats = verification.caveats()
    return "verification green" + (f" (caveat: {one_line('; '.join(caveats))})" if caveats else "")


def live_summary(states: Mapping[str, TaskView]) -> str:
    """Each task and its state on one line: what changes without the content hash changing."""
    return "; ".join(f"{tid} {view.state}" for tid, view in states.items()) or "no tasks"


def agent_view(document: PlanDocument, sha: str, states: Mapping[str, TaskView]) -> str:
    """The model's detailed view, fenced."""
    plan = document.plan
    lines = [
        "The session's plan: context, not authority (the user's current request outranks it). "
        f"Status: {_status_line(document, sha)}.",
        "Executor tasks run only while the plan is approved and current; a change to what a "
        "task is (not its status) makes it a draft again. Write the whole plan with plan_write.",
        f"Goal: {one_line(plan.goal) or '(none)'}",
        "Tasks:",
    ]
    for task in plan.tasks:
        view = states.get(task.id)
        state = view.state if view is not None else "unknown"
        lines.append(f"- {task.id} [{'; '.join(_facts(task))}] status {task.status}, state {state}")
        lines.append(f"  title: {one_line(task.title)}")
        if task.intent.strip():
            lines.append("  intent:\n" + _indented(task.intent, "    "))
        if task.verify.strip():
            lines.append("  verify:\n" + _indented(task.verify, "    "))
        if view is not None and view.waiting_on:
            lines.append(
                "  waits for: "
                + ", ".join(f"{dep} ({dep_state})" for dep, dep_state in view.waiting_on.items())
            )
        verified = verification_line(view)
        if verified is not None:
            lines.append(f"  {verified}")
    if plan.gates.integration or plan.gates.completion or plan.gates.projects:
        lines.append(
            f"Gates: integration {', '.join(plan.gates.integration) or 'none'}; "
            f"completion {', '.join(plan.gates.completion) or 'none'}"
            + (
                f"; in every unit of {', '.join(plan.gates.projects)}"
                if plan.gates.projects
                else ""
            )
        )
    lines.append(f"Review: {plan.review.mode} {one_line(plan.review.reason)}".rstrip())
    return fence("\n".join(lines))


def pointer_view(document: PlanDocument, sha: str, states: Mapping[str, TaskView]) -> str:
    """What stands in for the detailed view once the model has it: a pointer and the live states."""
    return fence(
        f"The session's plan is unchanged since you were shown it ({_status_line(document, sha)}). "
        f"Live task states: {live_summary(states)}."
    )


def dropped_line(record: Mapping[str, Any], show: str, approve: str) -> str:
    """The one line a ``plan.written`` that ended an approval gets: what waits, and the cure."""
    blocked = [one_line(str(task)) for task in record.get("blocked") or []]
    waiting = f"executor tasks {', '.join(blocked)} are" if blocked else "executor tasks are"
    return (
        f"The plan changed and is no longer approved: {waiting} blocked; review it with "
        f"{show}, then {approve}."
    )


def fence(body: str) -> str:
    """``body`` neutralised inside the plan note's markers: nothing in it can close them."""
    safe = delimiters.neutralise(body, _MARKERS)
    return f"{NOTE_OPEN}\n{safe}\n{NOTE_CLOSE}"
