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
# What a plan's gate may name: the command kinds, and `browser` (a flow's verdict, never an
# exit status: ax-check's browser verb and ax-agent's browser_flow run it, not a recipe).
BROWSER_KIND = "browser"
GATE_KINDS: tuple[str, ...] = (*KINDS, BROWSER_KIND)
# `modified`: the command exited 0 but changed the sources it was checking (never a pass).
Verdict = Literal["passed", "failed", "error", "unsupported", "modified"]
Reason = Literal[
    "no-recipe", "precondition", "precondition-curable", "toolchain-unavailable", "bad-request"
]
Termination = Literal["exited", "timeout", "aborted", "spawn-error"]
Ecosystem = Literal["python", "node", "rust", "go", "cmake"]


class RecipeRef(Contract):
    """The resolved recipe: its id (``<row>@<unit>``) and the exact command line it runs."""

    id: str = Field(
        description="The recipe table's row id qualified by the unit, e.g. 'python.pytest@.' "
        "or 'node.script-test@packages/web'."
    )
    command: str = Field(
        description="The exact command line, shell-quoted, run in the unit's folder "
        "(in detect, test-targeted shows '<target>' where the targets go)."
    )


class OutputExcerpt(Contract):
    """The first and last bytes of the combined output, in arrival order."""

    head: str = Field(
        description="The first 4 KiB of the command's stdout and stderr together, in arrival "
        "order, decoded as UTF-8 (invalid bytes replaced) and redacted."
    )
    tail: str = Field(
        description="Up to the last 12 KiB that came after the head, starting on a line "
        "boundary when output was left out between them; empty when the head holds it all."
    )
    bytes: int = Field(description="Bytes the command wrote in all (both streams).")
    truncated: bool = Field(
        description="True when bytes between head and tail were left out of the excerpt."
    )
    spill_path: str | None = Field(
        default=None,
        description="Absolute path of a file holding the whole combined output, redacted "
        "(up to ax-exec's spill cap); only with a session and when a stream passed ax-exec's "
        "64 KiB capture, else null.",
    )


class Summary(Contract):
    """Counts a parser read from the output, summed over every report in it; None where the
    tool did not say.

    ``tool`` names the tool the counts come from: the test runner that reported
    counts, else the tool the command runs itself, else the first tool whose
    findings were read, else ``unknown``. ``tools`` lists every tool recognised,
    from the command and from the output, in the order they were seen.
    """

    tool: str = Field(
        description="The tool the counts come from: the test runner that reported counts, "
        "else the tool the command runs itself (mypy, clippy, tsc, ...), else the first tool "
        "whose findings were read, else 'unknown'; never a task runner (make, tox, npm, ...)."
    )
    passed: int | None = Field(
        default=None, description="Tests that passed; null if the runner did not say."
    )
    failed: int | None = Field(
        default=None, description="Tests that failed; null if the runner did not say."
    )
    skipped: int | None = Field(
        default=None,
        description="Tests skipped (cargo's ignored tests and todo tests count here); null if "
        "the runner did not say.",
    )
    errors: int | None = Field(
        default=None,
        description="pytest errors, or vitest's failed suites and unhandled errors; null if "
        "the runner did not say.",
    )
    findings: int | None = Field(
        default=None,
        description="Findings read (all of them, also beyond those listed); 0 when a checker "
        "said it found none; null when none was read and no checker said so.",
    )
    xfailed: int | None = Field(
        default=None,
        description="Expected failures that failed (pytest xfail, vitest test.fails), not "
        "counted as skipped; null if the runner did not say.",
    )
    xpassed: int | None = Field(
        default=None,
        description="Expected failures that passed; null if the runner did not say.",
    )
    tools: list[str] = Field(
        default_factory=list,
        description="Every tool recognised, from the command line and the output, in the "
        "order seen.",
    )


class Signal(Contract):
    """A durable, named fact read from the output, e.g. ``test-failed`` with the test id."""

    name: str = Field(
        description="What happened: test-failed, test-error, package-failed, "
        "no-tests-collected, compile-error, lint, type-error, network-error, "
        "dependency-unavailable, source-changed or unclassified."
    )
    detail: str = Field(
        description="What it is about (a test id, a Go package, 'path:line: code', "
        "'modified: path', the line read), redacted, at most 300 characters."
    )


