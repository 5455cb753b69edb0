"""plan_write: the model writes the session's structured plan, whole (issue 21).

The plan is validated first and refused whole, with every problem listed,
when it breaks a rule; nothing is written then. A write that changes only
progress marks keeps an approved plan approved; any other change makes it a
draft again, which blocks executors until a person approves it
(``/plan approve``). The plan file is ax's own state, not the workspace's, so
the policy allows the call like a note (``internal``); what a plan can unlock
is gated by the person's approval, never by this call.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ax_policy import ToolFacts

from ..plans.model import Plan, ReviewMode, Risk, Role, TaskStatus
from ..plans.store import APPROVE_COMMAND, PlanRefused, plan_path, write_plan
from ..seam.models import AppendRequest
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, error, guarded


class TaskInput(ToolInput):
    id: str = Field(
        description="A stable slug naming the task for good: lowercase letters, digits and "
        "'-', e.g. 'parse-config'. Keep it when the task is reworded."
    )
    title: str = Field(description="A few words a person recognises the task by.")
    intent: str = Field(default="", description="What the task must achieve, and why.")
    role: Role = Field(
        description="Who does it: parent (you, in the workspace), executor (a delegated task "
        "that writes, in its own worktree), or a read-only helper (explorer, planner, "
        "reviewer, inspector, researcher)."
    )
    depends_on: list[str] = Field(
        default_factory=list, description="Ids of the tasks that must be done first."
    )
    touches: list[str] = Field(
        default_factory=list,
        description="Workspace-relative folders or files the task may change ('.' is the "
        "whole workspace). Required for an executor: two executors that touch the same "
        "place never run side by side.",
    )
    verify: str = Field(default="", description="How to tell the task is done.")
    checks: list[str] = Field(
        default_factory=list,
        description="Check kinds that verify it: build, test, test-targeted, typecheck, "
        "lint, format, static-analysis.",
    )
    risk: Risk = Field(default="low", description="low, medium or high (high runs alone).")
    serial: bool = Field(default=False, description="true: it runs alone, beside no other.")
    status: TaskStatus = Field(
        default="todo",
        description="Your progress mark. Changing only marks keeps an approved plan approved.",
    )


class PlanWriteInput(ToolInput):
    goal: str = Field(default="", description="What the whole plan achieves, in a sentence.")
    tasks: list[TaskInput] = Field(description="The tasks, in the order a person reads them.")
    integration_checks: list[str] = Field(
        default_factory=list,
        description="Check kinds that must pass after a task's changes are applied.",
    )
    completion_checks: list[str] = Field(
        default_factory=list, description="Check kinds that must pass before the work is done."
    )
    gate_projects: list[str] = Field(
        default_factory=list,
        description="Project units (workspace-relative folders) in which every task's checks "
        "must pass, each of them; empty: the units the checks ran in.",
    )
    review: ReviewMode = Field(
        default="auto",
        description="auto: a review is required when any task is an executor; required; "
        "waived (give review_reason: the person approving the plan sees it).",
    )
    review_reason: str = Field(default="", description="Why, for required or waived.")

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        # The model is shown one flat schema: each task's object inline, no references.
        schema = super().model_json_schema(*args, **kwargs)
        definitions = schema.pop("$defs", {})
        task = definitions[TaskInput.__name__]
        schema["properties"]["tasks"]["items"] = task
        return schema

    def plan(self) -> Plan:
        return Plan.model_validate(
            {
                "goal": self.goal,
                "tasks": [task.model_dump() for task in self.tasks],
                "gates": {
                    "integration": self.integration_checks,
                    "completion": self.completion_checks,
                    "projects": self.gate_projects,
                },
                "review": {"mode": self.review, "reason": self.review_reason},
            }
        )


@guarded
def run(request: PlanWriteInput, ctx: ToolContext) -> ToolResult:
    try:
        outcome = write_plan(ctx.layout, ctx.session_id, request.plan())
    except PlanRefused as refused:
        lines = [f"The plan was not written: it breaks {len(refused.problems)} rule(s)."]
        lines += [f"- {problem}" for problem in refused.problems]
        lines.append("Fix every one and call plan_write again with the whole plan.")
        return error("\n".join(lines), f"plan refused: {len(refused.problems)} problem(s)")
    path = plan_path(ctx.layout, ctx.session_id)
    ctx.seam.call("log.append", AppendRequest(events=[outcome.event(path)]))
    short = outcome.sha256[:12]
    count = len(request.tasks)
    if outcome.document.status == "approved":
        message = (
            f"Wrote the plan ({count} tasks, sha256 {short}); it stays approved: only "
            "progress marks changed."
        )
    elif outcome.approval_dropped:
        blocked = ", ".join(outcome.blocked) or "none"
        message = (
            f"Wrote the plan ({count} tasks, sha256 {short}). The change ended its approval: "
            f"it is a draft again, and executor tasks ({blocked}) are blocked until a person "
            f"approves it with {APPROVE_COMMAND}."
        )
    else:
        message = (
            f"Wrote the plan ({count} tasks, sha256 {short}) as a draft; executor tasks run "
            f"only once a person approves it with {APPROVE_COMMAND}."
        )
    return ToolResult(content=message, summary=f"plan {short}: {outcome.document.status}")


TOOL = ModelTool(
    name="plan_write",
    description=(
        "Write the session's plan, whole: a goal and tasks (a stable slug id each, a title, "
        "the intent, the role that does it, dependsOn, the workspace-relative places it "
        "touches, how to verify it, check kinds, risk, serial). A person approves the plan; "
        "executor tasks can be delegated only while it is approved and current. Changing "
        "only tasks' status keeps an approval; any other change makes the plan a draft "
        "again. A plan that breaks a rule is refused with every problem listed."
    ),
    input_model=PlanWriteInput,
    facts=ToolFacts(name="plan_write", internal=True),
    run=run,
)
