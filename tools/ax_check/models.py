"""The JSON contracts of ax-check: a check's result, the detect report, the recipe table."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from libcommon.contracts import Contract

Kind = Literal["build", "test", "test-targeted", "typecheck", "lint", "format", "static-analysis"]
KINDS: tuple[Kind, ...] = (
    "build",
    "test",
    "test-targeted",
    "typecheck",
    "lint",
    "format",
    "static-analysis",
)
Verdict = Literal["passed", "failed", "error", "unsupported"]
Reason = Literal[
    "no-recipe", "precondition", "precondition-curable", "toolchain-unavailable", "bad-request"
]
Termination = Literal["exited", "timeout", "aborted", "spawn-error"]
Ecosystem = Literal["python", "node", "rust", "go", "cmake"]


class RecipeRef(Contract):
    """The resolved recipe: its id (``<row>@<unit>``) and the exact command line it runs."""

    id: str
    command: str


class OutputExcerpt(Contract):
    """The first and last bytes of the combined output, in arrival order."""

    head: str
    tail: str
    bytes: int
    truncated: bool
    # The whole combined output (up to ax-exec's spill cap), kept only with --session.
    spill_path: str | None = None


class Summary(Contract):
    """Counts a parser read from the output; None where the tool did not say.

    ``tool`` names the tool the counts come from: the test runner that reported
    counts, else the tool the command runs itself, else the first tool whose
    findings were read, else ``unknown``. ``tools`` lists every tool recognised,
    from the command and from the output, in the order they were seen.
    """

    tool: str
    passed: int | None = None
    failed: int | None = None
    skipped: int | None = None
    errors: int | None = None
    findings: int | None = None
    # Expected failures that failed (pytest xfail, vitest test.fails) and ones that passed.
    xfailed: int | None = None
    xpassed: int | None = None
    tools: list[str] = Field(default_factory=list)


class Signal(Contract):
    """A durable, named fact read from the output, e.g. ``test-failed`` with the test id."""

    name: str
    detail: str


class Finding(Contract):
    path: str
    line: int | None = None
    column: int | None = None
    code: str | None = None
    message: str


class CheckResult(Contract):
    kind: Kind
    project: str | None
    verdict: Verdict
    reason: Reason | None = None
    message: str | None = None
    cure: str | None = None
    recipe: RecipeRef | None = None
    replay_key: str | None = None
    exit_code: int | None = None
    termination: Termination | None = None
    duration_ms: int | None = None
    scope: str | list[str] | None = None
    summary: Summary | None = None
    signals: list[Signal] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    output: OutputExcerpt | None = None


class KindResolution(Contract):
    kind: Kind
    status: Literal["ready", "unsupported"]
    recipe: RecipeRef | None = None
    # None for test-targeted, whose command depends on the target.
    replay_key: str | None = None
    reason: Reason | None = None
    message: str | None = None
    cure: str | None = None


class UnitReport(Contract):
    id: str
    path: str
    manifests: list[str]
    ecosystems: list[Ecosystem]
    kinds: list[KindResolution]


class ToolchainReport(Contract):
    name: str
    path: str | None


class DetectReport(Contract):
    workspace: str
    units: list[UnitReport]
    toolchains: list[ToolchainReport]
    notes: list[str]


class RecipeRow(Contract):
    """One row of the recipe table, described for people and programs."""

    id: str
    kind: Kind
    ecosystem: Ecosystem
    applies: str
    precondition: str
    command: str
