"""recall_step: a page of the full output an earlier step saved (cut from its result)."""

from __future__ import annotations

from pydantic import Field

from ax_policy import ToolFacts
from ax_slate import RecallPage

from ..seam.models import RecallRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, guarded


class RecallStepInput(ToolInput):
    step: int = Field(ge=1, description="The step whose full output to read.")
    page: int = Field(default=1, ge=1, description="The page to read (1-based).")


@guarded
def run(request: RecallStepInput, ctx: ToolContext) -> ToolResult:
    page: RecallPage = ctx.seam.call(
        "slate.recall", RecallRequest(step=request.step, page=request.page)
    )
    where = f"step {page.step}, page {page.page} of {page.pages}"
    follow = (
        f"\n[{where}. Next: recall_step(step={page.step}, page={page.page + 1})]"
        if page.page < page.pages
        else f"\n[{where}: the end]"
    )
    return ToolResult(content=page.text + follow, summary=f"recalled {where}")


TOOL = ModelTool(
    name="recall_step",
    description=(
        "Read the full output of an earlier step whose result was cut (its result names "
        "the step), one page at a time."
    ),
    input_model=RecallStepInput,
    facts=ToolFacts(name="recall_step", internal=True),
    run=run,
)
