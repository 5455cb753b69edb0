"""Request contracts of ax-mcp's own tools (the slate tools reuse ax-slate's)."""

from __future__ import annotations

from pydantic import Field

from ax_check import Kind
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
