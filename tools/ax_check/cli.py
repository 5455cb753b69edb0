"""The ax-check command line: parse, call the core, print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from libcommon import cliapp
from libcommon.cliapp import (
    Environment,
    JsonOption,
    WorkspaceOption,
    entry_point,
    make_app,
    run_main,
)

if TYPE_CHECKING:
    from ax_check.models import CheckResult, DetectReport, EnvironmentRef, SetupResult

app = make_app(
    "ax-check",
    "Typed verification: build/test/lint commands resolved from the project's own manifests.\n\n"
    "Name a KIND (build, test, test-targeted, typecheck, lint, format, static-analysis);\n"
    "ax-check finds the command in the project's own manifests, runs it and reports the verdict.\n"
    "`ax-check browser --flow FILE --origin URL` runs a typed browser flow against a preview.\n"
    "Exit 0 passed, 1 failed or error, 2 bad request, 5 unsupported.",
)

ProjectOption = Annotated[
    str | None,
    typer.Option(
        "--project",
        "-p",
        help="The unit to check, by its workspace-relative path (required when several "
        "compete); a workspace root runs the whole workspace.",
    ),
]
TargetOption = Annotated[
    list[str] | None,
    typer.Option("--target", "-t", help="A test to run (test-targeted only; repeatable)."),
]
SessionOption = Annotated[
    str | None,
    typer.Option("--session", help="Append check.started/check.completed to this ax-log session."),
]
SandboxOption = Annotated[
    str,
    typer.Option(
        "--sandbox", help="Run under this ax-exec profile: none, read-only or workspace-write."
    ),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", help="Seconds before the command's tree is killed (default 1800)."),
]

KIND_HELP = {
    "build": "Build the project (its own build task, cargo build, python -m build, ...).",
    "test": "Run the project's tests.",
    "test-targeted": "Run only the tests named with --target.",
    "typecheck": "Type-check (mypy/pyright, tsc --noEmit, cargo check, ...).",
    "lint": "Lint (ruff/flake8, the lint script, cargo clippy, go vet, ...).",
    "format": "Check formatting without changing files (ruff format --check, cargo fmt --check).",
    "static-analysis": "Static analysis (the project's own task, go vet).",
}
EXIT_OF_VERDICT = {"passed": 0, "failed": 1, "error": 1, "unsupported": 5, "modified": 1}
SIGNALS_SHOWN = 10
TAIL_LINES_SHOWN = 30


def _environment_text(environment: EnvironmentRef) -> str:
    if not environment.on_path:
        return f"environment: none; Python tools run with ax-check's own {environment.python}"
    whose = {"project": "the project's", "active": "the active", "ax-check": "ax-check's own"}
    return (
        f"environment: {whose[environment.source]} virtualenv {environment.path}, first on PATH "
        f"(python {environment.python})"
    )


def _print_result(result: CheckResult, as_json: bool) -> int:
    out = cliapp.chrome
    what = f"{result.kind} {result.verdict}"
    if result.verdict == "unsupported":
        out(f"ax-check: {what} in {result.project} ({result.reason}): {result.message}")
        if result.cure:
            out(f"ax-check: cure: {result.cure}")
        if result.recipe is not None:
            out(f"ax-check: ran {result.recipe.command}  [{result.recipe.id}]")
        if result.would_run is not None:
            out(f"ax-check: once cured, would run {result.would_run.command}")
    else:
        assert result.recipe is not None
        seconds = (result.duration_ms or 0) / 1000
        counts = ""
        if result.summary is not None:
            parts = [
                f"{value} {name}"
                for name, value in result.summary.model_dump(exclude={"tool", "tools"}).items()
                if value is not None
            ]
            counts = f" — {', '.join(parts)} ({result.summary.tool})" if parts else ""
        out(f"ax-check: {what} in {result.project} after {seconds:.1f}s{counts}")
        out(f"ax-check: ran {result.recipe.command}  [{result.recipe.id}]")
        if result.message and result.verdict != "passed":
            out(f"ax-check: {result.message}")
        for signal in result.signals[:SIGNALS_SHOWN]:
            out(f"ax-check:   {signal.name}: {signal.detail}")
        if result.tree is not None and not result.tree.complete:
            out(
                f"ax-check: only {result.tree.files} source files were watched for changes "
                "(the cap); changes to the others were not checked"
            )
        if result.verdict != "passed" and result.output is not None and not as_json:
            # The tail is empty when the head already holds the whole output.
            text = result.output.tail or result.output.head
            lines = text.splitlines()[-TAIL_LINES_SHOWN:]
            if lines:
                out(f"ax-check: last {len(lines)} lines of output:")
                out("\n".join(lines))
    if result.environment is not None:
        out(f"ax-check: {_environment_text(result.environment)}")
    if result.replay_key:
        out(f"ax-check: replay key {result.replay_key}")
    if result.selection:
        out(f"ax-check: unit {result.project}: {result.selection}")
    if as_json:
        cliapp.emit_json(result.to_json())
    return EXIT_OF_VERDICT[result.verdict]


def _run_kind(
    kind: str,
    workspace: Path | None,
    project: str | None,
    targets: list[str] | None,
    session: str | None,
    timeout: float | None,
    as_json: bool,
    sandbox: str = "none",
) -> int:
    from ax_check.check import (
        DEFAULT_TIMEOUT_S,
        BadRequest,
        CheckRequest,
        EvidenceNotRecorded,
        Hooks,
        execute,
        prepare,
    )
    from ax_check.models import CheckResult
    from ax_check.progress import Progress, interrupt_sets

    environment = cliapp.env()
    request = CheckRequest(
        kind=kind,
        workspace=workspace,
        project=project,
        targets=tuple(targets or ()),
        session=session,
        timeout_s=DEFAULT_TIMEOUT_S if timeout is None else timeout,
        sandbox=sandbox,  # type: ignore[arg-type]  # validated by prepare()
    )
    try:
        prepared = prepare(request, environment.environ)
    except BadRequest as exc:
        if as_json:
            refused = CheckResult(
                kind=kind,  # type: ignore[arg-type]
                project=None,
                verdict="unsupported",
                reason="bad-request",
                message=exc.message,
            )
            cliapp.emit_json(refused.to_json())
        raise
    progress = Progress(environment.stderr, enabled=bool(environment.stderr_isatty))
    hooks = Hooks(
        abort=progress,
        on_start=lambda resolved: progress.start(resolved.command.display),
        environ=environment.environ,
    )
    try:
        with interrupt_sets(progress.abort):
            result = execute(prepared, hooks)
    except EvidenceNotRecorded as exc:
        progress.clear()
        assert isinstance(exc.result, CheckResult)
        _print_result(exc.result, as_json)
        raise
    progress.clear()
    return _print_result(result, as_json)


def _register_kind(kind: str) -> None:
    def verb(
        workspace: WorkspaceOption = None,
        project: ProjectOption = None,
        target: TargetOption = None,
        session: SessionOption = None,
        timeout: TimeoutOption = None,
        sandbox: SandboxOption = "none",
        json_output: JsonOption = False,
    ) -> int:
        return _run_kind(kind, workspace, project, target, session, timeout, json_output, sandbox)

    verb.__doc__ = KIND_HELP[kind]
    app.command(kind)(verb)


for _kind in KIND_HELP:
    _register_kind(_kind)


@app.command("browser")
def browser_verb(
    flow: Annotated[
        str, typer.Option("--flow", help="The flow, a JSON file ('-' reads it from stdin).")
    ],
    origin: Annotated[
        str,
        typer.Option(
            "--origin",
            help="The running preview's URL as ax-preview recorded it (a loopback "
            "http(s) URL): the only origin the flow may reach.",
        ),
    ],
    workspace: WorkspaceOption = None,
    project: Annotated[
        str,
        typer.Option(
            "--project",
            "-p",
            help="The unit the preview serves, as ax-preview lists it ('.' for the root): "
            "the unit the evidence is recorded for.",
        ),
    ] = ".",
    session: SessionOption = None,
    json_output: JsonOption = False,
) -> int:
    """Run a typed browser flow in the system Chromium against a running preview.

    The verdict is the flow's: passed, failed (timeout, assertion, navigation, runtime),
    error (protocol: the browser died) or unsupported (no Chromium or Playwright).
    Recorded as kind browser with no exit code: it never marks a file checked.
    Exit 0 passed, 1 failed or error, 2 bad request, 5 unsupported.
    """
    from ax_check.browser import BrowserRequest, parse_flow, run_browser_check
    from libcommon.errors import UsageError

    environment = cliapp.env()
    try:
        text = environment.stdin.read() if flow == "-" else Path(flow).read_text()
        data = json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the flow {flow!r}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"the flow {flow!r} is not JSON: {exc}") from None
    request = BrowserRequest(
        parse_flow(data), origin, workspace=workspace, session=session, project=project
    )
    result = run_browser_check(request, environment.environ)
    out = cliapp.chrome
    if result.verdict == "unsupported":
        out(f"ax-check: browser unsupported ({result.reason}): {result.message}")
        if result.cure:
            out(f"ax-check: cure: {result.cure}")
    else:
        out(
            f"ax-check: browser {result.verdict} on {result.origin} after "
            f"{result.duration_ms / 1000:.1f}s"
        )
        if result.failure is not None:
            failure = result.failure
            out(f"ax-check: {failure.failure_class} at step {failure.step}: {failure.message}")
            if failure.observed is not None and failure.observed.detail:
                out(f"ax-check: observed: {failure.observed.detail}")
        for finding in result.findings[:SIGNALS_SHOWN]:
            out(f"ax-check:   {finding.kind}: {finding.detail}")
        for shot in result.screenshots:
            out(f"ax-check: screenshot of step {shot.step}: object {shot.sha256}")
    if json_output:
        cliapp.emit_json(result.to_json())
    return EXIT_OF_VERDICT[result.verdict]


SETUP_EXIT = {"succeeded": 0, "failed": 1, "error": 1, "unsupported": 5}


def _print_setup(result: SetupResult, as_json: bool) -> int:
    out = cliapp.chrome
    if result.verdict == "unsupported":
        out(f"ax-check: setup {result.intent} unsupported ({result.reason}): {result.message}")
        if result.cure:
            out(f"ax-check: cure: {result.cure}")
        if result.would_run is not None:
            out(f"ax-check: once cured, would run {result.would_run.command}")
    else:
        assert result.recipe is not None
        seconds = (result.duration_ms or 0) / 1000
        out(
            f"ax-check: setup {result.intent} {result.verdict} in {result.project} "
            f"after {seconds:.1f}s"
        )
        out(f"ax-check: ran {result.recipe.command}  [{result.recipe.id}]")
        if result.message:
            out(f"ax-check: {result.message}")
        if result.verdict != "succeeded" and result.output is not None and not as_json:
            text = result.output.tail or result.output.head
            lines = text.splitlines()[-TAIL_LINES_SHOWN:]
            if lines:
                out(f"ax-check: last {len(lines)} lines of output:")
                out("\n".join(lines))
    if result.replay_key:
        out(f"ax-check: replay key {result.replay_key} (covers {', '.join(result.files)})")
    if as_json:
        cliapp.emit_json(result.to_json())
    return SETUP_EXIT[result.verdict]


@app.command("setup")
def setup_verb(
    intent: Annotated[str, typer.Argument(help="install, migrate or seed.")],
    workspace: WorkspaceOption = None,
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            "-p",
            help="The unit to set up, by its workspace-relative path (required when "
            "several compete).",
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", help="Append setup.started/setup.completed to this session."),
    ] = None,
    timeout: TimeoutOption = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print what would run and its replay key; run nothing."),
    ] = False,
    expect_key: Annotated[
        str | None,
        typer.Option("--expect-key", help="Refuse (exit 1) unless the replay key is this one."),
    ] = None,
    json_output: JsonOption = False,
) -> int:
    """Install dependencies from the lockfile, or run the project's own migrate/seed script.

    The command comes from the project: install from its lockfile (or a declared
    packageManager), migrate and seed from a script on a fixed allowlist. Installs
    run the packages' lifecycle scripts, with the network. It is never a check.
    Exit 0 succeeded, 1 failed or error, 2 bad request, 5 unsupported.
    """
    from ax_check.check import BadRequest, EvidenceNotRecorded, Hooks
    from ax_check.models import SetupResult
    from ax_check.progress import Progress, interrupt_sets
    from ax_check.setup import INTENTS, SetupResolved
    from ax_check.setup_run import (
        SETUP_DEFAULT_TIMEOUT_S,
        SetupRequest,
        execute_setup,
        plan_setup,
        prepare_setup,
    )

    environment = cliapp.env()
    request = SetupRequest(
        intent=intent,
        workspace=workspace,
        project=project,
        session=session,
        timeout_s=SETUP_DEFAULT_TIMEOUT_S if timeout is None else timeout,
        expect_key=expect_key,
    )
    if dry_run:
        plan = plan_setup(request, environment.environ)
        if json_output:
            cliapp.emit_json(plan.to_json())
        elif plan.recipe is not None:
            cliapp.chrome(
                f"ax-check: setup {intent} would run {plan.recipe.command}  [{plan.recipe.id}]"
            )
            cliapp.chrome(f"ax-check: replay key {plan.replay_key}")
        else:
            cliapp.chrome(f"ax-check: setup {intent} unsupported ({plan.reason}): {plan.message}")
        return 0 if plan.recipe is not None else 5
    try:
        prepared = prepare_setup(request, environment.environ)
    except BadRequest as exc:
        known = next((name for name in INTENTS if name == intent), None)
        if json_output and known is not None:
            refused = SetupResult(
                intent=known,
                project=None,
                verdict="unsupported",
                reason="bad-request",
                message=exc.message,
            )
            cliapp.emit_json(refused.to_json())
        raise
    progress = Progress(environment.stderr, enabled=bool(environment.stderr_isatty))
    hooks = Hooks(abort=progress, environ=environment.environ)
    try:
        with interrupt_sets(progress.abort):
            if isinstance(prepared.resolution, SetupResolved):
                progress.start(prepared.resolution.command.display)
            result = execute_setup(prepared, hooks)
    except EvidenceNotRecorded as exc:
        progress.clear()
        assert isinstance(exc.result, SetupResult)
        _print_setup(exc.result, json_output)
        raise
    progress.clear()
    return _print_setup(result, json_output)


def _print_detect(report: DetectReport) -> None:
    write = cliapp.env().stdout.write
    write(f"workspace {report.workspace}\n")
    if report.located:
        write(f"  found as {report.located}\n")
    default = report.default_unit or "none (name one with --project)"
    write(f"default unit {default}: {report.selection}\n")
    for unit in report.units:
        manifests = ", ".join(unit.manifests) or "no manifest"
        ecosystems = ", ".join(unit.ecosystems) or "-"
        write(f"\nunit {unit.id}  [{ecosystems}]  ({manifests})\n")
        if unit.environment is not None:
            write(f"  {_environment_text(unit.environment)}\n")
        if unit.satellite:
            write(f"  satellite: {unit.satellite}; not a default, --project {unit.id} runs it\n")
        if unit.members:
            write(f"  workspace root of {', '.join(unit.members)}; --project {unit.id} runs all\n")
        for item in unit.kinds:
            if item.recipe is not None:
                write(f"  {item.kind:<16} {item.recipe.id}: {item.recipe.command}\n")
                continue
            cure = f" (cure: {item.cure})" if item.cure else ""
            write(f"  {item.kind:<16} unsupported, {item.reason}: {item.message}{cure}\n")
            if item.would_run is not None:
                write(f"  {'':<16} blocked: {item.would_run.id}: {item.would_run.command}\n")
        if unit.unused:
            write("  seen, not used:\n")
            for line in unit.unused:
                write(f"    {line}\n")
    found = [f"{tool.name} {tool.path}" for tool in report.toolchains if tool.path]
    missing = [tool.name for tool in report.toolchains if not tool.path]
    write("\ntoolchains on PATH:\n")
    for line in found:
        write(f"  {line}\n")
    write(f"not found: {', '.join(missing) or '-'}\n")
    if report.notes:
        write("\nnotes:\n")
        for note in report.notes:
            write(f"  - {note}\n")


@app.command("detect")
def detect_verb(workspace: WorkspaceOption = None, json_output: JsonOption = False) -> None:
    """List the units, what each kind resolves to, and the toolchains found (spawns nothing)."""
    from ax_check.detection import detect

    report = detect(workspace, cliapp.env().environ)
    if json_output:
        cliapp.emit_json(report.to_json())
    else:
        _print_detect(report)


@app.command("recipes")
def recipes_verb(json_output: JsonOption = False) -> None:
    """Print the recipe table: first applicable row wins, the project's own task first."""
    from ax_check.recipes import recipe_rows

    rows = recipe_rows()
    if json_output:
        cliapp.emit_json([row.to_json() for row in rows])
        return
    write = cliapp.env().stdout.write
    for row in rows:
        write(f"{row.id}\n")
        write(f"  kind {row.kind}, {row.ecosystem}; applies when {row.applies}\n")
        write(f"  runs {row.command}\n")
        if row.precondition != "-":
            write(f"  needs {row.precondition}\n")


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