class Finding(Contract):
    """One diagnostic a linter, type checker, formatter or compiler printed."""

    path: str = Field(
        description="The file, relative to the workspace; absolute when it lies outside it "
        "(a registry crate, a system header)."
    )
    line: int | None = Field(
        default=None, description="The line number as printed; null when the tool gave none."
    )
    column: int | None = Field(
        default=None, description="The column as printed; null when the tool gave none."
    )
    code: str | None = Field(
        default=None,
        description="The rule or error code (ruff/flake8 rule, mypy error code, pyright rule, "
        "tsc TS..., rustc E..., a rustc or clippy lint name); null when none was printed.",
    )
    message: str = Field(description="The diagnostic's text, redacted, at most 300 characters.")


class EnvironmentRef(Contract):
    """The Python environment a unit's commands ran with."""

    source: Literal["project", "active", "ax-check"] = Field(
        description="Where it came from. project: the unit's (or the workspace root's) .venv "
        "or venv; active: the virtualenv VIRTUAL_ENV names; ax-check: the interpreter "
        "ax-check runs under (no project environment)."
    )
    path: str | None = Field(
        description="The virtualenv's folder; null when the interpreter is not a virtualenv's."
    )
    python: str = Field(
        description="The interpreter the guessed Python recipes run, as their command line "
        "names it: relative to the unit for a project venv (./.venv/bin/python), else as "
        "found (VIRTUAL_ENV's bin/python, or ax-check's own sys.executable)."
    )
    on_path: bool = Field(
        description="True when the venv's bin folder goes first on the PATH of every command "
        "of the unit, with VIRTUAL_ENV set to it; false for ax-check's own interpreter unless "
        "the project is installed in its venv."
    )


class TreeChange(Contract):
    """One source file the command changed."""

    path: str = Field(description="The file, relative to the unit's folder.")
    change: Literal["modified", "deleted"] = Field(
        description="modified: its content, type or mode differs (a file beyond the hashing "
        "budget: its size, times or inode moved); deleted: it is gone."
    )


class TreeCheck(Contract):
    """Whether the command changed the unit's sources, which a check must leave as they were."""

    method: Literal["git", "walk"] = Field(
        description="How the sources were listed. git: the files git tracks under the unit "
        "plus untracked ones it does not ignore; walk: every file under the unit (no git, or "
        "git listed nothing). Build-output and cache folders are left out of both."
    )
    files: int = Field(description="Source files watched.")
    complete: bool = Field(
        description="False when a cap left some sources unwatched (at most 20,000 files are "
        "watched; git's listing and the walk are bounded too)."
    )
    changed: list[TreeChange] = Field(
        default_factory=list,
        description="The watched sources the run modified or deleted (files it created are "
        "not changes), at most 50.",
    )
    changed_total: int = Field(
        default=0, description="All changed sources, of which 'changed' lists at most 50."
    )
    outputs: list[str] = Field(
        default_factory=list,
        description="Unit-relative folders the recipe writes by design (tsc --build's "
        "outDirs): their untracked files are build output, not sources, and are not watched.",
    )


