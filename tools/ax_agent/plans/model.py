"""The plan's shape and its content hash.

A plan is a small graph of tasks. Its *semantic content* is everything but the
per-task progress marks (``status``): ``sha256`` is taken over the canonical
JSON of that content (sorted keys, no whitespace, every default filled in), so
marking a task done, re-indenting the file or reordering its keys never
changes the hash, and any change to what a task is, does, touches or waits
for always does. Approval binds that hash (``store``).

pydantic checks the structure here (types, required and unknown fields, the
fixed vocabularies); the rules that need the whole plan or the workspace
(unique ids, dependencies, containment, sizes) are ``validate``'s, so one
refusal lists them all.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import Field, field_validator

from libcommon.contracts import Contract

# The roles a task can have. ``parent`` is work the main agent does itself in the
# workspace; the others are the delegated roles (issue 21), of which only the executor
# writes (in a worktree of its own).
Role = Literal["parent", "explorer", "planner", "reviewer", "inspector", "researcher", "executor"]
Risk = Literal["low", "medium", "high"]
# The model's own progress mark on a task. Not part of the content hash: it says how far
# the work is, not what the work is, so it can change without a new approval.
TaskStatus = Literal["todo", "doing", "done"]
ReviewMode = Literal["auto", "required", "waived"]
DocumentStatus = Literal["draft", "approved"]


class PlanTask(Contract):
    """One task. The model writes these with plan_write (whose input describes each field)."""

    id: str
    title: str
    intent: str = ""
    role: Role
    depends_on: list[str] = Field(default_factory=list)
    # Workspace-relative prefixes the task may change ('.' is the whole workspace).
    touches: list[str] = Field(default_factory=list)
    verify: str = ""
    # Check kinds (ax-check's) that verify the task.
    checks: list[str] = Field(default_factory=list)
    risk: Risk = "low"
    serial: bool = False
    status: TaskStatus = "todo"

    @field_validator("touches")
    @classmethod
    def _normal_touches(cls, touches: list[str]) -> list[str]:
        return [normal_touch(touch) for touch in touches]


def normal_touch(touch: str) -> str:
    """``./src//x/`` as ``src/x``, so spelling a prefix differently is not a new plan.

    A prefix that is empty, absolute or holds ``..`` is left as written: the
    semantic rules refuse it by the words the model used.
    """
    if not touch or touch.startswith("/") or ".." in PurePosixPath(touch).parts:
        return touch
    return posixpath.normpath(touch)


class PlanGates(Contract):
    """Check kinds that must pass after a task's changes are applied, and at the end."""

    integration: list[str] = Field(default_factory=list)
    completion: list[str] = Field(default_factory=list)
    # Project units (ax-check's ids) a task's checks must pass in, each of them; empty:
    # every unit a check ran in after the task's work (the verification gate).
    projects: list[str] = Field(default_factory=list)

    @field_validator("projects")
    @classmethod
    def _normal_projects(cls, projects: list[str]) -> list[str]:
        return [normal_touch(project) for project in projects]


class PlanReview(Contract):
    """auto: a review is required when any task is an executor; or required, or waived."""

    mode: ReviewMode = "auto"
    reason: str = ""


class Plan(Contract):
    """The plan: a goal, the tasks, the gates and the review mode. Always whole: absent
    gates and review are their defaults, so leaving one out and spelling its default
    out hash the same."""

    goal: str = ""
    tasks: list[PlanTask]
    gates: PlanGates = Field(default_factory=PlanGates)
    review: PlanReview = Field(default_factory=PlanReview)


class PlanDocument(Contract):
    """The file ``plans/<session>.plan.json``: the plan and its approval state."""

    version: Literal[1] = 1
    session: str
    status: DocumentStatus = "draft"
    # The content hash a person approved (``/plan approve``); None until one did.
    approved_sha256: str | None = None
    updated_at: str
    plan: Plan


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8 as is: the one byte form a hash is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# Lists whose order says nothing: the canonical form sorts them, so reordering one is
# approval-neutral. The tasks themselves are sorted by id for the same reason.
_UNORDERED = ("dependsOn", "touches", "checks", "integration", "completion", "projects")


def task_content(task: PlanTask) -> dict[str, Any]:
    """A task's semantic content: every field but its progress mark, in canonical order."""
    return _sorted_lists(task.model_dump(mode="json", by_alias=True, exclude={"status"}))


def plan_content(plan: Plan) -> dict[str, Any]:
    content = _sorted_lists(plan.model_dump(mode="json", by_alias=True, exclude={"tasks"}))
    if not content["gates"]["projects"]:
        # Added after plans were approved: hashed only when set, so those keep their hash.
        del content["gates"]["projects"]
    content["tasks"] = sorted((task_content(task) for task in plan.tasks), key=_task_order)
    return content


def _task_order(content: dict[str, Any]) -> bytes:
    # By id, then by the whole task: two tasks with one id (refused by validation) still
    # hash the same whichever comes first.
    return canonical_json([content["id"], content])


def _sorted_lists(value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            out[key] = _sorted_lists(item)
        elif key in _UNORDERED and isinstance(item, list):
            out[key] = sorted(item)
        else:
            out[key] = item
    return out


def plan_sha256(plan: Plan) -> str:
    """The content hash approval binds (see the module docstring)."""
    return hashlib.sha256(canonical_json(plan_content(plan))).hexdigest()


def task_sha256(task: PlanTask) -> str:
    """A task's definition identity: a completed task re-opens when this changes."""
    return hashlib.sha256(canonical_json(task_content(task))).hexdigest()
