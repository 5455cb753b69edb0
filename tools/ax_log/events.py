"""The event schema: the envelope and the registry of event types.

A stored event is one JSON object: the envelope (``v``, ``seq``, ``ts``,
``session``, ``type``) filled in by the log, plus the fields of its type.
Each type is a pydantic model registered under its dotted name; a later issue
adds a type by defining one more ``EventBody`` subclass here with
``@register``. Existing fields are never changed or removed, and new fields
are optional, so the schema version stays 1 (docs/events.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, ValidationError, model_validator

from ax_log.envelope import ENVELOPE_KEYS
from libcommon.contracts import Contract
from libcommon.errors import UsageError

TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$|^custom$")
CUSTOM_KIND_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")

Termination = Literal["exited", "timeout", "aborted", "spawn-error"]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
CallId = Annotated[str, Field(min_length=1)]
Seq = Annotated[int, Field(ge=1)]
Milliseconds = Annotated[int | float, Field(ge=0)]


class EventBody(Contract):
    """The fields of one event type; the envelope is added by the log."""

    type: str


BodyT = TypeVar("BodyT", bound=type[EventBody])

REGISTRY: dict[str, type[EventBody]] = {}


def register(model: BodyT) -> BodyT:
    """Add an event type to the registry under the default of its ``type`` field."""
    body_model: type[EventBody] = model
    name = body_model.model_fields["type"].default
    if not isinstance(name, str) or not TYPE_PATTERN.fullmatch(name):
        raise ValueError(f"{model.__name__} needs a dotted lowercase type default, not {name!r}")
    if name in REGISTRY:
        raise ValueError(f"event type {name!r} is already registered")
    REGISTRY[name] = model
    return model


# --- session lifecycle -------------------------------------------------------


@register
class SessionStarted(EventBody):
    """``provider`` and ``model`` name who answers; ``resumed`` marks a later life."""

    type: Literal["session.started"] = "session.started"
    workspace: str
    provider: str | None = None
    model: str | None = None
    resumed: bool = False
    # Who answers, never a secret: the key's variable name and whether it is set, the
    # API host (no userinfo, no path), and how the key was checked.
    key_var: str | None = None
    key_set: bool | None = None
    api_host: str | None = None
    key_check: str | None = None
    # A delegated task's own session (issue 21): the parent session's id and the task's
    # plan id or label.
    parent: str | None = None
    task: str | None = None
    # The delegated role (issue 26: a worker thread is resumed by id only as a worker).
    role: str | None = None


@register
class SessionEnded(EventBody):
    type: Literal["session.ended"] = "session.ended"
    reason: str
    workspace: str | None = None


@register
class TrustVerified(EventBody):
    """``basis``: ``store`` (recorded consent), ``once`` (--trust-this-workspace) or
    ``derived`` (a delegated task's session, trusted as its parent's workspace is)."""

    type: Literal["trust.verified"] = "trust.verified"
    workspace: str
    basis: str


@register
class ConfigLoaded(EventBody):
    """``sources``: each configuration layer with its path, presence and sha256."""

    type: Literal["config.loaded"] = "config.loaded"
    sources: list[dict[str, Any]]
    # What the loader ignored and why (issue 26: a workspace's workerExtensions).
    warnings: list[str] = Field(default_factory=list)


@register
class SandboxStatusRecorded(EventBody):
    """The probed sandbox as the policy sees it, plus what it confines and what not."""

    type: Literal["sandbox.status"] = "sandbox.status"
    backend: str
    enforced: bool
    profiles: list[str]
    network_denied: bool
    confines: list[str] = Field(default_factory=list)
    does_not_confine: list[str] = Field(default_factory=list)
    reason: str | None = None


@register
class GitContext(EventBody):
    """What a read-only git probe saw at session start; ``repo`` false outside a repository."""

    type: Literal["git.context"] = "git.context"
    repo: bool
    branch: str | None = None
    head: str | None = None
    dirty: int | None = None
    reason: str | None = None


@register
class MemoryLoaded(EventBody):
    """Documents given to the model (instruction files, project memory), one row each;
    ``trigger`` says when: ``start`` (the system prompt), ``lazy`` (a folder the agent
    worked in), ``resume`` (folders an earlier life loaded) or ``init`` (the file
    ``/init`` wrote)."""

    type: Literal["memory.loaded"] = "memory.loaded"
    documents: list[dict[str, Any]]
    trigger: Literal["start", "lazy", "resume", "init"] | None = None


@register
class MemoryNarrative(EventBody):
    """Project memory written at a session's clean end: never a message, so a resume
    replays none of it. ``narrative`` says whose account the journal entry carries
    (``model-written``, or ``unavailable`` with ``reason``); ``documents`` are the
    files written, each with its ``doc``, ``path``, ``bytes`` and ``sha256``;
    ``problems`` say what could not be written; ``usage`` is the narrative call's."""

    type: Literal["memory.narrative"] = "memory.narrative"
    narrative: Literal["model-written", "unavailable"]
    documents: list[dict[str, Any]]
    reason: str | None = None
    problems: list[str] = Field(default_factory=list)
    usage: dict[str, int] | None = None


