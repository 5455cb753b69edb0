"""slate_trail: the session's Trail, one line per executed tool call (read-only).

The Trail is written by the harness, never by the model; this tool only reads
it, for the live session. A step that saved its full output says so, with the
call that reads it.
"""

from __future__ import annotations

from pydantic import Field

from ax_policy import ToolFacts
from ax_slate import TrailEntry

from ..seam.models import TrailRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import Refused, ToolInput, guarded

TRAIL_MAX_COUNT = 200
TRAIL_DEFAULT_COUNT = 20


class SlateTrailInput(ToolInput):
    count: int = Field(
        default=TRAIL_DEFAULT_COUNT,
        ge=1,
        le=TRAIL_MAX_COUNT,
        description="How many entries: the newest that pass the filters.",
    )
    tool: str = Field(default="", description="Only calls of this tool (e.g. run_command).")
    file: str = Field(default="", description="Only calls whose arguments mention this text.")
    from_step: int = Field(default=0, ge=0, description="First step (0: no lower bound).")
    to_step: int = Field(default=0, ge=0, description="Last step (0: no upper bound).")


def trail_line(entry: TrailEntry) -> str:
    line = f"#{entry.step} {entry.ts} {entry.tool} {entry.args_digest} -> {entry.outcome}"
    if entry.output is not None:
        line += f' [full output: recall_step {{"step": {entry.step}}}]'
    return line


@guarded
def run(request: SlateTrailInput, ctx: ToolContext) -> ToolResult:
    if request.from_step and request.to_step and request.from_step > request.to_step:
        raise Refused(f"from_step {request.from_step} is after to_step {request.to_step}")
    entries: list[TrailEntry] = ctx.seam.call(
        "slate.trail",
        TrailRequest(
            count=request.count,
            tool=request.tool or None,
            file=request.file or None,
            from_step=request.from_step or None,
            to_step=request.to_step or None,
        ),
    )
    if not entries:
        return ToolResult(content="No trail entries match.", summary="no trail entries")
    lines = [trail_line(entry) for entry in entries]
    if entries[0].step > 1 and len(entries) == request.count:
        lines.append(
            f'[older entries: slate_trail {{"to_step": {entries[0].step - 1}, '
            f'"count": {request.count}}}]'
        )
    first, last = entries[0].step, entries[-1].step
    return ToolResult(content="\n".join(lines), summary=f"trail steps {first}-{last}")


TOOL = ModelTool(
    name="slate_trail",
    description=(
        "List the session's Trail: one line per tool call already run (step, tool, "
        "arguments, outcome), newest last. Use it to find a step after older messages "
        "left the conversation; recall_step reads a step's saved full output."
    ),
    input_model=SlateTrailInput,
    facts=ToolFacts(name="slate_trail", internal=True),
    run=run,
)
