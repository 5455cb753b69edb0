"""Requests of the composition seam's verbs that no other tool already defines.

Where a tool has its own pydantic request (``ax_exec.ExecSpec``,
``ax_policy.DecisionRequest``, ``ax_slate.RecordRequest``) the seam uses it
as is; these cover the verbs whose core functions take plain arguments. Answers
are the tools' own contracts too (ax-map's ``MapShown`` and ``Retrieved``, as
``ax-map show --json`` and ``ax-map retrieve --json`` print them).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ax_slate import CodebaseDigests
from libcommon.contracts import Contract


class AppendRequest(Contract):
    """log.append: event bodies (each with ``type``); the log fills the envelope."""

    events: list[dict[str, Any]]


class PathsRequest(Contract):
    """log.snapshot and log.mutated: workspace-relative paths of one call.

    ``before`` / ``after``: event bodies stored right before / after the verb's
    own events, in the same all-or-nothing batch where the seam can
    (in-process); the answer is every stored event, in log order. When the
    verb itself fails, ``before`` is still stored (alone) and the error is
    ``seam.BeforeStored``; ``after`` is not stored.
    """

    paths: list[str]
    call_id: str | None = None
    before: list[dict[str, Any]] = Field(default_factory=list)
    after: list[dict[str, Any]] = Field(default_factory=list)


class CheckRunRequest(Contract):
    """check.run: a typed check; the seam fills the workspace and session.

    ``sandbox`` left unset means the profile the call's policy decision names.
    """

    kind: str
    project: str | None = None
    targets: list[str] = Field(default_factory=list)
    timeout_s: float | None = None
    sandbox: str | None = None


class CheckDetectRequest(Contract):
    """check.detect: the workspace's units and the command (and replay key) of each kind."""


class SetupRunRequest(Contract):
    """check.setup: a project setup (install, migrate, seed); the seam fills the workspace
    and session. ``expect_key`` is the replay key the decision named: ax-check refuses,
    spawning nothing, a setup that resolves to another."""

    intent: str
    project: str | None = None
    timeout_s: float | None = None
    expect_key: str | None = None


class SetupPlanRequest(Contract):
    """check.setup_plan: what a setup would run and its replay key, spawning nothing."""

    intent: str
    project: str | None = None


class CheckBrowserRequest(Contract):
    """check.browser: a flow (its JSON) against the preview at ``preview_url``; the seam
    fills the workspace and session."""

    flow: dict[str, Any]
    preview_url: str
    # The unit the preview serves (ax-preview's record), which the evidence names.
    project: str = "."


class NoteSetRequest(Contract):
    key: str
    text: str


class NoteKeyRequest(Contract):
    key: str


class RecallRequest(Contract):
    step: int
    page: int = 1


class SearchRequest(Contract):
    query: str | None = None
    row: int | None = None
    page: int = 1


class SlateStartRequest(Contract):
    """slate.start: create the session's slate (or return the one that exists)."""

    continues: str | None = None


class SaveOutputRequest(Contract):
    """slate.save_output: keep a step's full output for recall; answers its path."""

    text: str


class TrailRequest(Contract):
    """slate.trail: the newest ``count`` Trail entries that pass the filters, oldest first."""

    count: int = 20
    tool: str | None = None
    file: str | None = None
    from_step: int | None = None
    to_step: int | None = None


class FrameRequest(Contract):
    """slate.frame: the slate frame, its Trail part within ``budget`` tokens."""

    budget: int | None = None


class ArchiveRequest(Contract):
    """slate.archive: one message kept whole in the session's archive; answers its row."""

    message: dict[str, Any]


class MemoryRequest(Contract):
    """slate.memory_render and slate.memory_describe: the map's current digests, when known.

    With None the codebase summary's staleness is unknown (see ``ax_agent.memory``).
    """

    digests: CodebaseDigests | None = None


class MapBuildRequest(Contract):
    """map.build: build or refresh the workspace's map index within ``budget_s`` seconds."""

    budget_s: float


class MapShowRequest(Contract):
    """map.show: the map of the index as it is, rendered within ``chars`` characters."""

    chars: int


class MapRetrieveRequest(Contract):
    """map.retrieve: the files answering ``query`` best, at most ``limit`` of them."""

    query: str
    limit: int


class CheckpointCreateRequest(Contract):
    """log.checkpoint_create: a checkpoint of this session (answer: ``ax_log.CreatedView``)."""

    kind: str = "agent"
    label: str | None = None


class CheckpointListRequest(Contract):
    """log.checkpoint_list: this session's live checkpoints (a list of ``CheckpointView``)."""


class CheckpointPruneRequest(Contract):
    """log.checkpoint_prune: this session's checkpoints but delivery ones (``PruneView``)."""