@register
class MapBuilt(EventBody):
    """The repository map a session's start gave the model (ax-map, issue 18).

    ``status``: ``built`` (the index was built from nothing: ``rebuilt`` says why),
    ``refreshed`` (what changed was extracted again), ``reused`` (nothing had changed)
    or ``skipped`` (no map was given: ``reason`` says why, ``untrusted`` for a
    workspace without trust). ``sha256`` is of the map exactly as ax-map rendered it,
    ``chars`` its length; ``coverage`` is ax-map's (``total``, ``indexed``, ``listed``
    by reason, ``pending``, ``capped``, ``exact``, ``languages``) and ``state``
    ``partial`` when it does not cover every file. ``timingsMs`` holds the build's
    phases, ``show`` (rendering) and ``session`` (the whole step, as the start waited).
    """

    type: Literal["map.built"] = "map.built"
    status: Literal["built", "refreshed", "reused", "skipped"]
    reason: str | None = None
    budget_s: float | None = None
    sha256: Sha256 | None = None
    chars: int | None = Field(default=None, ge=0)
    files_shown: int | None = Field(default=None, ge=0)
    state: Literal["complete", "partial"] | None = None
    coverage: dict[str, Any] | None = None
    rebuilt: str | None = None
    timings_ms: dict[str, Milliseconds] = Field(default_factory=dict)


@register
class McpServer(EventBody):
    """An MCP server of ax-agent's session changed state (issue 23).

    ``state``: ``ready`` (with ``tools``, the names the model sees, ``notes`` on
    tools dropped, ``pid`` for stdio), ``failed`` or ``disabled`` (``reason``: it
    could not start, died, hung past its timeout or flooded), ``awaiting-approval``
    (a workspace-declared entry not approved), ``stopped`` (``exitCode``, ``killed``
    processes of its tree) or ``ignored`` (a workspace declaration that was not
    usable; ``server`` is then null). ``source`` is ``user`` or ``workspace``.
    """

    type: Literal["mcp.server"] = "mcp.server"
    server: str | None
    state: Literal["ready", "failed", "disabled", "awaiting-approval", "stopped", "ignored"]
    source: Literal["user", "workspace"] | None = None
    reason: str | None = None
    tools: list[str] | None = None
    notes: list[str] | None = None
    pid: int | None = None
    protocol_version: str | None = None
    exit_code: int | None = None
    killed: int | None = Field(default=None, ge=0)


@register
class McpCall(EventBody):
    """One call of an MCP server's tool: which, how long, and how it ended (``ok``,
    ``error`` the server's own, ``failed`` no result, ``disabled`` the call hung and
    the server was disabled). Never the arguments: ``tool.requested`` has them, redacted."""

    type: Literal["mcp.call"] = "mcp.call"
    server: str
    tool: str
    duration_ms: Milliseconds
    outcome: Literal["ok", "error", "failed", "disabled"]


@register
class TurnCompleted(EventBody):
    """A turn ended without an abort: ``stopReason`` says why (``end_turn``, ``max-steps`` …)."""

    type: Literal["turn.completed"] = "turn.completed"
    stop_reason: str
    steps: int
    detail: str | None = None
    # A provider error's kind in ax-agent's one taxonomy (``rate_limit``, ``auth`` …).
    error_kind: str | None = None


@register
class TurnAborted(EventBody):
    """A turn was interrupted; ``phase`` is where (``model``, ``tool``, ``approval``)."""

    type: Literal["turn.aborted"] = "turn.aborted"
    phase: str
    steps: int
    detail: str | None = None


# --- conversation ------------------------------------------------------------


@register
class UserMessage(EventBody):
    type: Literal["user.message"] = "user.message"
    content: str | list[dict[str, Any]]


@register
class AssistantMessage(EventBody):
    """``content`` holds the text and tool_use blocks exactly as the provider sent them."""

    type: Literal["assistant.message"] = "assistant.message"
    content: list[dict[str, Any]]
    stop_reason: str | None = None
    usage: dict[str, int] | None = None


# --- tool calls and decisions ------------------------------------------------


@register
class ToolRequested(EventBody):
    type: Literal["tool.requested"] = "tool.requested"
    call_id: CallId
    tool: str
    input: Any = Field(...)


@register
class PolicyDecision(EventBody):
    type: Literal["policy.decision"] = "policy.decision"
    call_id: CallId
    verdict: Literal["allow", "ask", "deny"]
    action_class: str = Field(alias="class")
    rule: str
    reason: str
    # Where the action runs if it runs: "sandboxed" or "unsandboxed", and the profile.
    boundary: str | None = None
    sandbox_profile: str | None = None


@register
class ApprovalResolved(EventBody):
    """``approver``: who answered (``terminal``, ``non-interactive``, ``allow-all``, ``demo``)."""

    type: Literal["approval.resolved"] = "approval.resolved"
    call_id: CallId
    answer: str
    scope: str
    approver: str | None = None
    detail: str | None = None


class Unrecorded(Contract):
    """Files a call changed that the log refused to record, and why: undo cannot revert them."""

    paths: list[str]
    reason: str


class ImageShown(Contract):
    """An image a tool result showed the model (view_image); the bytes are not logged."""

    source: str
    media_type: str
    bytes: int = Field(ge=0)
    sha256: Sha256


@register
class ToolCompleted(EventBody):
    """``content`` is the result the model was given, so a resume can replay it;
    ``images`` names the images shown beside it."""

    type: Literal["tool.completed"] = "tool.completed"
    call_id: CallId
    ok: bool
    summary: str
    content: str | None = None
    # Why no tool ran: denied, declined, refused-input, refused, skipped, interrupted.
    outcome: str | None = None
    unrecorded: Unrecorded | None = None
    images: list[ImageShown] | None = None


