"""apply_task_changes: the parent applies an executor's captured files to the workspace.

Parent only: no role's registry holds it, so no child integrates its own work. The
call names the files it applies (``files``; a rename by both its paths), and
ax-policy decides it as writes of exactly those paths: the loop snapshots them
first and records what changed as ``file.mutated`` under the call's one id, so one
undo reverts the whole apply. The per-file rule and the three-way merge offer are
``ax_agent.tasks.integrate``'s; the tool records ``task.applied`` with the files
applied and refused.
"""

from __future__ import annotations

from pydantic import Field

from ax_policy import ToolFacts

from ..seam.models import AppendRequest
from ..tasks.integrate import ApplyRefused, apply_captured
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, error, guarded

# Paths one call names: twice capture's file cap, as a rename is named by both its paths.
APPLY_MAX_FILES = 1000


class ApplyTaskChangesInput(ToolInput):
    task: str = Field(min_length=1, description="The executor task's id (its taskId).")
    group: str = Field(
        default="",
        description="The delegate group that ran it (optional: the task's latest captured "
        "attempt).",
    )
    files: list[str] = Field(
        min_length=1,
        max_length=APPLY_MAX_FILES,
        description="The captured workspace-relative paths to apply; a rename by both its old "
        "and new path.",
    )
    merge: bool = Field(
        default=False,
        description="true: three-way merge files an earlier apply refused (the workspace "
        "changed them), writing only clean merges.",
    )


@guarded
def run(request: ApplyTaskChangesInput, ctx: ToolContext) -> ToolResult:
    from ax_log import log_path, read_events

    log = log_path(ctx.layout, ctx.session_id)
    events = list(read_events(log, ctx.session_id)) if log.exists() else []
    try:
        outcome = apply_captured(
            ctx.layout,
            events,
            request.task,
            request.group or None,
            request.files,
            merge=request.merge,
            environ=ctx.environ,
        )
    except ApplyRefused as refused:
        return error(f"Nothing applied: {refused.message}.")
    ctx.seam.call("log.append", AppendRequest(events=[outcome.event()]))
    lines = [
        f"Task {outcome.task_id} (group {outcome.group}): {len(outcome.applied)} path(s) "
        f"applied, {len(outcome.refused)} refused."
    ]
    lines += [f"applied: {path}" for path in outcome.applied]
    lines += [f"merged: {path}" for path in outcome.merged]
    lines += [f"refused: {path}: {reason}" for path, reason in outcome.refused]
    if outcome.pending:
        lines.append("not named, still to apply: " + ", ".join(outcome.pending))
    summary = lines[0]
    if outcome.refused and not outcome.applied:
        return error("\n".join(lines), summary)
    return ToolResult(content="\n".join(lines), summary=summary)


TOOL = ModelTool(
    name="apply_task_changes",
    description=(
        "Apply an executor task's captured changes to the workspace, file by file; one undo "
        "reverts the whole call. A file the workspace changed since the task's base is "
        "refused by name; for a text file the refusal says whether a three-way merge is "
        "clean, and a second call with merge: true writes the clean merges and shows the "
        "conflicts (never resolved for you). A task is applied once."
    ),
    input_model=ApplyTaskChangesInput,
    facts=ToolFacts(name="apply_task_changes", writes=lambda request: list(request.files)),
    run=run,
)
