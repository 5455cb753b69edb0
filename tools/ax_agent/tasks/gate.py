"""The scheduler gate: may this group of delegated tasks be spawned? All of it, or none.

``check_group(plan, events, group)`` is pure: it reads where the plan stands
(``ax_agent.plans.store.plan_state``), the task states folded from the same
events, and the group (one ``Binding`` per task the delegate call would
spawn), and answers every rule the group breaks. Any refusal refuses the
whole group: nothing is spawned, no checkpoint taken. Each refusal names the
task and the rule.

The rules, in order:

1. ``plan-not-approved``: while a plan exists, a group with an executor needs
   it approved and current (draft, unreadable, invalid, diverged and
   approved-without-recorded-consent all refuse). No plan at all does not
   block: the per-spawn approval question stays the floor. Read-only groups
   pass with any plan (a planner may help draft one).
2. With an approved and current plan, the graph's rules:
   ``unbound-executor`` (an executor must name its plan task), ``unknown-task``,
   ``role-mismatch``; then the group's make-up, so "sequence them across
   calls" is never hidden behind a task's state: ``duplicate-binding``,
   ``dependency-in-group``, ``must-run-alone`` (serial or high-risk),
   ``overlapping-touches`` (between executors); then each task's state:
   ``already-completed`` (failed, cancelled and interrupted tasks may run
   again), ``still-running``, ``still-integrating``, ``attempts-exhausted``
   (``MAX_FAILURES`` genuine failures under the current definition) and
   ``unmet-dependency`` (naming each dependency's state; a completed one whose
   verification is pending names each kind and unit that is not green, with
   the typed diagnosis of a failing run: ``verify``, ``ax_agent.recovery``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..plans.model import PlanTask
from ..plans.store import APPROVE_COMMAND, PlanState
from ..plans.validate import overlaps
from .fold import TaskView, dependency_unmet, fold_tasks

# Genuine failures of a task under one definition before the gate stops re-running it.
MAX_FAILURES = 3
# The most ready task ids an ``unbound-executor`` refusal names.
READY_IDS_SHOWN = 10


@dataclass(frozen=True)
class Binding:
    """One task of a delegate call: the plan task it runs (None: unbound) and its role."""

    role: str
    task_id: str | None = None
    # How the call names the task when it is unbound (shown in a refusal).
    label: str | None = None

    @property
    def name(self) -> str:
        return self.task_id or self.label or f"an unbound {self.role}"


@dataclass(frozen=True)
class Refusal:
    task: str
    rule: str
    message: str

    def text(self) -> str:
        # The rule ends the first line: a message may carry a diagnosis on the lines after.
        first, _, rest = self.message.partition("\n")
        return f"{self.task}: {first} [{self.rule}]" + (f"\n{rest}" if rest else "")


@dataclass(frozen=True)
class GateResult:
    refusals: tuple[Refusal, ...] = ()
    # The fold the decision was made on (empty without an approved and current plan).
    states: Mapping[str, TaskView] | None = None

    @property
    def allowed(self) -> bool:
        return not self.refusals

    def message(self) -> str:
        """Every refusal, one per line: what the delegate tool answers the model."""
        if self.allowed:
            return "the group may run"
        head = f"the group was refused, nothing was spawned ({len(self.refusals)} problem(s)):"
        return "\n".join([head, *(f"- {refusal.text()}" for refusal in self.refusals)])


def check_group(
    plan: PlanState, events: Iterable[Mapping[str, Any]], group: Sequence[Binding]
) -> GateResult:
    """Every rule ``group`` breaks (see the module docstring); allowed when there are none."""
    executors = [binding for binding in group if binding.role == "executor"]
    if not plan.exists:
        return GateResult()
    if not plan.approved_and_current:
        if not executors:
            return GateResult()
        cure = (
            f"a person approves it with {APPROVE_COMMAND}"
            if plan.standing in ("draft", "diverged", "unconsented")
            else "fix the plan (plan_write), then a person approves it"
        )
        return GateResult(
            tuple(
                Refusal(
                    binding.name,
                    "plan-not-approved",
                    f"executors need an approved and current plan; {plan.detail}; {cure}",
                )
                for binding in executors
            )
        )
    assert plan.loaded is not None
    tasks = {task.id: task for task in plan.loaded.plan.tasks}
    states = fold_tasks(plan.loaded.plan, events)
    refusals: list[Refusal] = []
    refusals += _identity(group, tasks, states)
    # The members that name a plan task in its role: the rules below are about them.
    bound = [
        tasks[b.task_id] for b in group if b.task_id in tasks and tasks[b.task_id].role == b.role
    ]
    refusals += _composition(group, bound, tasks)
    refusals += _task_states(bound, states)
    return GateResult(tuple(refusals), states)


def _identity(
    group: Sequence[Binding], tasks: Mapping[str, PlanTask], states: Mapping[str, TaskView]
) -> list[Refusal]:
    refusals: list[Refusal] = []
    for binding in group:
        if binding.task_id is None:
            if binding.role == "executor":
                ready = [
                    tid for tid, v in states.items() if v.state == "queued" and v.role == "executor"
                ]
                shown = ", ".join(ready[:READY_IDS_SHOWN]) or "none"
                refusals.append(
                    Refusal(
                        binding.name,
                        "unbound-executor",
                        "an executor must name the plan task it runs (ready executor tasks: "
                        f"{shown}); or change the plan with plan_write and have it approved",
                    )
                )
            continue
        task = tasks.get(binding.task_id)
        if task is None:
            refusals.append(
                Refusal(binding.task_id, "unknown-task", "the approved plan has no such task")
            )
        elif task.role != binding.role:
            refusals.append(
                Refusal(
                    binding.task_id,
                    "role-mismatch",
                    f"the plan gives it the role {task.role}, not {binding.role}",
                )
            )
    return refusals


def _composition(
    group: Sequence[Binding], bound: Sequence[PlanTask], tasks: Mapping[str, PlanTask]
) -> list[Refusal]:
    refusals: list[Refusal] = []
    counted: dict[str, int] = {}
    for binding in group:
        if binding.task_id is not None:
            counted[binding.task_id] = counted.get(binding.task_id, 0) + 1
    refusals += [
        Refusal(tid, "duplicate-binding", f"the group runs it {n} times; run it once")
        for tid, n in counted.items()
        if n > 1
    ]
    members = {task.id for task in bound}
    for task in bound:
        inside = sorted(_ancestors(task.id, tasks) & (members - {task.id}))
        if inside:
            refusals.append(
                Refusal(
                    task.id,
                    "dependency-in-group",
                    f"it depends on {', '.join(inside)} in the same group; sequence them "
                    "across delegate calls",
                )
            )
    if len(group) > 1:
        for task in bound:
            why = "serial" if task.serial else "high-risk" if task.risk == "high" else None
            if why is not None:
                refusals.append(
                    Refusal(
                        task.id,
                        "must-run-alone",
                        f"it is {why}, so it runs in a group of its own",
                    )
                )
    executors = [task for task in bound if task.role == "executor"]
    for index, left in enumerate(executors):
        for right in executors[index + 1 :]:
            if left.id == right.id:
                continue
            pairs = [(a, b) for a in left.touches for b in right.touches if overlaps(a, b)]
            if pairs:
                a, b = pairs[0]
                refusals.append(
                    Refusal(
                        f"{left.id}, {right.id}",
                        "overlapping-touches",
                        f"both executors touch the same place ({a!r} and {b!r}); run them "
                        "in separate groups",
                    )
                )
    return refusals


def _ancestors(task_id: str, tasks: Mapping[str, PlanTask]) -> set[str]:
    """Every task ``task_id`` waits for, directly or through others."""
    seen: set[str] = set()
    stack = list(tasks[task_id].depends_on)
    while stack:
        current = stack.pop()
        if current in seen or current not in tasks:
            continue
        seen.add(current)
        stack += tasks[current].depends_on
    return seen


def _task_states(bound: Sequence[PlanTask], states: Mapping[str, TaskView]) -> list[Refusal]:
    refusals: list[Refusal] = []
    members = {task.id for task in bound}
    seen: set[str] = set()
    for task in bound:
        task_id = task.id
        if task_id in seen:
            continue
        seen.add(task_id)
        view = states[task_id]
        if view.state == "completed":
            refusals.append(
                Refusal(
                    task_id,
                    "already-completed",
                    "it completed under its current definition; change the task "
                    "(plan_write, then approval) to run it again",
                )
            )
            continue
        if view.state in ("running", "awaiting-approval"):
            refusals.append(Refusal(task_id, "still-running", f"it is {view.state}"))
            continue
        if view.state == "integrating":
            refusals.append(
                Refusal(
                    task_id,
                    "still-integrating",
                    "its captured changes are not applied yet; apply or discard them first",
                )
            )
            continue
        if view.failures >= MAX_FAILURES:
            refusals.append(
                Refusal(
                    task_id,
                    "attempts-exhausted",
                    f"it failed {view.failures} times under its current definition (at most "
                    f"{MAX_FAILURES}); change the task or do it yourself",
                )
            )
        unmet: dict[str, str] = {}
        for dep in task.depends_on:
            why = dependency_unmet(states[dep]) if dep in states else "unknown"
            if why is not None and dep not in members:
                unmet[dep] = why
        if unmet:
            text = "it waits for " + ", ".join(f"{dep} ({why})" for dep, why in unmet.items())
            diagnoses = [
                diagnosis for dep in unmet if dep in states for diagnosis in _diagnoses(states[dep])
            ]
            refusals.append(Refusal(task_id, "unmet-dependency", "\n".join([text, *diagnoses])))
    return refusals


def _diagnoses(view: TaskView) -> list[str]:
    """The typed diagnosis of each failing run that keeps ``view``'s verification pending."""
    from ..recovery.classify import classify_check
    from ..recovery.render import diagnosis_lines

    if view.verification is None or view.verification.status != "pending":
        return []
    lines: list[str] = []
    for run in view.verification.failing_runs():
        found = classify_check(run.event)
        if found is not None:
            lines += [f"  {view.id}: {line}" for line in diagnosis_lines(found)]
    return lines