# --- snapshots, mutations, undo ----------------------------------------------


@register
class SnapshotStored(EventBody):
    """``sha256`` is null when the file did not exist; ``absentDirs`` lists the
    workspace folders above it that did not exist either, deepest first."""

    type: Literal["snapshot.stored"] = "snapshot.stored"
    path: str
    sha256: Sha256 | None
    call_id: str | None = None
    absent_dirs: list[str] = Field(default_factory=list)


@register
class FileMutated(EventBody):
    """``createdDirs``: folders the change created, deepest first (undo removes them if empty)."""

    type: Literal["file.mutated"] = "file.mutated"
    call_id: str | None
    path: str
    pre: Sha256 | None
    post: Sha256 | None
    created_dirs: list[str] = Field(default_factory=list)


class UndoRefusal(Contract):
    seq: Seq
    path: str
    reason: str


@register
class UndoApplied(EventBody):
    type: Literal["undo.applied"] = "undo.applied"
    paths: list[str]
    reverted: list[Seq]
    refused: list[UndoRefusal]


# --- git checkpoints (ax-log checkpoint) ----------------------------------------

GitOid = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
CheckpointKind = Literal["agent", "task-base", "pre-integration", "delivery"]
CheckpointSkipReason = Literal["large-file", "large-folder", "dependency-folder"]


class CheckpointSkip(Contract):
    """A path a checkpoint left out: ``reason`` is ``large-file``, ``large-folder`` or
    ``dependency-folder``; ``files`` counts the untracked files under a folder."""

    path: str
    reason: CheckpointSkipReason
    files: Annotated[int, Field(ge=1)] = 1


@register
class CheckpointCreated(EventBody):
    """A commit under a hidden ref, appended after ``commit-tree`` and before ``update-ref``:
    a crash between the two leaves an event whose ref does not exist, so readers go by
    the live refs. ``parent`` is null in a repository with no commit yet."""

    type: Literal["checkpoint.created"] = "checkpoint.created"
    ref: str
    n: Annotated[int, Field(ge=1)]
    kind: CheckpointKind
    commit: GitOid
    tree: GitOid
    parent: GitOid | None
    label: str | None = None
    skipped: list[CheckpointSkip] = Field(default_factory=list)
    submodules: list[str] = Field(default_factory=list)


class CheckpointRefusal(Contract):
    path: str
    reason: str


@register
class CheckpointRestored(EventBody):
    """A checkpoint's files put back in the working tree under one synthetic ``callId``
    (its ``file.mutated`` events share it, so one undo reverts the whole restore)."""

    type: Literal["checkpoint.restored"] = "checkpoint.restored"
    ref: str
    commit: GitOid
    call_id: CallId
    restored: list[str]
    removed: list[str]
    refused: list[CheckpointRefusal] = Field(default_factory=list)


@register
class CheckpointSkipped(EventBody):
    """An automatic checkpoint that was not taken, and why; the call it preceded ran anyway."""

    type: Literal["checkpoint.skipped"] = "checkpoint.skipped"
    kind: CheckpointKind
    reason: str
    call_id: CallId | None = None


@register
class CheckpointPruned(EventBody):
    """Checkpoint refs deleted (``refs``) and kept (``kept``: delivery anchors)."""

    type: Literal["checkpoint.pruned"] = "checkpoint.pruned"
    refs: list[str]
    kept: list[str] = Field(default_factory=list)


# --- commands and checks -----------------------------------------------------


@register
class CommandStarted(EventBody):
    type: Literal["command.started"] = "command.started"
    call_id: CallId
    command: str | list[str]
    cwd: str
    sandbox: str | dict[str, Any] | None


@register
class CommandEnded(EventBody):
    type: Literal["command.ended"] = "command.ended"
    call_id: CallId
    termination: Termination
    exit_code: int | None
    duration_ms: Milliseconds

    @model_validator(mode="after")
    def _exit_code_only_when_exited(self) -> CommandEnded:
        _check_exit_code(self.termination, self.exit_code)
        return self


def _check_exit_code(termination: str | None, exit_code: int | None) -> None:
    # A killed or never-spawned process has no exit code, so it can never read as a pass.
    if termination == "exited" and exit_code is None:
        raise ValueError("exitCode is required when termination is 'exited'")
    if termination != "exited" and exit_code is not None:
        raise ValueError(f"exitCode must be null when termination is {termination!r}")


@register
class CheckStarted(EventBody):
    type: Literal["check.started"] = "check.started"
    kind: str
    project: str
    scope: str | list[str]
    recipe_id: str | None


@register
class CheckCompleted(EventBody):
    type: Literal["check.completed"] = "check.completed"
    kind: str
    project: str
    scope: str | list[str]
    recipe_id: str | None
    # modified: exited 0 but changed the sources it checked (ax-check's tree check).
    verdict: Literal["passed", "failed", "error", "unsupported", "modified"]
    exit_code: int | None
    termination: Termination | None
    reason: str | None
    # What consent can bind to, and the named signals (e.g. failing test ids).
    replay_key: Sha256 | None = None
    signals: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _exit_code_only_when_exited(self) -> CheckCompleted:
        _check_exit_code(self.termination, self.exit_code)
        return self


# --- project setup (ax-check setup) ----------------------------------------------
# Installs, migrations and seeds: never check.*, so no reader of checks can count one.


