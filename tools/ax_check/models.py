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
# `modified`: the command exited 0 but changed the sources it was checking (never a pass).
Verdict = Literal["passed", "failed", "error", "unsupported", "modified"]
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


class EnvironmentRef(Contract):
    """The Python environment a unit's commands ran with."""

    # project: the unit's (or workspace root's) .venv/venv; active: VIRTUAL_ENV;
    # ax-check: the interpreter ax-check runs under (no project environment).
    source: Literal["project", "active", "ax-check"]
    # The virtualenv folder (absolute); None when the interpreter is not a venv's.
    path: str | None
    # The interpreter the guessed Python recipes run.
    python: str
    # The venv's bin folder went first on the child's PATH, with VIRTUAL_ENV set.
    on_path: bool


class TreeChange(Contract):
    path: str  # unit-relative
    change: Literal["modified", "deleted"]


class TreeCheck(Contract):
    """Whether the command changed the unit's sources (tree.py says which files count)."""

    method: Literal["git", "walk"]
    # Source files watched; `complete` is false when the cap left some unwatched.
    files: int
    complete: bool
    changed: list[TreeChange] = Field(default_factory=list)
    # All changed files, of which `changed` lists at most tree.MAX_CHANGES_LISTED.
    changed_total: int = 0
    # Unit-relative folders the recipe writes by design (tsc --build's outDirs): their
    # untracked files are build output, not sources, and are not watched.
    outputs: list[str] = Field(default_factory=list)


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
    environment: EnvironmentRef | None = None
    tree: TreeCheck | None = None
    # The workspace the unit id is relative to, and which unit ran and why.
    workspace: str | None = None
    selection: str | None = None
    # An unsupported kind whose recipe is known: what it runs once the cure is applied.
    would_run: RecipeRef | None = None


class KindResolution(Contract):
    kind: Kind
    status: Literal["ready", "unsupported"]
    recipe: RecipeRef | None = None
    # None for test-targeted, whose command depends on the target.
    replay_key: str | None = None
    reason: Reason | None = None
    message: str | None = None
    cure: str | None = None
    # Unsupported, but a recipe was chosen: what it runs once the precondition holds.
    would_run: RecipeRef | None = None


class UnitReport(Contract):
    id: str
    path: str
    manifests: list[str]
    ecosystems: list[Ecosystem]
    kinds: list[KindResolution]
    environment: EnvironmentRef | None = None
    # Why the unit does not compete for the default (it can still be named with --project).
    satellite: str | None = None
    # The member units its manifest declares; naming it runs the whole workspace.
    members: list[str] = Field(default_factory=list)
    # The project's own tasks that were seen and not used, each with why.
    unused: list[str] = Field(default_factory=list)


class ToolchainReport(Contract):
    name: str
    path: str | None


class DetectReport(Contract):
    workspace: str
    units: list[UnitReport]
    toolchains: list[ToolchainReport]
    notes: list[str]
    # How the workspace was found (named with -C, or walking up from the current directory).
    located: str | None = None
    # The unit a call without --project runs, and why; None (with why) when it must be named.
    default_unit: str | None = None
    selection: str | None = None


class RecipeRow(Contract):
    """One row of the recipe table, described for people and programs."""

    id: str
    kind: Kind
    ecosystem: Ecosystem
    applies: str
    precondition: str
    command: str
