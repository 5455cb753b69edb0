"""The research pack's own failure vocabulary: every refusal and failure names its kind."""

from __future__ import annotations

from typing import Literal

ResearchFailure = Literal[
    # Not set up: no usable research host, or its key variable is unset.
    "not-configured",
    "no-key",
    # The shared allowance would be overshot: the call is refused whole, before the wire.
    "budget",
    # A query, URL or claim the pack will not take as written.
    "query-refused",
    "url-refused",
    "claim-refused",
    # The provider: answered with an error status, could not be reached, took too long,
    # or answered with something that is not its format.
    "provider-status",
    "provider-unreachable",
    "provider-timeout",
    "provider-malformed",
]


class ResearchError(Exception):
    """A research call refused or failed; ``kind`` says which, ``message`` what to change."""

    def __init__(self, kind: ResearchFailure, message: str) -> None:
        super().__init__(message)
        self.kind: ResearchFailure = kind
        self.message = message

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"