@register
class SetupStarted(EventBody):
    type: Literal["setup.started"] = "setup.started"
    intent: Literal["install", "migrate", "seed"]
    project: str
    recipe_id: str | None
    replay_key: Sha256 | None = None


@register
class SetupCompleted(EventBody):
    type: Literal["setup.completed"] = "setup.completed"
    intent: Literal["install", "migrate", "seed"]
    project: str
    recipe_id: str | None
    # Never "passed": a setup is not a verification.
    verdict: Literal["succeeded", "failed", "error", "unsupported"]
    exit_code: int | None
    termination: Termination | None
    reason: str | None
    replay_key: Sha256 | None = None

    @model_validator(mode="after")
    def _exit_code_only_when_exited(self) -> SetupCompleted:
        _check_exit_code(self.termination, self.exit_code)
        return self


# --- previews (ax-preview) -------------------------------------------------------

PreviewStopReason = Literal[
    "ttl", "log-cap", "stopped", "exited", "crashed", "session-end", "not-ready"
]


@register
class PreviewStarted(EventBody):
    type: Literal["preview.started"] = "preview.started"
    preview_id: str
    script: str
    command: list[str]
    cwd: str
    pid: int
    log_path: str
    ttl_s: float


@register
class PreviewReady(EventBody):
    type: Literal["preview.ready"] = "preview.ready"
    preview_id: str
    url: str
    pid: int
    note: str
    # verified / not-verified: who holds the socket that answered (``note`` says it in words).
    ownership: str | None = None


@register
class PreviewFailed(EventBody):
    type: Literal["preview.failed"] = "preview.failed"
    preview_id: str
    reason: str
    exit_code: int | None = None
    log_tail: str | None = None
    hint: str | None = None


@register
class PreviewStopped(EventBody):
    """``exitCode`` is negative when a signal ended the server."""

    type: Literal["preview.stopped"] = "preview.stopped"
    preview_id: str
    reason: PreviewStopReason
    exit_code: int | None = None
    kill_verified: bool | None = None


# --- bounded context (ax-agent) ---------------------------------------------------


class ElidedResult(Contract):
    """One tool result a request no longer sends verbatim: a marker, or a pack of head and tail."""

    call_id: CallId
    form: Literal["marker", "pack"]
    bytes: Annotated[int, Field(ge=0)]
    sha256: Sha256
    # The archive row holding the output, when the harness knew it.
    row: Annotated[int, Field(ge=1)] | None = None


@register
class ContextCompacted(EventBody):
    """A rewrite of the history a request sends; the session's messages are unchanged.

    ``cutFrom``/``cutTo``: the conversation's messages before ``cutTo`` have left the
    request (the slate frame stands in); ``stubbed``: indices of user messages sent as
    a one-line stub. A resume adds these events up to rebuild what stays elided.
    """

    type: Literal["context.compacted"] = "context.compacted"
    rewrite: Annotated[int, Field(ge=1)]
    reason: Literal["forced", "saving", "packs"]
    tokens_before: Annotated[int, Field(ge=0)]
    tokens_after: Annotated[int, Field(ge=0)]
    saving: int
    invalidated: Annotated[int, Field(ge=0)]
    elided: list[ElidedResult]
    cut_from: Annotated[int, Field(ge=0)]
    cut_to: Annotated[int, Field(ge=0)]
    stubbed: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list)
    over_budget: bool = False


@register
class ContextHeld(EventBody):
    """A rewrite was due and held back: its saving did not beat re-sending what it invalidates
    (``cache``), or rounds about to leave were announced first (``notice``)."""

    type: Literal["context.held"] = "context.held"
    reason: Literal["cache", "notice"]
    tokens_before: Annotated[int, Field(ge=0)]
    saving: int
    invalidated: Annotated[int, Field(ge=0)]
    pending: Annotated[int, Field(ge=0)]
    cut_to: Annotated[int, Field(ge=0)]
    notice: bool


# --- plans and delegated tasks (ax-agent, issue 21) ----------------------------


@register
class PlanWritten(EventBody):
    """The model wrote the session's plan (``plan_write``); ``path`` is the plan file.

    ``sha256`` is the content hash (canonical JSON of the plan without progress
    marks); ``status`` is ``approved`` only when the write was a semantic no-op of
    an approved plan. ``approvalDropped``: an approval existed and no longer covers
    the plan; ``blocked`` names the executor tasks that now wait for one.
    """

    type: Literal["plan.written"] = "plan.written"
    path: str
    sha256: Sha256
    previous_sha256: Sha256 | None = None
    status: Literal["draft", "approved"]
    tasks: Annotated[int, Field(ge=0)]
    approval_dropped: bool = False
    blocked: list[str] = Field(default_factory=list)


@register
class PlanApproved(EventBody):
    """A person approved the plan whose content hash is ``sha256`` (``/plan approve``):
    the consent record executors need."""

    type: Literal["plan.approved"] = "plan.approved"
    sha256: Sha256
    path: str | None = None
    tasks: Annotated[int, Field(ge=0)] | None = None
    approver: str | None = None


class _TaskEvent(EventBody):
    """A delegated task's event: the attempt is (``group``, ``taskId``)."""

    group: Annotated[str, Field(min_length=1)]
    task_id: Annotated[str, Field(min_length=1)]


