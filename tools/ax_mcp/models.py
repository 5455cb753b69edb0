"""Contracts of ax-mcp's own tools (the slate tools reuse ax-slate's, the map tools extend
ax-map's)."""

from __future__ import annotations

from pydantic import Field

from ax_check import Kind
from ax_map import MapShown, Retrieved
from libcommon.contracts import Contract


class ReviewCommandRequest(Contract):
    command: str = Field(description="The shell command string to review, exactly as it would run.")


class CheckPathRequest(Contract):
    path: str = Field(description="A path, relative to the workspace or absolute.")
    write: bool = Field(default=False, description="Check it as a write target.")


class CheckDetectRequest(Contract):
    pass


class CheckRunRequest(Contract):
    kind: Kind = Field(
        description="What to verify; the command comes from the project's own manifests."
    )
    project: str | None = Field(
        default=None, description="The project unit (required when the workspace has several)."
    )
    target: str | None = Field(
        default=None, description="For test-targeted: the test to run (e.g. a pytest node id)."
    )


class WorkspaceMapRequest(Contract):
    chars: int | None = Field(
        default=None,
        description="Character budget of the map: 200 to 160000 (default 16000).",
    )
    query: str | None = Field(
        default=None,
        description="Rank for this task: symbol names, paths or a few words (at most 1000 "
        "characters).",
    )
    focus: list[str] = Field(
        default_factory=list,
        description="Files or folders to rank up, relative to the workspace root (at most 64).",
    )


class RetrieveRequest(Contract):
    query: str = Field(
        description="A symbol name (parse_args), a path or a few words (at most 1000 characters)."
    )
    limit: int | None = Field(default=None, description="Hits to return: 1 to 100 (default 10).")


class _Freshness(Contract):
    refreshed: bool = Field(
        description="True when the index was brought up to date just before this answer."
    )
    index_note: str = Field(description="How the index was, or why it was not, brought up to date.")


class WorkspaceMapResult(MapShown, _Freshness):
    """ax-map's map, and whether the index behind it was refreshed first."""


class RetrieveResult(Retrieved, _Freshness):
    """ax-map's ranked hits, and whether the index behind them was refreshed first."""
