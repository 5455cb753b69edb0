"""propose_lesson: the model proposes a durable lesson of the project for later sessions.

ax-slate merges it into the project's LESSONS.md by slug (a reused slug
replaces its lesson and moves it to the front), defuses heading-shaped lines
in its text so it cannot forge another lesson, and counts at most three slugs
per session (a resumed session keeps its count); past that, the call is
refused and nothing is written. The lesson is ax's own state, not the
workspace's, so the policy allows it like a note (``internal``).
"""

from __future__ import annotations

from ax_policy import ToolFacts
from ax_slate import LessonInput, LessonResult

from .base import ModelTool, ToolContext, ToolResult
from .common import guarded


@guarded
def run(request: LessonInput, ctx: ToolContext) -> ToolResult:
    result: LessonResult = ctx.seam.call("slate.lesson_propose", request)
    message = f"{result.action} lesson {result.slug!r} in the project's lessons"
    if result.evicted:
        message += f" (the oldest model-written lessons made room: {', '.join(result.evicted)})"
    message += (
        f"; this session may propose {result.remaining} more"
        if result.remaining
        else "; this session may propose no more (reusing one of its slugs updates it)"
    )
    return ToolResult(content=message + ".", summary=f"{result.action} lesson {result.slug}")


TOOL = ModelTool(
    name="propose_lesson",
    description=(
        "Record a durable lesson about this project for later sessions: a pitfall you hit "
        "and its cure, or a non-obvious rule of the codebase, in a few plain lines. Later "
        "sessions are given the lessons as context, marked model-written. At most 3 per "
        "session; reusing a slug replaces that lesson. Not for this session's progress "
        "(the journal records that)."
    ),
    input_model=LessonInput,
    facts=ToolFacts(name="propose_lesson", internal=True),
    run=run,
)