@register
class TaskStarted(_TaskEvent):
    """A delegated task was spawned. ``definitionSha256`` is the sha of its plan task's
    canonical form (None: unbound, no plan task); ``child`` the child session's id."""

    type: Literal["task.started"] = "task.started"
    role: Literal["explorer", "planner", "reviewer", "inspector", "researcher", "executor"]
    definition_sha256: Sha256 | None = None
    child: str | None = None
    base: str | None = None


@register
class TaskObserved(_TaskEvent):
    """Supervision saw something the parent must know: ``kind`` ``repeat`` (identical
    consecutive calls), ``budget`` (80% of a budget spent), ``stall`` (no progress),
    ``capture`` (an executor's changes could not be captured)."""

    type: Literal["task.observed"] = "task.observed"
    kind: Literal["repeat", "budget", "stall", "capture"]
    detail: str


@register
class TaskAsked(_TaskEvent):
    """A task's approval question (``callId`` of the child's call) waits for the parent."""

    type: Literal["task.asked"] = "task.asked"
    call_id: CallId
    tool: str | None = None


@register
class TaskAnswered(_TaskEvent):
    """The question ``callId`` was answered (``dropped``: the task died while it waited)."""

    type: Literal["task.answered"] = "task.answered"
    call_id: CallId
    answer: Literal["yes", "no", "dropped"]


@register
class TaskCaptured(_TaskEvent):
    """An executor's changes, captured at its end whatever its status: ``files`` the
    workspace-relative paths captured, ``omitted`` those left out by the caps;
    ``entries`` the per-file records (change, base and after blob hashes);
    ``omissions`` the first omitted paths with why (``omitted`` counts them all)."""

    type: Literal["task.captured"] = "task.captured"
    files: list[str]
    omitted: Annotated[int, Field(ge=0)] = 0
    entries: list[dict[str, Any]] = Field(default_factory=list)
    omissions: list[dict[str, Any]] = Field(default_factory=list)


@register
class TaskCompleted(_TaskEvent):
    """The task's turn ended normally; ``summary`` is the start of its report."""

    type: Literal["task.completed"] = "task.completed"
    summary: str | None = None


@register
class TaskFailed(_TaskEvent):
    """The task ended in failure (an error, a budget, a limit): a genuine failure,
    counted against its definition's attempts."""

    type: Literal["task.failed"] = "task.failed"
    reason: str
    detail: str | None = None


@register
class TaskCancelled(_TaskEvent):
    """The task was stopped (the person, the group, supervision); not its failure."""

    type: Literal["task.cancelled"] = "task.cancelled"
    reason: str
    detail: str | None = None


@register
class TaskApplied(_TaskEvent):
    """Captured files applied to the workspace (``apply_task_changes``): ``applied``
    and ``refused`` (each ``{"path", "reason"}``); none refused ends the integration."""

    type: Literal["task.applied"] = "task.applied"
    applied: list[str]
    refused: list[dict[str, Any]] = Field(default_factory=list)


@register
class WorktreeRemoved(_TaskEvent):
    """An executor's worktree was removed at the end of its group (``ok``), or could not
    be (``ok`` false, ``reason``: it is left for the orphan sweep). ``parked``: it left
    the group as a spare of the project, kept for the next group's reuse, not deleted."""

    type: Literal["worktree.removed"] = "worktree.removed"
    path: str
    ok: bool
    reason: str | None = None
    parked: bool = False


@register
class WorktreeDiscarded(_TaskEvent):
    """A spare worktree refused for the task (when parked at its group's end, or claimed
    for a new group): ``reason`` names what failed its checks; it was removed, and a
    claiming task got a fresh checkout instead. Never a failure of the group."""

    type: Literal["worktree.discarded"] = "worktree.discarded"
    path: str
    reason: str


@register
class WorktreesSwept(EventBody):
    """At a session's start or resume, the orphan sweep of executors' worktrees: the
    group folders removed (their owner process is gone, by pid and start time), those
    whose removal failed (``failed``: ``{"group", "reason"}``), and ``error`` when the
    sweep itself failed or did not finish within its wait (it goes on in the background)."""

    type: Literal["worktrees.swept"] = "worktrees.swept"
    removed: list[str] = Field(default_factory=list)
    failed: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None


@register
class TaskDiscarded(_TaskEvent):
    """The parent threw a task's captured changes away; the task may run again."""

    type: Literal["task.discarded"] = "task.discarded"
    reason: str


# --- the review ledger (ax-agent, issue 22) ------------------------------------

Severity = Literal["critical", "high", "medium", "low"]


@register
class ReviewFinding(_TaskEvent):
    """One finding a reviewer task reported (``report_finding``), recorded in the
    parent's log at the task's end, in the order reported: ``number`` counts from 1
    per task. ``advisory``: the inspector's channel, which blocks nothing."""

    type: Literal["review.finding"] = "review.finding"
    number: Annotated[int, Field(ge=1)]
    severity: Severity
    path: str
    line: Annotated[int, Field(ge=1)] | None = None
    title: Annotated[str, Field(min_length=1)]
    detail: str = ""
    advisory: bool = False


@register
class ReviewCaptured(_TaskEvent):
    """A reviewer task's findings, captured at its end whatever its status: ``findings``
    is how many (0: a recorded clean review)."""

    type: Literal["review.captured"] = "review.captured"
    findings: Annotated[int, Field(ge=0)]
    advisory: bool = False


