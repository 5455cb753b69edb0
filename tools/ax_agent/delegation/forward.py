"""Who answers a delegated task's questions.

A read-only role's child gets ``DecliningApprover``: every ask is a no, and
the task carries on without it. An executor's child gets
``ForwardingApprover``: its question joins the group's one FIFO queue, with
the task named in it, and waits. The parent's thread (``group.run_group``)
takes questions off that queue one at a time and puts them to the parent
session's own approver, never to a terminal directly; so a parent that is not
on a terminal (its approver declines every ask) declines its executors'
questions too, and ``--dangerously-allow-all`` keeps its meaning. A task
stopped while its question waits is answered no at once; the parent, when it
reaches the question, records it dropped without showing it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..approvals import ApprovalAnswer, ApprovalRequest

# How often a waiting question looks whether its task was stopped.
QUESTION_POLL_SECONDS = 0.05


class DecliningApprover:
    """A read-only task's approver: it never says yes."""

    name = "read-only-task"

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer(
            "no", self.name, "a read-only task's questions are declined; it changes nothing"
        )


@dataclass
class Question:
    """One forwarded question, as it waits in the group's queue."""

    task: str
    request: ApprovalRequest
    # Set when the task was stopped: the question is dropped, never shown.
    stopped: threading.Event
    answered: threading.Event = field(default_factory=threading.Event)
    answer: ApprovalAnswer | None = None
    # What the task is and where it works, as the question says it (None: an executor's).
    kind: str | None = None

    def forwarded(self) -> ApprovalRequest:
        """The request as the parent's approver sees it: the task named, one-off answers
        only (a grant would belong to the child's session, which ends with the task)."""
        request = replace(self.request, task=self.task, offers=("no", "once"))
        return request if self.kind is None else replace(request, task_kind=self.kind)


@dataclass
class ForwardingApprover:
    """An executor's approver: its questions go to the parent's, through ``post``."""

    task: str
    post: Callable[[Question], None]
    stopped: threading.Event
    name: str = "parent"
    # What the task is and where it works (None: an executor, in its own worktree).
    kind: str | None = None

    def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        question = Question(self.task, request, self.stopped, kind=self.kind)
        self.post(question)
        while not question.answered.wait(QUESTION_POLL_SECONDS):
            if self.stopped.is_set():
                return ApprovalAnswer("no", self.name, "the task was stopped while it waited")
        assert question.answer is not None
        return question.answer
