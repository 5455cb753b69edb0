"""delegate_task: one to three tasks, run side by side by child sessions (issue 21).

Each task names its role, a prompt, and either the plan task it runs
(``task_id``) or a free label. ax-policy decides the call from the roles it
starts (the ``delegates`` fact: read-only roles are allowed, a researcher or
an executor is a person's decision). Then the scheduler gate
(``tasks.gate.check_group``) answers for the whole group before anything is
spawned: one refusal refuses it all, and nothing starts. Without a plan the
gate lets the group through and the policy's question is the only consent.

Executors each get their own git worktree (``tasks.worktrees``): one
``task-base`` checkpoint of the parent's working tree for the group, taken
before anything is spawned, then a worktree per executor checked out from it
under the state root. A group ``prepare_group`` refuses (not a git repository,
a secret-named untracked file, end-of-line conversion) refuses the whole call
and nothing starts. Each executor's capture is taken in its task's thread when
its child ends, whatever the end (the group's captures run side by side), and
recorded by the parent's thread; the worktrees are removed in a
``finally``. Read-only roles work in the workspace. The result is the group's
digest: supervision's observations and each task's end first, then each
task's report.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from ax_policy import ToolFacts
from libcommon.errors import AxError

from ..plans.validate import TASK_ID_MAX_CHARS, TASK_ID_PATTERN

if TYPE_CHECKING:
    from libcommon.paths import StateLayout

    from ..plans.store import PlanState
    from ..session import Session
    from ..tasks.worktrees import GroupBase
from .base import ModelTool, ToolContext, ToolResult
from .common import ToolInput, error, guarded

# The most tasks one call runs side by side: the schema's maximum is the cap.
MAX_GROUP_TASKS = 3
TASK_PROMPT_MAX_CHARS = 20_000
LABEL_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"

RoleName = Literal["explorer", "planner", "reviewer", "inspector", "researcher", "executor"]


class TaskSpec(ToolInput):
    role: RoleName = Field(
        description="explorer, planner, reviewer, inspector, researcher (read-only; they work "
        "in the workspace) or executor (writes, in a worktree of its own; its changes reach "
        "the workspace only when applied)."
    )
    prompt: str = Field(
        min_length=1,
        max_length=TASK_PROMPT_MAX_CHARS,
        description="What the task must do and report. It sees nothing of this conversation.",
    )
    task_id: str = Field(
        default="", description="The plan task it runs (required for an executor under a plan)."
    )
    label: str = Field(
        default="", description="A short slug naming a task that is not in the plan."
    )

    @model_validator(mode="after")
    def _one_name(self) -> TaskSpec:
        if bool(self.task_id) == bool(self.label):
            raise ValueError("give each task exactly one of task_id (a plan task) or label")
        if self.task_id and not TASK_ID_PATTERN.fullmatch(self.task_id):
            raise ValueError(
                f"the task_id {self.task_id[:80]!r} is no plan task id: 1-"
                f"{TASK_ID_MAX_CHARS} lowercase letters, digits or '-'"
            )
        if self.label and not re.fullmatch(LABEL_PATTERN, self.label):
            raise ValueError(
                f"the label {self.label[:80]!r} is not a slug: lowercase letters, digits and "
                "'-', at most 64"
            )
        return self

    @property
    def key(self) -> str:
        return self.task_id or self.label


class DelegateInput(ToolInput):
    tasks: list[TaskSpec] = Field(
        min_length=1,
        max_length=MAX_GROUP_TASKS,
        description=f"One to {MAX_GROUP_TASKS} tasks, run at the same time.",
    )

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        # The model is shown one flat schema: each task's object inline, no references.
        schema = super().model_json_schema(*args, **kwargs)
        definitions = schema.pop("$defs", {})
        schema["properties"]["tasks"]["items"] = definitions[TaskSpec.__name__]
        return schema

    @model_validator(mode="after")
    def _distinct(self) -> DelegateInput:
        labels = [task.label for task in self.tasks if task.label]
        if len(labels) != len(set(labels)):
            raise ValueError("two tasks of the group have the same label")
        return self


def _gate(
    request: DelegateInput, layout: StateLayout, session_id: str
) -> tuple[str | None, PlanState | None]:
    """Why the group may not run (None: it may), and the plan's state it was judged on."""
    from ax_log import read_events

    from ..plans.store import plan_state
    from ..tasks.gate import Binding, check_group

    keys = [task.key for task in request.tasks]
    if len(keys) != len(set(keys)):
        # Without a plan the gate has no graph to find a twice-bound task in.
        return "the group was refused, nothing was spawned: it names one task twice", None
    events = list(read_events(layout.session_log(session_id), session_id))
    plan = plan_state(layout, session_id, events)
    if any(task.role == "reviewer" for task in request.tasks):
        from ..tasks.review import round_refusal

        # First: once the rounds are spent no cure the gate could name (re-approving a
        # changed task, say) would let a reviewer run, so only the person's exits are given.
        spent = round_refusal(plan.loaded.plan if plan.loaded is not None else None, events)
        if spent is not None:
            return f"the group was refused, nothing was spawned: {spent}", plan
    bindings = [Binding(t.role, t.task_id or None, t.label or None) for t in request.tasks]
    gate = check_group(plan, events, bindings)
    if not gate.allowed:
        return gate.message(), plan
    return None, plan


