"""Request contracts of ax-mcp's own tools (the slate and check tools reuse their tools' models)."""

from __future__ import annotations

from pydantic import Field

from libcommon.contracts import Contract


class ReviewCommandRequest(Contract):
    command: str = Field(description="The shell command string to review, exactly as it would run.")


class CheckPathRequest(Contract):
    path: str = Field(description="A path, relative to the workspace or absolute.")
    write: bool = Field(default=False, description="Check it as a write target.")
