"""episode: record what a worker thread delivered (orchestrator mode, issue 26).

An ``episode.recorded`` event in the session's log: the thread, a summary and
the evidence that backs it (paths, commits, checks, log steps). It is the
orchestrator's account of finished work, which a handoff carries forward.
"""

from __future__ import annotations

from pydantic import Field

from ax_policy import ToolFacts

from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, error, guarded

EPISODE_SUMMARY_MAX_CHARS = 4000
EPISODE_EVIDENCE_MAX = 32
EPISODE_EVIDENCE_MAX_CHARS = 500


class EpisodeInput(ToolInput):
    thread: str = Field(min_length=1, description="The thread id of the worker that delivered.")
    summary: str = Field(
        min_length=1,
        max_length=EPISODE_SUMMARY_MAX_CHARS,
        description="What it delivered, as you checked it.",
    )
    evidence: list[str] = Field(
        default_factory=list,
        max_length=EPISODE_EVIDENCE_MAX,
        description="References that back it: paths, commits, checks and their verdicts.",
    )


@guarded
def run(request: EpisodeInput, ctx: ToolContext) -> ToolResult:
    from ax_log import read_events

    from ..delegation.threadlog import fold_threads

    session = ctx.session
    if session is None or not session.orchestrating:
        return error("episode runs only in an orchestrating session's turn")
    known = fold_threads(read_events(session.layout.session_log(session.id), session.id))
    if request.thread not in known:
        names = ", ".join(known) or "none"
        return error(f"no thread {request.thread!r} in this session (threads: {names})")
    long = [ref for ref in request.evidence if len(ref) > EPISODE_EVIDENCE_MAX_CHARS]
    if long:
        return error(f"an evidence reference is longer than {EPISODE_EVIDENCE_MAX_CHARS}")
    session.record(
        {
            "type": "episode.recorded",
            "threadId": request.thread,
            "summary": request.summary,
            "evidence": list(request.evidence),
        }
    )
    message = f"episode of thread {request.thread} recorded ({len(request.evidence)} ref(s))"
    return ToolResult(content=message, summary=message)


TOOL = ModelTool(
    name="episode",
    description=(
        "Record what a worker thread delivered: its thread id, a summary of the work as you "
        "checked it, and the evidence (paths, commits, checks and verdicts)."
    ),
    input_model=EpisodeInput,
    facts=ToolFacts(name="episode", internal=True),
    run=run,
)
