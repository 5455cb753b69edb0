"""git_checkpoint: a recovery point of the whole working tree, as a commit under a hidden ref.

It covers what the typed tools' snapshots cannot: files a shell command rewrote. Its
schema takes an optional label and nothing else, so it cannot express a restore, a
reset, a commit or a push; restoring is a person's action (``ax-log checkpoint
restore``). ax-policy allows it as reversible under the per-session cap (the loop
fills the checkpoint fact's count from the live refs) and ax-log refuses past the cap
too.
"""

from __future__ import annotations

from pydantic import Field

from ax_log import CreatedView
from ax_policy import CheckpointFact, ToolFacts

from ..seam.models import CheckpointCreateRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, guarded

LABEL_MAX_CHARS = 200


class GitCheckpointInput(ToolInput):
    label: str = Field(
        default="",
        max_length=LABEL_MAX_CHARS,
        description="A short note on what the checkpoint is before, e.g. 'before the formatter' "
        "(optional).",
    )


@guarded
def run(request: GitCheckpointInput, ctx: ToolContext) -> ToolResult:
    created: CreatedView = ctx.seam.call(
        "log.checkpoint_create",
        CheckpointCreateRequest(kind="agent", label=request.label.strip() or None),
    )
    lines = [f"checkpoint {created.session}/{created.n} ({created.commit[:12]}) taken"]
    lines += [f"left out: {item.path} ({item.reason})" for item in created.skipped]
    lines += [f"not captured (submodule): {path}" for path in created.submodules]
    lines += created.notes
    summary = lines[0]
    return ToolResult(content="\n".join(lines), summary=summary)


TOOL = ModelTool(
    name="git_checkpoint",
    description=(
        "Save a recovery point of the whole working tree (tracked files and untracked ones "
        "git does not ignore) before a risky step, such as a formatter or a code generator "
        "run with run_command. It changes nothing git status, log or branch shows; only the "
        "user can restore it. Takes an optional label."
    ),
    input_model=GitCheckpointInput,
    # ``taken`` is filled by the loop from the session's live checkpoints before deciding.
    facts=ToolFacts(name="git_checkpoint", checkpoint=lambda _input: CheckpointFact(taken=0)),
    run=run,
)