def precheck(request: DelegateInput, session: Session) -> str | None:
    """The scheduler gate before the policy's question: a refused group asks nobody."""
    return _gate(request, session.layout, session.id)[0]


@guarded
def run(request: DelegateInput, ctx: ToolContext) -> ToolResult:
    from libcommon import clock

    from ..delegation.group import Member, run_group
    from ..delegation.roles import ROLES
    from ..plans.model import task_sha256
    from ..tasks import worktrees

    session = ctx.session
    if session is None:
        return error("delegate_task runs only inside a session's turn")
    # Again, right before anything is spawned: the gate is the authority, not the precheck.
    refusal, plan = _gate(request, ctx.layout, ctx.session_id)
    if refusal is not None:
        return error(refusal, "refused: the scheduler gate")
    assert plan is not None
    planned = (
        {task.id: task for task in plan.loaded.plan.tasks}
        if plan.approved_and_current and plan.loaded is not None
        else {}
    )
    group_id = clock.new_id("g")
    executors = [task.key for task in request.tasks if task.role == "executor"]
    base: worktrees.GroupBase | None = None
    if executors:
        try:
            base = worktrees.prepare_group(
                ctx.layout, ctx.session_id, group_id, executors, ctx.environ, session.record
            )
        except AxError as exc:
            hint = f"\nhint: {exc.hint}" if exc.hint else ""
            return error(
                f"the group was refused, nothing was spawned: {exc.message}{hint}",
                "refused: the executors' worktrees",
            )
    try:
        members = []
        for task in request.tasks:
            bound = planned.get(task.task_id)
            isolated = base is not None and task.role == "executor"
            members.append(
                Member(
                    key=task.key,
                    role=ROLES[task.role],
                    prompt=_prompt(task.prompt, bound, executor=isolated),
                    workspace=base.workspace(task.key)
                    if base is not None and isolated
                    else ctx.workspace,
                    definition=task_sha256(bound) if bound is not None else None,
                    base=base.commit if base is not None and isolated else None,
                )
            )
        outcome = run_group(
            session,
            group_id,
            members,
            ctx.abort,
            on_status=session.on_task_status,
            capture=_capturer(base) if base is not None else None,
        )
    finally:
        if base is not None:
            worktrees.release_group(base, session.record)
    failed = [key for key, how in outcome.ended.items() if not how.startswith("completed")]
    summary = f"group {group_id}: {len(members) - len(failed)} of {len(members)} completed"
    return ToolResult(content=outcome.digest(), is_error=bool(failed), summary=summary)


def _capturer(base: GroupBase) -> Callable[[str], dict[str, Any]]:
    """Capture a task's worktree (in the task's thread): its ``task.captured`` event, which
    the parent's thread records."""
    from ..tasks.worktrees import capture_task

    def capture(key: str) -> dict[str, Any]:
        events: list[dict[str, Any]] = []
        capture_task(base, key, events.append)
        return events[0]

    return capture


def _prompt(prompt: str, bound: object, *, executor: bool) -> str:
    from ..plans.model import PlanTask
    from ..tasks.worktrees import GITIGNORED_NOTE

    lines = [prompt]
    if executor:
        lines += ["", GITIGNORED_NOTE]
    if not isinstance(bound, PlanTask):
        return "\n".join(lines)
    lines += ["", f"Plan task {bound.id}: {bound.title}"]
    if bound.intent:
        lines.append(f"Intent: {bound.intent}")
    if bound.touches:
        lines.append(f"It touches: {', '.join(bound.touches)}")
    if bound.verify:
        lines.append(f"Verify: {bound.verify}")
    return "\n".join(lines)


TOOL = ModelTool(
    name="delegate_task",
    description=(
        f"Run one to {MAX_GROUP_TASKS} tasks at the same time, each by a helper with a "
        "session of its own that sees nothing of this conversation: explorer, planner, "
        "reviewer, inspector, researcher (read-only) or executor (writes in a worktree of "
        "its own; apply its changes afterwards). Bind each task to its plan task (task_id) "
        "or give it a label. Tasks that depend on each other go in separate calls. The "
        "result starts with what supervision saw and how each task ended, then each report."
    ),
    input_model=DelegateInput,
    facts=ToolFacts(
        name="delegate_task", delegates=lambda request: [t.role for t in request.tasks]
    ),
    run=run,
    precheck=precheck,
)
