"""Running one check: select the unit, resolve the recipe, run it, judge it, record it.

The verdict is the exit status of the command ax-exec ran: ``exited`` with 0
passed, ``exited`` with anything else failed, and every other termination
(timeout, abort, a command that could not start) is an error. Nothing a parser
reads can turn a failure into a pass. "This project cannot" is ``unsupported``
with a typed reason, never ``passed``. Two readings refine that, and neither
can make a pass: a command that exited 0 but changed the sources it was
checking is ``modified`` (tree.py), and one whose failure is a program it
could not find is ``unsupported`` with the missing program and its cure
(missing.py), never ``failed``.

Every command of a unit runs with the unit's environment (toolchains.py's
``child_env``): a project virtualenv first on PATH with ``VIRTUAL_ENV`` set,
and ax-check's own virtualenv never on it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ax_check.facts import UnitFacts, gather_facts
from ax_check.missing import classify
from ax_check.models import (
    KINDS,
    CheckResult,
    Kind,
    OutputExcerpt,
    RecipeRef,
    SetupResult,
    TreeCheck,
    Verdict,
)
from ax_check.parsers import MAX_DETAIL_CHARS, Enrichment, OutputWatcher, Places
from ax_check.recipes import Blocker, Resolved, resolve
from ax_check.toolchains import Toolchains, environment_ref
from ax_check.tree import compare_tree, take_snapshot
from ax_check.units import (
    Discovery,
    Unit,
    UnitRefused,
    choose_unit,
    discover_units,
    explain,
    locate,
)
from ax_exec import AbortHook, ExecOutcome, ExecSpec, SandboxProfile, run_managed
from libcommon.errors import AxError, OperationFailed, UsageError
from libcommon.missing import MissingScanner
from libcommon.paths import StateLayout, check_session_id, state_layout
from libcommon.projectenv import ChildEnv

DEFAULT_TIMEOUT_S = 1800.0
MAX_TIMEOUT_S = 24 * 3600.0
MAX_TARGETS = 64
MAX_TARGET_CHARS = 1024
# ax-exec keeps this much of each stream; the excerpt and the parsers see everything.
EXEC_OUTPUT_BYTES = 64 * 1024
PYTEST_NO_TESTS_EXIT = 5
# Changed files named in a `modified` result's message (all are in `tree.changed`).
TREE_CHANGES_IN_MESSAGE = 5
SANDBOX_PROFILES: tuple[SandboxProfile, ...] = ("none", "read-only", "workspace-write")


class EvidenceNotRecorded(OperationFailed):
    """The check ran but its check.completed event could not be appended."""

    def __init__(self, result: CheckResult | SetupResult, problem: AxError) -> None:
        super().__init__(
            f"the check finished ({result.verdict}) but its evidence was not recorded: "
            f"{problem.message}",
            hint=problem.hint,
        )
        self.result = result


class BadRequest(UsageError):
    """A caller mistake: refused before anything runs, and never recorded as evidence."""


@dataclass(frozen=True)
class CheckRequest:
    kind: str
    workspace: str | os.PathLike[str] | None = None
    project: str | None = None
    targets: tuple[str, ...] = ()
    session: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    # The sandbox the check's command runs in (ax-agent passes the profile its
    # policy decision named); a profile that cannot be enforced is a spawn error.
    sandbox: SandboxProfile = "none"


@dataclass(frozen=True)
class Hooks:
    """What the caller wants to hear while a check runs (all optional)."""

    # Polled while the command runs; true kills the tree (the verdict is then error).
    abort: AbortHook | None = None
    # Called with the resolved recipe just before the spawn.
    on_start: Callable[[Resolved], None] | None = None
    # The environment the command and the PATH probes see (default: this process's).
    environ: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Prepared:
    request: CheckRequest
    kind: Kind
    unit: Unit
    layout: StateLayout | None
    resolution: Resolved | Blocker
    scope: str | list[str]
    facts: UnitFacts
    workspace: Path
    # Which unit runs and why (and how the workspace was found when it was not named).
    selection: str

    @property
    def child(self) -> ChildEnv:
        assert self.facts.child is not None
        return self.facts.child


def select_unit(discovery: Discovery, project: str | None) -> Unit:
    """The unit a call means; competing units and no --project is refused, never guessed."""
    try:
        return choose_unit(discovery, None, project).unit
    except UnitRefused as exc:
        raise BadRequest(exc.message, hint=exc.hint) from None


def validate(request: CheckRequest) -> Kind:
    kind = next((known for known in KINDS if known == request.kind), None)
    if kind is None:
        raise BadRequest(f"unknown kind {request.kind!r}", hint=f"kinds: {', '.join(KINDS)}")
    if kind == "test-targeted" and not request.targets:
        raise BadRequest(
            "test-targeted needs at least one --target",
            hint="e.g. --target tests/test_x.py::test_one",
        )
    if kind != "test-targeted" and request.targets:
        raise BadRequest(f"--target applies only to test-targeted, not {kind}")
    if len(request.targets) > MAX_TARGETS:
        raise BadRequest(f"at most {MAX_TARGETS} targets, not {len(request.targets)}")
    for target in request.targets:
        if not target or len(target) > MAX_TARGET_CHARS:
            raise BadRequest(f"a target must be 1-{MAX_TARGET_CHARS} characters")
        if target.startswith("-"):
            raise BadRequest(f"target {target!r} starts with '-' and would be read as an option")
        if any(ord(char) < 32 or ord(char) == 127 for char in target):
            raise BadRequest(f"target {target!r} holds a control character")
    if request.sandbox not in SANDBOX_PROFILES:
        raise BadRequest(
            f"unknown sandbox profile {request.sandbox!r}",
            hint=f"profiles: {', '.join(SANDBOX_PROFILES)}",
        )
    if not 0 < request.timeout_s <= MAX_TIMEOUT_S:
        raise BadRequest(f"--timeout must be in (0, {MAX_TIMEOUT_S:g}] seconds")
    if request.session is not None:
        try:
            check_session_id(request.session)
        except UsageError as exc:
            raise BadRequest(exc.message, exc.hint) from None
    return kind


def _scope(kind: Kind, unit: Unit, targets: tuple[str, ...]) -> str | list[str]:
    """The part of the workspace the check speaks for, workspace-relative."""
    if kind != "test-targeted":
        return unit.id
    prefix = "" if unit.id == "." else f"{unit.id}/"
    return [f"{prefix}{target}" for target in targets]


def _unsupported(
    kind: Kind, unit: Unit, blocker: Blocker, scope: str | list[str], facts: UnitFacts
) -> CheckResult:
    planned = blocker.command
    return CheckResult(
        kind=kind,
        project=unit.id,
        verdict="unsupported",
        reason=blocker.reason,
        message=blocker.message,
        cure=blocker.cure,
        scope=scope,
        environment=environment_ref(facts.python),
        would_run=None
        if planned is None or blocker.recipe_id is None
        else RecipeRef(id=blocker.recipe_id, command=planned.display),
    )


def judge(outcome: ExecOutcome, tree: TreeCheck | None = None) -> Verdict:
    if outcome.termination != "exited":
        return "error"
    if outcome.exit_code != 0:
        return "failed"
    return "modified" if tree is not None and tree.changed_total else "passed"


def _message(outcome: ExecOutcome) -> str | None:
    if outcome.termination == "timeout":
        return f"timed out after {outcome.duration_ms / 1000:.1f}s; the process tree was killed"
    if outcome.termination == "aborted":
        return "aborted; the process tree was killed"
    if outcome.termination == "spawn-error":
        return f"the command could not start: {outcome.error}"
    if outcome.exit_code not in (0, None):
        return f"exited with status {outcome.exit_code}"
    if outcome.signal is not None:
        return f"killed by signal {outcome.signal} before it exited (no exit status)"
    return None


def _record(
    layout: StateLayout | None, session: str | None, events: list[dict[str, object]]
) -> None:
    if layout is None or session is None:
        return
    from ax_log import append_events

    append_events(layout, session, events)


def _startable(program: str, cwd: Path, path: str) -> bool:
    """Stat-only: is ``program`` an executable file (by path, or on ``path``)?"""
    if os.sep in program:
        candidate = cwd / program
        return candidate.is_file() and os.access(candidate, os.X_OK)
    return shutil.which(program, path=path) is not None


def _event(
    kind: Kind, unit: Unit, scope: str | list[str], recipe_id: str | None
) -> dict[str, object]:
    return {"kind": kind, "project": unit.id, "scope": scope, "recipeId": recipe_id}


def completed_event(result: CheckResult, recipe_id: str | None) -> dict[str, object]:
    assert result.project is not None and result.scope is not None
    signals = [signal.to_json() for signal in result.signals]
    if result.reason == "toolchain-unavailable" and result.message:
        # The event carries no message, and a waiver's caveat must name what is missing.
        signals.append(
            {"name": "toolchain-unavailable", "detail": result.message[:MAX_DETAIL_CHARS]}
        )
    return {
        "type": "check.completed",
        "kind": result.kind,
        "project": result.project,
        "scope": result.scope,
        "recipeId": recipe_id,
        "verdict": result.verdict,
        "exitCode": result.exit_code,
        "termination": result.termination,
        "reason": result.reason,
        "replayKey": result.replay_key,
        "signals": signals,
    }


def prepare(request: CheckRequest, environ: Mapping[str, str] | None = None) -> Prepared:
    """Everything up to the spawn: refuses a bad request before anything is written."""
    kind = validate(request)
    location = locate(request.workspace, None, environ)
    workspace = location.workspace
    layout = state_layout(workspace, environ) if request.session is not None else None
    discovery = discover_units(workspace)
    try:
        choice = choose_unit(discovery, location, request.project)
    except UnitRefused as exc:
        raise BadRequest(exc.message, hint=exc.hint) from None
    unit = choice.unit
    facts = gather_facts(workspace, unit, Toolchains.from_environ(environ))
    try:
        resolution = resolve(facts, kind, request.targets)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if isinstance(resolution, Blocker) and resolution.cure is None and choice.cure is not None:
        resolution = replace(resolution, cure=choice.cure)
    return Prepared(
        request,
        kind,
        unit,
        layout,
        resolution,
        _scope(kind, unit, request.targets),
        facts,
        workspace,
        explain(location, choice),
    )


def execute(prepared: Prepared, hooks: Hooks | None = None) -> CheckResult:
    """Run a prepared check (or record why it cannot run) and return its result."""
    hooks = hooks or Hooks()
    kind, unit, scope, resolution = (
        prepared.kind,
        prepared.unit,
        prepared.scope,
        prepared.resolution,
    )
    session = prepared.request.session
    located = {"workspace": str(prepared.workspace), "selection": prepared.selection}
    if isinstance(resolution, Blocker):
        result = _unsupported(kind, unit, resolution, scope, prepared.facts).model_copy(
            update=located
        )
        try:
            _record(prepared.layout, session, [completed_event(result, resolution.recipe_id)])
        except AxError as exc:
            raise EvidenceNotRecorded(result, exc) from exc
        return result
    spec = ExecSpec(
        argv=list(resolution.command.argv),
        cwd=str(unit.path),
        timeout_s=prepared.request.timeout_s,
        sandbox=prepared.request.sandbox,
        # workspace-write may change the whole workspace, not only this unit.
        workspace=str(prepared.workspace),
        max_output_bytes=EXEC_OUTPUT_BYTES,
        spill_dir=str(prepared.layout.objects_dir) if prepared.layout is not None else None,
        env=prepared.child.set,
        env_deny_patterns=list(prepared.child.unset),
    )
    scanner = MissingScanner()
    places = Places(workspace=prepared.workspace, unit=unit.path)
    watcher = OutputWatcher(
        Enrichment(kind, resolution.command.argv, places), listeners=[scanner.line]
    )
    snapshot = take_snapshot(unit.path, hooks.environ, resolution.command.outputs)
    # ax-exec has no spawn callback, so check.started is appended just before the spawn,
    # and only when the program can be found: one that cannot start gets no started event.
    if _startable(resolution.command.argv[0], unit.path, prepared.child.path):
        _record(
            prepared.layout,
            session,
            [{"type": "check.started", **_event(kind, unit, scope, resolution.recipe_id)}],
        )
    if hooks.on_start is not None:
        hooks.on_start(resolution)
    outcome = run_managed(spec, abort=hooks.abort, on_output=watcher.feed, environ=hooks.environ)
    watcher.finish()
    scanner.finish()
    tree = compare_tree(snapshot)
    result = build_result(prepared, outcome, watcher, scanner, tree).model_copy(update=located)
    try:
        _record(prepared.layout, session, [completed_event(result, resolution.recipe_id)])
    except AxError as exc:
        raise EvidenceNotRecorded(result, exc) from exc
    return result


def _tree_message(tree: TreeCheck) -> str:
    listed = ", ".join(change.path for change in tree.changed[:TREE_CHANGES_IN_MESSAGE])
    more = tree.changed_total - min(len(tree.changed), TREE_CHANGES_IN_MESSAGE)
    tail = f" and {more} more" if more > 0 else ""
    return (
        f"the command changed {tree.changed_total} source file(s) it was checking: "
        f"{listed}{tail}; a check must leave the sources as they were"
    )


def build_result(
    prepared: Prepared,
    outcome: ExecOutcome,
    watcher: OutputWatcher,
    scanner: MissingScanner,
    tree: TreeCheck,
) -> CheckResult:
    kind, unit, scope, resolution = (
        prepared.kind,
        prepared.unit,
        prepared.scope,
        prepared.resolution,
    )
    assert isinstance(resolution, Resolved)
    enrichment = watcher.enrichment
    if (
        resolution.recipe.id.startswith("python.pytest")
        and outcome.termination == "exited"
        and outcome.exit_code == PYTEST_NO_TESTS_EXIT
    ):
        enrichment.signal("no-tests-collected", "pytest collected no tests")
    for change in tree.changed:
        enrichment.signal("source-changed", f"{change.change}: {change.path}")
    verdict = judge(outcome, tree)
    message = _message(outcome)
    reason = cure = None
    if verdict == "failed" and outcome.exit_code is not None:
        missing = classify(scanner, outcome.exit_code, prepared.facts, resolution.command.display)
        if missing is not None:
            verdict, reason, message, cure = (
                "unsupported",
                missing.reason,
                missing.message,
                missing.cure,
            )
    if tree.changed_total:
        message = f"{message}; {_tree_message(tree)}" if message else _tree_message(tree)
    head, tail = watcher.combined.texts()
    return CheckResult(
        kind=kind,
        project=unit.id,
        verdict=verdict,
        reason=reason,
        message=message,
        cure=cure,
        recipe=RecipeRef(id=resolution.recipe_id, command=resolution.command.display),
        replay_key=resolution.replay_key,
        exit_code=outcome.exit_code,
        termination=outcome.termination,
        duration_ms=outcome.duration_ms,
        scope=scope,
        summary=enrichment.summary(),
        signals=enrichment.signals,
        findings=enrichment.findings,
        output=OutputExcerpt(
            head=head,
            tail=tail,
            bytes=watcher.combined.total,
            truncated=watcher.combined.truncated,
            spill_path=outcome.spill_path,
        ),
        environment=environment_ref(prepared.facts.python),
        tree=tree,
    )


def run_check(request: CheckRequest, hooks: Hooks | None = None) -> CheckResult:
    """Prepare and execute one check; a bad request raises BadRequest (nothing recorded)."""
    return execute(prepare(request, hooks.environ if hooks else None), hooks)
