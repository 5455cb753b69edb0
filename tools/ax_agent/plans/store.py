"""The plan file, its approval, and where a plan stands.

One plan per session at ``<state>/projects/<slug>/plans/<session>.plan.json``
(next to it, ``<session>.plan.md``, the generated view for people). The file
is harness state, outside the workspace, written atomically under a lock.

A write (``write_plan``) is redacted (libcommon's one redactor), then refused
whole, with every problem, when the plan breaks a rule (``validate``); nothing
is written then. A write keeps the plan
approved only when its content hash is the approved one (a semantic no-op:
progress marks, key order, whitespace); any other write drops it to draft,
which blocks every executor until a person approves again. Approval
(``approve_plan``) refuses a file that does not parse or validate, and binds
the content hash; the ``plan.approved`` event its caller records is the
consent record.

Where a plan stands (``plan_state``) is derived from the file and the log:
``approved`` means approved *and current* (the file's content hash is the one
approved, and the log records a person's consent to that hash). Every other
standing of an existing plan blocks executors; ``absent`` blocks nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from libcommon import clock, jsonio
from libcommon.atomic import atomic_write_bytes
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.locks import file_lock
from libcommon.paths import StateLayout, check_session_id

from .model import Plan, PlanDocument, plan_sha256
from .validate import plan_problems

PlanStanding = Literal[
    "absent", "unreadable", "invalid", "draft", "approved", "diverged", "unconsented"
]
# The command a person runs to approve, said wherever a plan blocks.
APPROVE_COMMAND = "/plan approve"


class PlanRefused(UsageError):
    """The plan breaks one or more rules; ``problems`` lists every one. Nothing was written."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(
            "the plan was not written; fix every problem and write it again: "
            + "; ".join(problems),
            hint="the plan is written whole with plan_write",
        )
        self.problems = problems


def plans_dir(layout: StateLayout) -> Path:
    return layout.project_dir / "plans"


def plan_path(layout: StateLayout, session_id: str) -> Path:
    return plans_dir(layout) / f"{check_session_id(session_id)}.plan.json"


def view_path(layout: StateLayout, session_id: str) -> Path:
    return plans_dir(layout) / f"{check_session_id(session_id)}.plan.md"


def _lock_path(layout: StateLayout, session_id: str) -> Path:
    return plans_dir(layout) / f"{check_session_id(session_id)}.plan.lock"


@dataclass(frozen=True)
class LoadedPlan:
    path: Path
    document: PlanDocument
    # The content hash of the plan as the file holds it now.
    sha256: str

    @property
    def plan(self) -> Plan:
        return self.document.plan


@dataclass(frozen=True)
class PlanState:
    """Where a session's plan stands, and why (``detail``, for people and the model)."""

    standing: PlanStanding
    loaded: LoadedPlan | None = None
    detail: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        return self.standing != "absent"

    @property
    def approved_and_current(self) -> bool:
        return self.standing == "approved"


def read_plan(layout: StateLayout, session_id: str) -> LoadedPlan | None:
    """The plan file as it is, None when there is none; CorruptStore when it cannot be read."""
    path = plan_path(layout, session_id)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        document = PlanDocument.model_validate(jsonio.loads(data))
    except jsonio.JSONDecodeError as exc:
        raise CorruptStore(str(path), f"not JSON: {exc}") from None
    except ValidationError as exc:
        from libcommon.cliapp import describe_validation_error

        raise CorruptStore(str(path), describe_validation_error(exc, "plan")) from None
    if document.session != session_id:
        raise CorruptStore(str(path), f"it is the plan of session {document.session!r}")
    return LoadedPlan(path, document, plan_sha256(document.plan))


def consented(events: Iterable[Mapping[str, Any]], sha256: str) -> bool:
    """The log records a person's approval of exactly this content hash."""
    return any(e.get("type") == "plan.approved" and e.get("sha256") == sha256 for e in events)


def plan_state(
    layout: StateLayout, session_id: str, events: Iterable[Mapping[str, Any]]
) -> PlanState:
    """Where the session's plan stands (see the module docstring); never raises for the file."""
    try:
        loaded = read_plan(layout, session_id)
    except CorruptStore as exc:
        return PlanState("unreadable", detail=exc.message)
    if loaded is None:
        return PlanState("absent", detail="the session has no plan")
    problems = plan_problems(loaded.plan, layout.workspace)
    short = loaded.sha256[:12]
    if problems:
        return PlanState(
            "invalid",
            loaded,
            f"the plan file (sha256 {short}) breaks {len(problems)} rule(s)",
            problems,
        )
    document = loaded.document
    if document.status == "draft":
        return PlanState("draft", loaded, f"the plan (sha256 {short}) is a draft, not approved")
    if document.approved_sha256 != loaded.sha256:
        return PlanState(
            "diverged",
            loaded,
            f"the plan file changed after its approval (approved "
            f"{(document.approved_sha256 or 'nothing')[:12]}, now {short})",
        )
    if not consented(events, loaded.sha256):
        return PlanState(
            "unconsented",
            loaded,
            f"the plan file says approved, but the log records no approval of {short}",
        )
    return PlanState("approved", loaded, f"the plan (sha256 {short}) is approved and current")


