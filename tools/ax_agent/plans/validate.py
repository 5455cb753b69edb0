"""The plan's semantic rules: every problem at once, or none.

A plan the model writes is refused whole when any rule fails, and the refusal
lists every failure, so one revision can fix them all: ids are slugs and
unique; a dependency names another task of the plan and the dependencies hold
no cycle (each cycle is reported as its path, ``a -> b -> a``); every
``touches`` prefix is workspace-relative, free of ``..`` and inside the
workspace once symbolic links are followed; an executor declares what it
touches (the gate keeps two executors off the same files by it); check kinds
are ax-check's; and the plan stays within named caps.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from libcommon.paths import is_within, resolve_lenient

from .model import Plan, PlanTask, canonical_json, plan_content

PLAN_MAX_TASKS = 50
# The canonical JSON of the plan's content: the detailed view the model is given is of
# the same order, so this bounds the per-turn note too.
PLAN_MAX_BYTES = 64 * 1024
TASK_ID_MAX_CHARS = 48
TITLE_MAX_CHARS = 200
# goal, intent, verify and the review's reason.
TEXT_MAX_CHARS = 4_000
# dependsOn, touches and checks of one task, and each gate's checks.
TASK_LIST_MAX = 32
TOUCH_MAX_CHARS = 1_024

TASK_ID_PATTERN = re.compile(rf"^[a-z0-9][a-z0-9-]{{0,{TASK_ID_MAX_CHARS - 1}}}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def touch_problem(touch: str, workspace: Path) -> str | None:
    """Why ``touch`` is not a contained workspace-relative prefix, or None."""
    if not touch.strip():
        return "is empty (use '.' for the whole workspace)"
    if len(touch) > TOUCH_MAX_CHARS:
        return f"is longer than {TOUCH_MAX_CHARS} characters"
    if _CONTROL.search(touch):
        return "holds a control character"
    if touch.startswith("/") or PurePosixPath(touch).is_absolute():
        return "is absolute; give it relative to the workspace"
    if ".." in PurePosixPath(touch).parts:
        return "holds '..'; name the place inside the workspace directly"
    root = Path(os.path.realpath(workspace))
    if not is_within(resolve_lenient(root / touch), root):
        return "leads outside the workspace (through a symbolic link)"
    return None


def overlaps(a: str, b: str) -> bool:
    """True when one prefix holds the other ('.' holds everything), component by component."""
    if a == "." or b == ".":
        return True
    left, right = PurePosixPath(a).parts, PurePosixPath(b).parts
    shorter = min(len(left), len(right))
    return left[:shorter] == right[:shorter]


def plan_problems(plan: Plan, workspace: Path) -> list[str]:
    """Every rule ``plan`` breaks, in a stable order; empty when it is valid."""
    from ax_check import GATE_KINDS

    kinds: set[str] = set(GATE_KINDS)
    problems: list[str] = []
    if not plan.tasks:
        problems.append("the plan has no tasks; give at least one")
    if len(plan.tasks) > PLAN_MAX_TASKS:
        problems.append(
            f"the plan has {len(plan.tasks)} tasks, more than {PLAN_MAX_TASKS}; "
            "group small steps into one task"
        )
    problems += _text("the goal", plan.goal, TEXT_MAX_CHARS)
    seen: set[str] = set()
    for number, task in enumerate(plan.tasks, start=1):
        name = _name(task, number)
        if not TASK_ID_PATTERN.fullmatch(task.id):
            problems.append(
                f"{name}: the id must be 1-{TASK_ID_MAX_CHARS} lowercase letters, digits or "
                "'-', starting with a letter or digit"
            )
        elif task.id in seen:
            problems.append(f"{name}: the id is used by an earlier task; ids must be unique")
        seen.add(task.id)
        problems += _task_problems(task, name, plan, kinds, workspace)
    problems += [f"dependency cycle: {' -> '.join(path)}" for path in dependency_cycles(plan)]
    for gate, listed in (
        ("integration", plan.gates.integration),
        ("completion", plan.gates.completion),
    ):
        problems += _kinds(f"the {gate} gate", listed, kinds)
    for project in plan.gates.projects:
        problem = touch_problem(project, workspace)
        if problem is not None:
            problems.append(f"the gates' project {project!r} {problem}")
    if len(plan.gates.projects) > TASK_LIST_MAX:
        problems.append(
            f"the gates name {len(plan.gates.projects)} projects, more than {TASK_LIST_MAX}"
        )
    problems += _text("the review reason", plan.review.reason, TEXT_MAX_CHARS)
    if plan.review.mode == "waived" and not plan.review.reason.strip():
        problems.append("the review is waived without a reason; give the reason")
    size = len(canonical_json(plan_content(plan)))
    if size > PLAN_MAX_BYTES:
        problems.append(
            f"the plan is {size} bytes of JSON, more than {PLAN_MAX_BYTES}; "
            "say less per task or split the work into fewer tasks"
        )
    return problems


def _name(task: PlanTask, number: int) -> str:
    shown = task.id if task.id and len(task.id) <= TASK_ID_MAX_CHARS else task.id[:24] + "…"
    return f"task {number} ({shown!r})"


def _task_problems(
    task: PlanTask, name: str, plan: Plan, kinds: set[str], workspace: Path
) -> list[str]:
    problems: list[str] = []
    if not task.title.strip():
        problems.append(f"{name}: the title is empty")
    problems += _text(f"{name}: the title", task.title, TITLE_MAX_CHARS)
    problems += _text(f"{name}: the intent", task.intent, TEXT_MAX_CHARS)
    problems += _text(f"{name}: verify", task.verify, TEXT_MAX_CHARS)
    ids = {other.id for other in plan.tasks}
    for field, listed in (
        ("dependsOn", task.depends_on),
        ("touches", task.touches),
        ("checks", task.checks),
    ):
        if len(listed) > TASK_LIST_MAX:
            problems.append(f"{name}: {field} lists {len(listed)} items, more than {TASK_LIST_MAX}")
    for dependency in task.depends_on:
        if dependency == task.id:
            problems.append(f"{name}: it depends on itself")
        elif dependency not in ids:
            problems.append(f"{name}: it depends on {dependency!r}, which no task of the plan is")
    for touch in task.touches:
        problem = touch_problem(touch, workspace)
        if problem is not None:
            problems.append(f"{name}: touches {touch!r} {problem}")
    if task.role == "executor" and not task.touches:
        problems.append(
            f"{name}: an executor must say what it touches (workspace-relative prefixes, "
            "'.' for everything)"
        )
    problems += _kinds(f"{name}: checks", task.checks, kinds)
    return problems


def _text(what: str, text: str, limit: int) -> list[str]:
    if len(text) > limit:
        return [f"{what} is {len(text)} characters, more than {limit}"]
    return []


def _kinds(what: str, listed: list[str], kinds: set[str]) -> list[str]:
    problems = [
        f"{what}: {kind!r} is not a check kind ({', '.join(sorted(kinds))})"
        for kind in listed
        if kind not in kinds
    ]
    if len(listed) > TASK_LIST_MAX:
        problems.append(f"{what} lists {len(listed)} kinds, more than {TASK_LIST_MAX}")
    return problems


def dependency_cycles(plan: Plan) -> list[list[str]]:
    """Each cycle among the resolvable dependencies as its path (first id repeated at the end).

    Depth-first over the tasks in plan order; a back edge closes a cycle. Every
    task on some cycle appears in one reported path, so fixing the reported
    cycles leaves none.
    """
    edges: dict[str, list[str]] = {}
    for task in plan.tasks:
        edges.setdefault(task.id, [])
    for task in plan.tasks:
        edges[task.id] += [d for d in task.depends_on if d in edges and d != task.id]
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for task in plan.tasks:
        if task.id not in state:
            visit(task.id)
    return cycles
