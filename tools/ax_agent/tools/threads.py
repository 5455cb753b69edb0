"""threads: list the worker threads, send one a follow-up, or stop one (issue 26).

A follow-up continues the same worker's conversation (its session opened again
from its log), in this process or in a parent started later: a thread id from
an earlier session's ``thread`` result is enough. A stopped thread takes no
follow-up. The call touches only ax's own state (``internal``): the worker it
steers was a person's decision when it was dispatched, and each of its own
calls is decided and asked as any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from ax_policy import ToolFacts

from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, error, guarded
from .thread import THREAD_TASK_MAX_CHARS, outcome_text

if TYPE_CHECKING:
    from ..session import Session


class ThreadsInput(ToolInput):
    action: Literal["list", "send", "stop"] = Field(
        default="list",
        description="list: every thread and its last answer; send: a follow-up to one; "
        "stop: end one for good.",
    )
    thread: str = Field(default="", description="The thread id (for send and stop).")
    message: str = Field(
        default="",
        max_length=THREAD_TASK_MAX_CHARS,
        description="The follow-up (for send): the worker sees its own earlier turns.",
    )

    @model_validator(mode="after")
    def _complete(self) -> ThreadsInput:
        if self.action != "list" and not self.thread:
            raise ValueError(f"{self.action} needs the thread id")
        if self.action == "send" and not self.message.strip():
            raise ValueError("send needs a message")
        return self


@guarded
def run(request: ThreadsInput, ctx: ToolContext) -> ToolResult:
    from ax_log import read_events

    from ..delegation.threadlog import fold_threads
    from ..delegation.threads import run_thread_turn, stop_thread, worker_label

    session = ctx.session
    if session is None or not session.orchestrating:
        return error("threads runs only in an orchestrating session's turn")
    if request.action == "list":
        views = fold_threads(read_events(session.layout.session_log(session.id), session.id))
        if not views:
            return ToolResult(content="no threads yet", summary="no threads")
        lines = [
            f"{view.thread_id} {view.label}: {'stopped' if view.ended else 'open'}, "
            f"{view.turns} answer(s); last: {view.last or '(none)'}"
            for view in views.values()
        ]
        return ToolResult(content="\n".join(lines), summary=f"{len(lines)} thread(s)")
    label = worker_label(session, request.thread)
    if request.action == "stop":
        stop_thread(session, request.thread)
        message = f"thread {request.thread} ({label}) stopped"
        return ToolResult(content=message, summary=message)
    outcome = run_thread_turn(
        session, label=label, text=request.message, abort=ctx.abort, thread_id=request.thread
    )
    return outcome_text(outcome)


def precheck(request: ThreadsInput, session: Session) -> str | None:
    """A thread that is no worker's, or a stopped one, is refused before anyone is asked."""
    from ..delegation.threads import worker_label

    if request.action != "list":
        worker_label(session, request.thread)
    return None


def _starts(request: ThreadsInput) -> list[str]:
    """The roles the call starts: a follow-up runs a turn of a worker (a person's
    decision, as its dispatch was); a list or a stop starts nothing."""
    return ["worker"] if request.action == "send" else []


TOOL = ModelTool(
    name="threads",
    description=(
        "The worker threads: list them (with each one's last answer), send one a follow-up "
        "(it continues its own conversation and answers), or stop one for good."
    ),
    input_model=ThreadsInput,
    facts=ToolFacts(name="threads", delegates=_starts),
    run=run,
    precheck=precheck,
)
