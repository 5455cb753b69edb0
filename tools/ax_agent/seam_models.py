"""Requests of the composition seam's verbs that no other tool already defines.

Where a tool has its own pydantic request (``ax_exec.ExecSpec``,
``ax_policy.DecisionRequest``, ``ax_slate.RecordRequest``) the seam uses it
as is; these cover the verbs whose core functions take plain arguments.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from libcommon.contracts import Contract


class AppendRequest(Contract):
    """log.append: event bodies (each with ``type``); the log fills the envelope."""

    events: list[dict[str, Any]]


class PathsRequest(Contract):
    """log.snapshot and log.mutated: workspace-relative paths of one call."""

    paths: list[str]
    call_id: str | None = None


class CheckRunRequest(Contract):
    """check.run: a typed check; the seam fills the workspace and session."""

    kind: str
    project: str | None = None
    targets: list[str] = Field(default_factory=list)
    timeout_s: float | None = None
    # The sandbox profile the policy decision named ("none" when it runs unsandboxed).
    sandbox: Literal["none", "read-only", "workspace-write"] = "none"


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