@register
class ReviewTriaged(EventBody):
    """The parent's judgment of finding ``finding`` (``group/taskId/number``,
    ``triage_finding``): ``verify`` keeps it blocking, ``refute`` clears it as an
    unverified model claim, ``accept`` (medium and low only) and ``address`` (``refs``:
    the seq of later events that fixed it) clear it. The fold re-derives every rule."""

    type: Literal["review.triaged"] = "review.triaged"
    finding: Annotated[str, Field(min_length=1)]
    action: Literal["verify", "refute", "accept", "address"]
    reason: Annotated[str, Field(min_length=1)]
    refs: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list)


# --- web research (ax-agent, issue 25) ------------------------------------------

Count = Annotated[int, Field(ge=0)]


@register
class ResearchSpent(EventBody):
    """A research call's worst case, reserved from the shared allowance before anything
    was sent to ``host`` (``tool``: web_search or web_extract). A resume folds these
    back, so a restart cannot refill the allowance."""

    type: Literal["research.spent"] = "research.spent"
    call_id: CallId
    tool: Annotated[str, Field(min_length=1)]
    host: Annotated[str, Field(min_length=1)]
    searches: Count = 0
    extracts: Count = 0
    credits: Count = 0
    chars: Count = 0


@register
class ResearchSettled(EventBody):
    """A research call ended: ``chars`` it delivered (what it reserved beyond that is
    given back), ``outcome`` ``ok`` or its failure kind."""

    type: Literal["research.settled"] = "research.settled"
    call_id: CallId
    tool: Annotated[str, Field(min_length=1)]
    chars: Count
    outcome: Annotated[str, Field(min_length=1)]


@register
class ResearchSource(EventBody):
    """One finding ``record_source`` took: a claim, its sources and a verdict. Recorded
    in the researcher's log, and copied into its parent's (``group``, ``taskId`` set) at
    the task's end. Context, never verification: it marks nothing CHECKED."""

    type: Literal["research.source"] = "research.source"
    note_id: Annotated[str, Field(pattern=r"^r-[0-9a-f]{12}$")]
    claim: Annotated[str, Field(min_length=1)]
    sources: Annotated[list[str], Field(min_length=1)]
    verdict: Literal["corroborated", "single-source", "disputed", "unverified"]
    distinct_sources: Annotated[int, Field(ge=1)]
    group: str | None = None
    task_id: str | None = None


@register
class ResearchCaptured(_TaskEvent):
    """A researcher task's own research at its end, in the parent's log: its spend and
    how many findings it recorded."""

    type: Literal["research.captured"] = "research.captured"
    searches: Count = 0
    extracts: Count = 0
    credits: Count = 0
    chars: Count = 0
    findings: Count = 0


# --- open extension and the log's own records --------------------------------


@register
class Custom(EventBody):
    """The open type for hooks and scripts: any JSON object under ``data``."""

    type: Literal["custom"] = "custom"
    kind: Annotated[str, Field(pattern=CUSTOM_KIND_PATTERN.pattern)]
    data: dict[str, Any]


@register
class LogRecovered(EventBody):
    """A partial trailing line was moved from the log to ``partialFile``."""

    type: Literal["log.recovered"] = "log.recovered"
    partial_file: str
    offset: Annotated[int, Field(ge=0)]
    bytes: Annotated[int, Field(ge=1)]
    sha256: Sha256


# --- the interactive terminal (ax-agent) ---------------------------------------


@register
class ProviderChanged(EventBody):
    """A person switched the provider or model between turns (``/model``, ``/provider``)."""

    type: Literal["provider.changed"] = "provider.changed"
    provider: str
    model: str
    previous_provider: str
    previous_model: str
    # As in session.started: names and presence, never a key's value.
    key_var: str | None = None
    key_set: bool | None = None
    api_host: str | None = None
    key_check: str | None = None


@register
class ModelUncatalogued(EventBody):
    """The model a request went to is not in ax-agent's catalog: it runs on the
    catalog's conservative defaults (``contextWindow``, ``maxOutput``), said once."""

    type: Literal["model.uncatalogued"] = "model.uncatalogued"
    model: str
    provider: str
    context_window: int = Field(gt=0)
    max_output: int = Field(gt=0)
    note: str


@register
class SessionAccepted(EventBody):
    """A person accepted the session's work (``/accept``); ``unfinished`` is what was
    still open when they did (empty when nothing was): the acceptance state's blockers,
    ``complete`` whether there were none, ``caveats`` what stays visible anyway."""

    type: Literal["session.accepted"] = "session.accepted"
    unfinished: list[str] = Field(default_factory=list)
    complete: bool | None = None
    caveats: list[str] = Field(default_factory=list)


@register
class RepairDismissed(EventBody):
    """A person dismissed repair ``number`` of the session's repair ledger (``/repair
    dismiss N REASON``); ``signature`` binds the failure they saw. It closes the blocker
    and stays an acceptance caveat."""

    type: Literal["repair.dismissed"] = "repair.dismissed"
    number: Annotated[int, Field(ge=1)]
    signature: Annotated[str, Field(min_length=1, max_length=64)]
    reason: Annotated[str, Field(min_length=1, max_length=500)]


# --- a person's git: deliberate commits and pushes (issue 20) ------------------


@register
class CommitCreated(EventBody):
    """A person's deliberate commit of this session's files (``/commit``, ``ax-agent
    commit``): the new commit, its parent (null for a first commit), the branch (null on a
    detached HEAD), the paths committed (relative to the repository's top) and the
    warnings the person confirmed past."""

    type: Literal["commit.created"] = "commit.created"
    oid: str
    parent: str | None
    branch: str | None
    paths: list[str]
    warnings: list[str] = Field(default_factory=list)


