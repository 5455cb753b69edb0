"""Per-task state as a pure function of (plan, events): no store of its own.

The fold reads the session's log in order. A delegated task's life is an
*attempt*, keyed by (``group``, ``taskId``) and opened by ``task.started``;
the events after it (``task.asked``, ``task.answered``, ``task.captured``,
``task.completed``, ``task.failed``, ``task.cancelled``, ``task.applied``,
``task.discarded``) change that attempt only, and one that names no open
attempt changes nothing: order matters, and the same events always fold to the
same states. Only *bound* attempts (``definitionSha256`` set: the spawn named
a plan task) count towards a plan task.

A task's state, in the order the rules apply:

- ``parent-owned``: its role is ``parent`` (the main agent does it itself).
- no attempt yet, or its last attempt completed under a definition that has
  since changed (the sha of the task's canonical form): ``queued`` when every
  dependency is satisfied (below), else ``blocked``.
- otherwise its last attempt's state: ``running``; ``awaiting-approval`` (a
  question of the task waits for the parent's approver); ``interrupted`` (it
  never ended and the parent started again: a later ``session.started``);
  ``failed``; ``cancelled`` (cancelled, or its capture discarded);
  ``integrating`` (an executor completed, its captured changes not yet all
  applied); ``completed``. A completed executor with no ``task.captured`` is
  ``failed``: its work was lost, and it must stay re-runnable.

``failures`` counts the attempts that failed (``task.failed``) under the
task's current definition; a lost capture, a cancel or an interruption is not
the task's failure and is not counted.

A dependency is satisfied when it is parent-owned, or completed with its
verification not pending (``verify``: its declared checks green on the
workspace after its newest binding, the attempt's ``anchor``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..plans.model import Plan, PlanTask, task_sha256
from .verify import Ledger, Verification, check_runs, parent_anchor, verify_task

TaskState = Literal[
    "queued",
    "blocked",
    "running",
    "awaiting-approval",
    "integrating",
    "completed",
    "failed",
    "cancelled",
    "parent-owned",
    "interrupted",
]
TASK_EVENT_TYPES = frozenset(
    {
        "task.started",
        "task.asked",
        "task.answered",
        "task.captured",
        "task.completed",
        "task.failed",
        "task.cancelled",
        "task.applied",
        "task.discarded",
    }
)
_ENDS = {"task.completed": "completed", "task.failed": "failed", "task.cancelled": "cancelled"}


@dataclass
class Attempt:
    """One spawn of a task, as its events tell it."""

    group: str
    task_id: str
    role: str
    definition: str | None
    started_seq: int
    child: str | None = None
    end: Literal["completed", "failed", "cancelled"] | None = None
    detail: str | None = None
    interrupted: bool = False
    open_asks: set[str] = field(default_factory=set)
    captured: list[str] | None = None
    applied: list[str] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    integrated: bool = False
    discarded: bool = False
    # The position of its newest binding (its completion, an apply): the verification anchor.
    anchor: int | None = None

    @property
    def state(self) -> TaskState:
        if self.discarded:
            return "cancelled"
        if self.end is None:
            if self.interrupted:
                return "interrupted"
            return "awaiting-approval" if self.open_asks else "running"
        if self.end != "completed":
            return self.end
        if self.role != "executor":
            return "completed"
        if self.captured is None:
            return "failed"
        return "completed" if self.integrated or not self.captured else "integrating"

    @property
    def why(self) -> str | None:
        if self.end == "completed" and self.role == "executor" and self.captured is None:
            return "it completed but its changes were never captured (capture lost)"
        return self.detail


def attempts(events: Iterable[Mapping[str, Any]]) -> list[Attempt]:
    """Every attempt in the log, bound or not, in the order they started."""
    found: list[Attempt] = []
    open_by_key: dict[tuple[str, str], Attempt] = {}
    for position, event in enumerate(events, start=1):
        kind = event.get("type")
        if kind == "session.started":
            # A new life of the parent: whatever was still running died with the old one.
            for attempt in found:
                if attempt.end is None:
                    attempt.interrupted = True
            continue
        if kind not in TASK_EVENT_TYPES:
            continue
        key = (str(event.get("group")), str(event.get("taskId")))
        if kind == "task.started":
            attempt = Attempt(
                group=key[0],
                task_id=key[1],
                role=str(event.get("role")),
                definition=event.get("definitionSha256"),
                started_seq=int(event.get("seq") or position),
                child=event.get("child"),
            )
            found.append(attempt)
            open_by_key[key] = attempt
            continue
        current = open_by_key.get(key)
        if current is not None:
            _apply(current, kind, event, position)
    return found


def _apply(attempt: Attempt, kind: Any, event: Mapping[str, Any], position: int) -> None:
    if kind in _ENDS:
        if attempt.end is None and not attempt.interrupted:
            attempt.end = _ENDS[kind]  # type: ignore[assignment]
            if kind == "task.completed":
                attempt.anchor = position
            attempt.detail = event.get("reason") or event.get("detail")
            attempt.open_asks.clear()
    elif kind == "task.asked":
        if attempt.end is None:
            attempt.open_asks.add(str(event.get("callId")))
    elif kind == "task.answered":
        attempt.open_asks.discard(str(event.get("callId")))
    elif kind == "task.captured":
        attempt.captured = [str(path) for path in event.get("files") or []]
    elif kind == "task.applied":
        attempt.applied += [str(path) for path in event.get("applied") or []]
        attempt.refused = list(event.get("refused") or [])
        # Integrated once every captured file is applied: an apply may name only some.
        attempt.integrated = (
            attempt.captured is not None
            and not attempt.refused
            and set(attempt.captured) <= set(attempt.applied)
        )
        if event.get("applied"):
            attempt.anchor = position
    elif kind == "task.discarded":
        attempt.discarded = True


@dataclass(frozen=True)
class TaskView:
    id: str
    role: str
    state: TaskState
    # The sha of the task's canonical form now.
    definition_sha256: str
    attempts: int = 0
    # Genuine failures under the current definition (the gate's attempt ceiling).
    failures: int = 0
    # A completed attempt's definition is no longer the task's.
    reopened: bool = False
    # Unmet dependencies and their states (blocked).
    waiting_on: dict[str, str] = field(default_factory=dict)
    captured: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    detail: str | None = None
    group: str | None = None
    child: str | None = None
    # Its declared checks on the workspace after its work (status none: it declares none).
    verification: Verification | None = None


def dependency_unmet(view: TaskView) -> str | None:
    """Why ``view``'s dependents must wait (its state, or its verification), or None."""
    if view.state == "parent-owned":
        return None
    if view.state != "completed":
        return view.state
    if view.verification is not None and view.verification.status == "pending":
        return "completed, verification pending: " + "; ".join(view.verification.blockers())
    return None