class CheckResult(Contract):
    """One check: what ran, its verdict, and what was read from its output."""

    kind: Kind = Field(description="The kind of check asked for.")
    project: str | None = Field(
        description="The unit that ran: its workspace-relative path ('.' for the root); null "
        "only when the request was refused (reason bad-request)."
    )
    verdict: Verdict = Field(
        description="passed: exit status 0 and the sources left as they were; failed: a "
        "non-zero exit status, or death by a signal; modified: exit status 0 but the sources "
        "changed (never a pass); error: timeout, abort or the command could not start; "
        "unsupported: nothing ran, or the command could not find a program it runs ('reason' "
        "says which)."
    )
    reason: Reason | None = Field(
        default=None,
        description="Why the verdict is unsupported. no-recipe: this project has no such "
        "check; precondition: the host or a broken manifest cannot support it; "
        "precondition-curable: not installed yet ('cure' says how); toolchain-unavailable: a "
        "program is not on PATH; bad-request: the request was refused. Null otherwise.",
    )
    message: str | None = Field(
        default=None,
        description="Why it is unsupported, or how the command ended (its exit status, the "
        "signal that killed it, a timeout, an abort, why it could not start) and which "
        "sources it changed; null for a clean pass.",
    )
    cure: str | None = Field(
        default=None,
        description="What a person can run or do so the check can run; null when none is known.",
    )
    recipe: RecipeRef | None = Field(
        default=None, description="The recipe that ran; null when nothing ran."
    )
    replay_key: str | None = Field(
        default=None,
        description="sha256 hex of the recipe id, the command line, the text deciding what it "
        "does (a script, a task file) and the unit's files that chose the recipe: what "
        "consent to run this command binds to; null when nothing ran.",
    )
    exit_code: int | None = Field(
        default=None,
        description="The command's exit status; null when it did not exit by itself "
        "(timeout, abort, a signal, could not start) or nothing ran.",
    )
    termination: Termination | None = Field(
        default=None,
        description="How the command ended. exited: by itself; timeout: its process tree "
        "was killed at the timeout; aborted: killed on request (Ctrl-C); spawn-error: it "
        "could not start. Null when nothing ran.",
    )
    duration_ms: int | None = Field(
        default=None,
        description="Wall-clock time of the command in milliseconds; null when nothing ran.",
    )
    scope: str | list[str] | None = Field(
        default=None,
        description="What the check speaks for: the unit id, or for test-targeted the "
        "workspace-relative targets; null only when the request was refused.",
    )
    summary: Summary | None = Field(
        default=None,
        description="Counts read from the output; null when no tool was recognised and "
        "nothing was counted, or nothing ran.",
    )
    signals: list[Signal] = Field(
        default_factory=list,
        description="Named facts read from the output and the tree check, at most 50.",
    )
    findings: list[Finding] = Field(
        default_factory=list,
        description="Diagnostics read from the output, at most 100 ('summary.findings' "
        "counts them all).",
    )
    output: OutputExcerpt | None = Field(
        default=None, description="An excerpt of the command's output; null when nothing ran."
    )
    environment: EnvironmentRef | None = Field(
        default=None,
        description="The Python environment the unit's commands ran with; null for a unit "
        "without a Python manifest, and when the request was refused.",
    )
    tree: TreeCheck | None = Field(
        default=None,
        description="Whether the command changed the unit's sources; null when nothing ran.",
    )
    workspace: str | None = Field(
        default=None,
        description="The absolute path of the workspace the unit id is relative to; null "
        "only when the request was refused.",
    )
    selection: str | None = Field(
        default=None,
        description="Which unit ran and why, and how the workspace was found when it was not "
        "named; null only when the request was refused.",
    )
    would_run: RecipeRef | None = Field(
        default=None,
        description="For an unsupported kind whose recipe is known: what it runs once the "
        "cure is applied (nothing was resolved to run); null otherwise.",
    )


class KindResolution(Contract):
    """What one kind resolves to in a unit, without running it."""

    kind: Kind = Field(description="The kind of check.")
    status: Literal["ready", "unsupported"] = Field(
        description="ready: 'recipe' would run now; unsupported: 'reason', 'message' and "
        "'cure' say why not."
    )
    recipe: RecipeRef | None = Field(
        default=None, description="The recipe that would run; null when unsupported."
    )
    replay_key: str | None = Field(
        default=None,
        description="The replay key a run would carry (what consent binds to); null when "
        "unsupported and for test-targeted, whose command depends on the target.",
    )
    reason: Reason | None = Field(
        default=None,
        description="Why it cannot run (no-recipe, precondition, precondition-curable, "
        "toolchain-unavailable); null when ready.",
    )
    message: str | None = Field(
        default=None, description="Why it cannot run, in words; null when ready."
    )
    cure: str | None = Field(
        default=None,
        description="What a person can run or do so it can run; null when ready or none is known.",
    )
    would_run: RecipeRef | None = Field(
        default=None,
        description="Unsupported, but a recipe was chosen: what it runs once the precondition "
        "holds; null otherwise.",
    )


class UnitReport(Contract):
    """One project unit: a folder holding a manifest (the bare root when none does)."""

    id: str = Field(description="The unit's workspace-relative path ('.' for the root).")
    path: str = Field(description="The unit's folder, absolute.")
    manifests: list[str] = Field(
        description="The manifest files in its folder (pyproject.toml, setup.cfg, setup.py, "
        "package.json, Cargo.toml, go.mod, CMakeLists.txt), in that order."
    )
    ecosystems: list[Ecosystem] = Field(
        description="The ecosystems its manifests belong to, in manifest order."
    )
    kinds: list[KindResolution] = Field(
        description="What each kind of check resolves to here, one entry per kind."
    )
    environment: EnvironmentRef | None = Field(
        default=None,
        description="The Python environment its commands run with; null without a Python manifest.",
    )
    satellite: str | None = Field(
        default=None,
        description="Why the unit does not compete for the default (a tool's folder such as a "
        "cargo-fuzz crate or a docs site, or one the root's manifest leaves out); it can "
        "still be named with --project. Null for a unit that competes.",
    )
    members: list[str] = Field(
        default_factory=list,
        description="The ids of the member units its manifest declares (those found); naming it "
        "runs the whole workspace.",
    )
    unused: list[str] = Field(
        default_factory=list,
        description="The project's own tasks that were seen and not used, each with why (at "
        "most 40 lines, then how many more).",
    )