@register
class PushStarted(EventBody):
    """A person confirmed a push (``/push``, ``ax-agent push``), appended before it runs:
    the remote's name and URL (credentials redacted), the ref, the commit sent, the remote
    commit observed for the ref (null: none) that the lease binds, and whether forced."""

    type: Literal["push.started"] = "push.started"
    remote: str
    url: str
    ref: str
    oid: str
    expected: str | None
    force: bool


@register
class PushCompleted(EventBody):
    """How a push ended: ``ok`` is git's answer, ``verified`` that a fresh look at the
    remote showed the commit there; ``reason`` says why not when either is false."""

    type: Literal["push.completed"] = "push.completed"
    remote: str
    url: str
    ref: str
    oid: str
    expected: str | None
    force: bool
    ok: bool
    verified: bool
    reason: str


# --- fresh-session handoff (issue 26) ---------------------------------------------

HandoffPurpose = Literal["track-boundary", "post-check", "context-budget", "user-request"]
PauseReason = Literal["context-budget", "adoption"]
AttemptId = Annotated[str, Field(min_length=1, max_length=64)]


@register
class HandoffPurposeRecorded(EventBody):
    """Session-bound: one handoff attempt and why (``purpose``), apart from its ``focus``.
    It stays pending through a ``handoff.failed`` of the same attempt (a retry without an
    option reuses it) and is consumed by that attempt's ``handoff.transferred``; a
    successor never reads it. ``pauseReason``: the session was paused when it was asked
    (a boundary during a context-budget pause names both causes)."""

    type: Literal["handoff.purpose"] = "handoff.purpose"
    attempt_id: AttemptId
    purpose: HandoffPurpose
    focus: str | None = None
    retry: bool = False
    pause_reason: PauseReason | None = None


@register
class HandoffFailed(EventBody):
    """Attempt ``attemptId`` did not transfer: ``cancelled``, ``idle-wait`` (the session
    was not idle: another live process owns it) or ``replacement`` (the successor could
    not be written). Its purpose stays pending for the retry."""

    type: Literal["handoff.failed"] = "handoff.failed"
    attempt_id: AttemptId
    stage: Literal["cancelled", "idle-wait", "replacement"]
    reason: str


@register
class HandoffTransferred(EventBody):
    """Attempt ``attemptId``'s entry is durable in ``successor``'s log: its purpose is
    consumed."""

    type: Literal["handoff.transferred"] = "handoff.transferred"
    attempt_id: AttemptId
    successor: str
    purpose: HandoffPurpose


class HandoffSnapshot(Contract):
    """The work a successor adopts: the plan document, the worker threads and episodes
    (folded from their own events), the notes and the Trail's newest entries."""

    plan: dict[str, Any] | None = None
    threads: list[dict[str, Any]] = Field(default_factory=list)
    episodes: list[dict[str, Any]] = Field(default_factory=list)
    notes: dict[str, str] = Field(default_factory=dict)
    trail: list[dict[str, Any]] = Field(default_factory=list)


@register
class HandoffEntry(EventBody):
    """Successor-bound: written into the successor's own log, adoptable only by the
    session whose id is ``sessionId``. ``purpose`` is absent in an entry written before
    purposes existed (read as no stated cause, never invented)."""

    type: Literal["handoff.entry"] = "handoff.entry"
    session_id: str
    snapshot: HandoffSnapshot
    purpose: HandoffPurpose | None = None
    kickoff: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    predecessor: str | None = None
    template: str | None = None


@register
class HandoffState(EventBody):
    """The session's saved handoff state; the newest one wins over an entry. A
    ``pauseReason`` pauses the session (``context-budget``: prompts refused;
    ``adoption``: the kickoff stays pending, no turn starts); null is unpaused.
    ``budgetFloor``: the request size a context-budget resume started counting from."""

    type: Literal["handoff.state"] = "handoff.state"
    snapshot: HandoffSnapshot
    pause_reason: PauseReason | None = None
    kickoff_pending: bool = False
    model: str | None = None
    reasoning_effort: str | None = None
    detail: str | None = None
    budget_floor: Annotated[int, Field(ge=0)] = 0


@register
class HandoffKickoffClaimed(EventBody):
    """Delivery of the adopted entry's kickoff is claimed, before the turn is sent: a
    reload never sends a claimed kickoff again."""

    type: Literal["handoff.kickoff_claimed"] = "handoff.kickoff_claimed"
    sha256: Sha256


@register
class HandoffKickoffFailed(EventBody):
    """The claimed kickoff's send failed (or a reload found it claimed and never sent):
    continuation is for a person to request, never replayed."""

    type: Literal["handoff.kickoff_failed"] = "handoff.kickoff_failed"
    sha256: Sha256
    reason: str


@register
class HandoffFailover(EventBody):
    """A failover instruction to a stalled session, attempt ``attemptId`` (unique)."""

    type: Literal["handoff.failover"] = "handoff.failover"
    attempt_id: AttemptId


@register
class HandoffContinued(EventBody):
    """The model started answering failover ``attemptId``'s instruction (at most once per
    attempt). It does not prove the recovery worked."""

    type: Literal["handoff.continued"] = "handoff.continued"
    attempt_id: AttemptId


# --- documents: products, never verification (ax-agent, issue 25) -------------