def fold_tasks(
    plan: Plan, events: Iterable[Mapping[str, Any]], ledger: Ledger | None = None
) -> dict[str, TaskView]:
    """Each plan task's state (see the module docstring), in plan order; ``ledger``: the
    events' ``check_runs``, when the caller has it already."""
    events = list(events)
    ledger = ledger or check_runs(events)
    parent_at = parent_anchor(events)
    by_task: dict[str, list[Attempt]] = {}
    for attempt in attempts(events):
        if attempt.definition is not None:
            by_task.setdefault(attempt.task_id, []).append(attempt)
    tasks = {task.id: task for task in plan.tasks}
    views: dict[str, TaskView] = {}
    visiting: set[str] = set()

    def view(task: PlanTask) -> TaskView:
        if task.id in views:
            return views[task.id]
        visiting.add(task.id)
        done = _view(plan, task, by_task.get(task.id, []), tasks, view, visiting, ledger, parent_at)
        visiting.discard(task.id)
        views[task.id] = done
        return done

    for task in plan.tasks:
        view(task)
    return {task.id: views[task.id] for task in plan.tasks}


def _view(
    plan: Plan,
    task: PlanTask,
    tried: list[Attempt],
    tasks: Mapping[str, PlanTask],
    view: Any,
    visiting: set[str],
    ledger: Ledger,
    parent_at: int | None,
) -> TaskView:
    sha = task_sha256(task)
    last = tried[-1] if tried else None
    failures = sum(1 for a in tried if a.definition == sha and a.end == "failed")
    captured = next((a.captured for a in reversed(tried) if a.captured is not None), None)
    common: dict[str, Any] = {
        "id": task.id,
        "role": task.role,
        "definition_sha256": sha,
        "attempts": len(tried),
        "failures": failures,
        "captured": list(captured or []),
        "applied": sorted({path for a in tried for path in a.applied}),
        "refused": list(last.refused) if last is not None else [],
        "group": last.group if last is not None else None,
        "child": last.child if last is not None else None,
    }
    if task.role == "parent":
        common["verification"] = verify_task(
            plan, task, parent_at, ledger, "the parent has not changed the workspace yet"
        )
        return TaskView(state="parent-owned", **common)
    anchors = [a.anchor for a in tried if a.anchor is not None]
    common["verification"] = verify_task(plan, task, max(anchors, default=None), ledger)
    reopened = last is not None and last.state == "completed" and last.definition != sha
    if last is not None and not reopened:
        return TaskView(state=last.state, detail=last.why, **common)
    waiting: dict[str, str] = {}
    for dependency in task.depends_on:
        other = tasks.get(dependency)
        if other is None:
            waiting[dependency] = "unknown"
        elif dependency in visiting:
            waiting[dependency] = "cyclic"
        else:
            unmet = dependency_unmet(view(other))
            if unmet is not None:
                waiting[dependency] = unmet
    return TaskView(
        state="blocked" if waiting else "queued",
        reopened=reopened,
        waiting_on=waiting,
        detail="its definition changed since it completed" if reopened else None,
        **common,
    )


def summary(views: Mapping[str, TaskView]) -> str:
    """``2 completed, 1 running, 3 queued``: counts by state, in a fixed order."""
    order = list(TaskState.__args__)  # type: ignore[attr-defined]
    counts = {state: 0 for state in order}
    for item in views.values():
        counts[item.state] += 1
    return ", ".join(f"{n} {state}" for state, n in counts.items() if n) or "no tasks"