class ToolchainReport(Contract):
    """A program looked up on the PATH a unit's command gets (ax-check's own venv left out)."""

    name: str = Field(description="The program's name.")
    path: str | None = Field(description="Where it was found on that PATH; null when absent.")


class DetectReport(Contract):
    """The workspace's units and what each kind of check resolves to; nothing is run."""

    workspace: str = Field(
        description="The workspace's absolute path; unit ids are relative to it."
    )
    units: list[UnitReport] = Field(
        description="The units found: the root first, then by id (at most 256)."
    )
    toolchains: list[ToolchainReport] = Field(
        description="A fixed list of programs and where each was found (finding one is not "
        "a health check)."
    )
    notes: list[str] = Field(
        description="What discovery could not read or interpret, and what it left out: "
        "manifests that do not parse, member patterns not interpreted, folders resolving "
        "outside the workspace, units beyond the 256 listed."
    )
    located: str | None = Field(
        default=None,
        description="How the workspace was found: named with -C, or walking up from the "
        "current directory (and where the walk stops).",
    )
    default_unit: str | None = Field(
        default=None,
        description="The unit a call without --project runs; null when one must be named.",
    )
    selection: str | None = Field(
        default=None,
        description="Why that unit is the default, or why none can be chosen (with a hint).",
    )


class RecipeRow(Contract):
    """One row of the recipe table, described for people and programs."""

    id: str = Field(description="The row's id (a result's recipe id adds '@<unit>').")
    kind: Kind = Field(description="The kind of check the row answers.")
    ecosystem: Ecosystem = Field(description="The ecosystem whose manifests the row reads.")
    applies: str = Field(description="When the row applies, in words.")
    precondition: str = Field(description="What the row needs before it can run, in words.")
    command: str = Field(
        description="The command the row builds; 'none: ...' with why for a hole row."
    )


SetupIntent = Literal["install", "migrate", "seed"]
# Not a check's verdict: a setup never says "passed", so no reader can take it for one.
SetupVerdict = Literal["succeeded", "failed", "error", "unsupported"]


class SetupResult(Contract):
    """One project-setup run (install, migrate, seed): what ran and how it ended."""

    intent: SetupIntent = Field(description="install, migrate or seed.")
    project: str | None = Field(
        description="The unit it ran in ('.' for the root); null when the request was refused."
    )
    verdict: SetupVerdict = Field(
        description="succeeded: exit status 0; failed: a non-zero exit status or a signal; "
        "error: timeout, abort or the command could not start; unsupported: nothing ran "
        "('reason' says why). Never 'passed': a setup is not a check and satisfies no gate."
    )
    reason: Reason | None = Field(default=None, description="Why nothing ran; null otherwise.")
    message: str | None = Field(default=None, description="Why, or how the command ended.")
    cure: str | None = Field(default=None, description="How to make it possible, when known.")
    recipe: RecipeRef | None = Field(
        default=None, description="The setup row ('setup.npm-ci@.') and the exact command line."
    )
    replay_key: str | None = Field(
        default=None,
        description="sha256 of the row, the command, the script text and every covered file: "
        "what an install's session consent binds to.",
    )
    files: list[str] = Field(
        default_factory=list,
        description="The workspace-relative files the replay key covers (lockfile, manifest, "
        "package-manager configuration).",
    )
    exit_code: int | None = Field(default=None, description="The command's exit status.")
    termination: Termination | None = Field(default=None, description="How the command ended.")
    duration_ms: int | None = Field(default=None, description="Wall-clock milliseconds.")
    output: OutputExcerpt | None = Field(default=None, description="The output's ends.")
    workspace: str | None = Field(default=None, description="The workspace the unit is in.")
    selection: str | None = Field(default=None, description="Which unit ran and why.")
    would_run: RecipeRef | None = Field(
        default=None, description="For a blocked row: what would run once cured."
    )


class SetupPlan(Contract):
    """What a setup would run, resolved and spawning nothing (``ax-check setup --dry-run``)."""

    intent: SetupIntent = Field(description="install, migrate or seed.")
    project: str = Field(description="The unit it would run in.")
    recipe: RecipeRef | None = Field(
        default=None, description="The row and the command line; null when it cannot run."
    )
    replay_key: str | None = Field(default=None, description="What consent binds to.")
    files: list[str] = Field(default_factory=list, description="The files the key covers.")
    reason: Reason | None = Field(default=None, description="Why it cannot run.")
    message: str | None = Field(default=None, description="Why it cannot run, in words.")
    cure: str | None = Field(default=None, description="How to make it possible.")