class ArtifactOutput(Contract):
    """One file a render wrote: its format, workspace path, sha256, size, and PDF pages.
    ``deterministic``: the same spec and images give the same bytes (DOCX yes, PDF no)."""

    format: Literal["docx", "pdf"]
    path: str
    sha256: Sha256
    bytes: int = Field(ge=0)
    pages: int | None = Field(default=None, ge=0)
    deterministic: bool


@register
class ArtifactRendered(EventBody):
    """render_document ran: ``spec`` (workspace path, ``specSha256``) was ``rendered``
    into ``outputs``, or ``failed`` its model-free validation (``failures``, nothing
    written). ``notes`` are layout heuristics, never a failure. ``pdf`` says what became
    of the PDF twin (``printed``, ``unavailable`` with ``pdfReason``, ``not-asked``,
    ``failed``). A product, never a verification: no report verdict or gate reads it."""

    type: Literal["artifact.rendered"] = "artifact.rendered"
    call_id: CallId
    spec: str
    spec_sha256: Sha256
    status: Literal["rendered", "failed"]
    outputs: list[ArtifactOutput]
    failures: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    pdf: Literal["printed", "unavailable", "not-asked", "failed"]
    pdf_reason: str | None = None


class InspectedPage(Contract):
    """One rasterised page: its number, the PNG's sha256 in the object store, size,
    pixel dimensions and the scale it was rendered at."""

    page: int = Field(ge=1)
    sha256: Sha256
    bytes: int = Field(ge=0)
    width: int = Field(ge=1)
    height: int = Field(ge=1)
    scale: float = Field(gt=0)


@register
class ArtifactInspected(EventBody):
    """inspect_pages rasterised pages of the PDF at ``path`` (``sha256``) into stored
    PNG objects; ``shown``: they were attached for a model that takes images. Like
    artifact.rendered, a product: it checks nothing."""

    type: Literal["artifact.inspected"] = "artifact.inspected"
    call_id: CallId
    path: str
    sha256: Sha256
    pages: list[InspectedPage]
    page_count: int = Field(ge=0)
    shown: bool


# --- orchestrator mode and worker threads (ax-agent, issue 26) ----------------

ThreadId = Annotated[str, Field(min_length=1)]


@register
class ThreadStarted(EventBody):
    """A worker thread was dispatched (or, ``resumed``, taken up again by id in this
    session). ``threadId`` is the worker's own session id; ``extensions`` the
    whitelisted MCP servers it was given."""

    type: Literal["thread.started"] = "thread.started"
    thread_id: ThreadId
    label: str
    task: str
    resumed: bool = False
    extensions: list[str] = Field(default_factory=list)


@register
class ThreadMessage(EventBody):
    """A message in a worker thread: ``sender`` ``parent`` (a follow-up sent to the
    worker) or ``worker`` (its answer at the end of a turn, with its ``stopReason``)."""

    type: Literal["thread.message"] = "thread.message"
    thread_id: ThreadId
    sender: Literal["parent", "worker"]
    text: str
    stop_reason: str | None = None


@register
class ThreadEnded(EventBody):
    """A worker thread was stopped: no follow-up reaches it any more."""

    type: Literal["thread.ended"] = "thread.ended"
    thread_id: ThreadId
    reason: str
    detail: str | None = None


@register
class EpisodeRecorded(EventBody):
    """What a worker delivered, as the orchestrator recorded it: a summary and the
    references (paths, commits, log steps) that back it."""

    type: Literal["episode.recorded"] = "episode.recorded"
    thread_id: ThreadId
    summary: str
    evidence: list[str] = Field(default_factory=list)


@register
class ReminderSent(EventBody):
    """A harness reminder added to a worker's conversation (``parallel-calls``: issue
    independent calls together), kept in its log and never shown on the screen."""

    type: Literal["reminder.sent"] = "reminder.sent"
    kind: Literal["parallel-calls"]
    text: str


# --- parsing -----------------------------------------------------------------


def parse_body(data: Mapping[str, Any], where: str = "event") -> EventBody:
    """Validate one event's fields (no envelope) against its registered model.

    Raises UsageError naming the offending field, so the CLI exits 2.
    """
    kind = data.get("type")
    if not isinstance(kind, str):
        raise UsageError(f"{where}: field 'type' is missing or not a string")
    model = REGISTRY.get(kind)
    if model is None:
        raise UsageError(
            f"{where}: unknown event type {kind!r}",
            hint="use a registered type (docs/events.md) or 'custom' with kind and data",
        )
    for key in ENVELOPE_KEYS:
        if key in data:
            raise UsageError(f"{where}: field {key!r} is assigned by the log; leave it out")
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise UsageError(_describe(exc, where)) from None


def parse_stored(record: Mapping[str, Any]) -> EventBody:
    """Validate the fields of a stored event (its envelope is set aside)."""
    body = {key: value for key, value in record.items() if key not in ENVELOPE_KEYS}
    return parse_body(body, f"seq {record.get('seq')}")


def body_fields(body: EventBody) -> dict[str, Any]:
    """The JSON fields of a body, ``type`` first, camelCase names."""
    return body.model_dump(mode="json", by_alias=True)


def _describe(exc: ValidationError, where: str) -> str:
    from libcommon.cliapp import describe_problem, error_location

    return "; ".join(
        f"{where}: field '{error_location(error)}': {describe_problem(error)}"
        for error in exc.errors()
    )