@dataclass(frozen=True)
class WriteOutcome:
    document: PlanDocument
    sha256: str
    previous_sha256: str | None
    # An approval existed and no longer covers the plan.
    approval_dropped: bool
    # The executor tasks a dropped approval blocks.
    blocked: list[str]

    def event(self, path: Path) -> dict[str, Any]:
        return {
            "type": "plan.written",
            "path": str(path),
            "sha256": self.sha256,
            "previousSha256": self.previous_sha256,
            "status": self.document.status,
            "tasks": len(self.document.plan.tasks),
            "approvalDropped": self.approval_dropped,
            "blocked": self.blocked,
        }


def write_plan(layout: StateLayout, session_id: str, plan: Plan) -> WriteOutcome:
    """Validate and write the session's plan (see the module docstring); PlanRefused if invalid.

    Secret-shaped text is redacted first, so the plan stored, hashed and shown is the
    redacted one.
    """
    from libcommon.redact import redact_value

    plan = Plan.model_validate(redact_value(plan.model_dump(mode="json", by_alias=True)))
    problems = plan_problems(plan, layout.workspace)
    if problems:
        raise PlanRefused(problems)
    sha = plan_sha256(plan)
    plans_dir(layout).mkdir(parents=True, exist_ok=True)
    with file_lock(_lock_path(layout, session_id)):
        # A plan file that cannot be read is never written over (CorruptStore).
        previous = read_plan(layout, session_id)
        was_approved = previous is not None and previous.document.status == "approved"
        keeps = was_approved and previous is not None and previous.document.approved_sha256 == sha
        document = PlanDocument(
            session=session_id,
            status="approved" if keeps else "draft",
            approved_sha256=sha if keeps else None,
            updated_at=clock.timestamp(),
            plan=plan,
        )
        _store(layout, session_id, document, sha)
    dropped = was_approved and not keeps
    return WriteOutcome(
        document=document,
        sha256=sha,
        previous_sha256=previous.sha256 if previous is not None else None,
        approval_dropped=dropped,
        blocked=[task.id for task in plan.tasks if task.role == "executor"] if dropped else [],
    )


def approve_plan(layout: StateLayout, session_id: str, expected: str | None = None) -> LoadedPlan:
    """Mark the plan approved at its current content hash; refuses a plan that is not valid.

    ``expected`` (a prefix of the content hash the person read) refuses a plan
    that changed since they read it. The caller records ``plan.approved`` with
    the returned hash: that event, not the file, is the consent record.
    """
    plans_dir(layout).mkdir(parents=True, exist_ok=True)
    with file_lock(_lock_path(layout, session_id)):
        loaded = read_plan(layout, session_id)
        if loaded is None:
            raise OperationFailed(
                "this session has no plan to approve",
                hint="ask the agent to write one (it uses plan_write)",
            )
        if expected is not None and not loaded.sha256.startswith(expected.lower()):
            raise OperationFailed(
                f"the plan is now {loaded.sha256[:12]}, not the {expected!r} you named; "
                "it changed since you read it",
                hint="read it again (/plan), then approve what you read",
            )
        problems = plan_problems(loaded.plan, layout.workspace)
        if problems:
            raise OperationFailed(
                f"the plan does not validate, so it cannot be approved: {'; '.join(problems)}",
                hint="ask the agent to fix the plan, then approve it",
            )
        document = loaded.document.model_copy(
            update={
                "status": "approved",
                "approved_sha256": loaded.sha256,
                "updated_at": clock.timestamp(),
            }
        )
        _store(layout, session_id, document, loaded.sha256)
    return LoadedPlan(loaded.path, document, loaded.sha256)


def _store(layout: StateLayout, session_id: str, document: PlanDocument, sha: str) -> None:
    from .views import markdown_view

    atomic_write_bytes(
        plan_path(layout, session_id), jsonio.dumps(document.to_json(), indent=True) + b"\n"
    )
    atomic_write_bytes(
        view_path(layout, session_id), markdown_view(document, sha, None).encode() + b"\n"
    )
