"""`ax-check detect`: the units, what each kind resolves to, and the toolchains found.

Stat-only, like everything resolution does: nothing is spawned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ax_check.facts import UnitFacts, gather_facts
from ax_check.models import (
    KINDS,
    DetectReport,
    Kind,
    KindResolution,
    RecipeRef,
    ToolchainReport,
    UnitReport,
)
from ax_check.recipes import (
    RUNNERS,
    TARGET_PLACEHOLDER,
    TASK_NAMES,
    Blocker,
    Resolved,
    compose,
    resolve,
)
from ax_check.toolchains import REPORTED_TOOLCHAINS, Toolchains, child_env, environment_ref
from ax_check.units import UnitRefused, choose_unit, discover_units, locate

# Lines of "seen and not used" shown per unit before the rest is counted.
MAX_UNUSED_SHOWN = 40


def _shown_command(resolution: Resolved | Blocker) -> str | None:
    command = resolution.command
    if command is None:
        return None
    return command.display.replace(f"'{TARGET_PLACEHOLDER}'", TARGET_PLACEHOLDER)


def _resolution(facts: UnitFacts, kind: Kind) -> tuple[KindResolution, Resolved | Blocker]:
    targets = (TARGET_PLACEHOLDER,) if kind == "test-targeted" else ()
    resolution = resolve(facts, kind, targets)
    if isinstance(resolution, Blocker):
        shown = _shown_command(resolution)
        planned = (
            RecipeRef(id=resolution.recipe_id, command=shown)
            if shown is not None and resolution.recipe_id is not None
            else None
        )
        report = KindResolution(
            kind=kind,
            status="unsupported",
            recipe=None,
            reason=resolution.reason,
            message=resolution.message,
            cure=resolution.cure,
            would_run=planned,
        )
        return report, resolution
    ready = KindResolution(
        kind=kind,
        status="ready",
        recipe=RecipeRef(id=resolution.recipe_id, command=_shown_command(resolution) or ""),
        replay_key=None if targets else resolution.replay_key,
    )
    return ready, resolution


def _ran(resolution: Resolved | Blocker) -> str:
    if isinstance(resolution, Resolved):
        return resolution.command.display
    if resolution.command is not None:
        return f"{resolution.command.display}, blocked: {resolution.message}"
    return f"nothing ({resolution.reason})"


def _unused(facts: UnitFacts, chosen: dict[Kind, Resolved | Blocker]) -> list[str]:
    """The project's own tasks that no kind runs here, each with why."""
    sources: list[tuple[str, dict[str, str], tuple[str, ...]]] = []
    for runner in RUNNERS:
        # Make targets with a dot or a slash are files, not tasks.
        tasks = {
            role: task.name
            for role, task in runner.tasks(facts).items()
            if runner.name != "make" or not any(char in role for char in "./")
        }
        sources.append((runner.source, tasks, runner.argv("")[:-1]))
    scripts = {name: name for name in facts.npm_scripts}
    manager = facts.node.manager if facts.node is not None else "npm"
    sources.append((f"{manager} script", scripts, (manager, "run")))
    lines: list[str] = []
    for source, tasks, argv in sources:
        for role, name in tasks.items():
            kinds = [kind for kind in KINDS if role in TASK_NAMES[kind]]
            if not kinds:
                lines.append(f"{source} {name}: not a check kind")
                continue
            runs = compose((*argv, name))
            if any(_command_of(chosen[kind]) == runs for kind in kinds):
                continue
            winners = "; ".join(f"{kind} runs {_ran(chosen[kind])}" for kind in kinds)
            lines.append(f"{source} {name}: not used ({winners})")
    lines += facts.passed_over
    if len(lines) > MAX_UNUSED_SHOWN:
        extra = len(lines) - MAX_UNUSED_SHOWN
        lines = [*lines[:MAX_UNUSED_SHOWN], f"{extra} more not shown"]
    return lines


def _command_of(resolution: Resolved | Blocker) -> str | None:
    command = resolution.command
    return command.display if command is not None else None


def detect(
    workspace: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> DetectReport:
    location = locate(workspace, None, environ)
    root = location.workspace
    toolchains = Toolchains.from_environ(environ)
    discovery = discover_units(root)
    try:
        choice = choose_unit(discovery, location, None)
        default_unit: str | None = choice.unit.id
        selection = choice.why if choice.cure is None else f"{choice.why} ({choice.cure})"
    except UnitRefused as exc:
        default_unit = None
        selection = exc.message if exc.hint is None else f"{exc.message} ({exc.hint})"
    units = []
    for unit in discovery.units:
        facts = gather_facts(root, unit, toolchains)
        kinds = []
        chosen: dict[Kind, Resolved | Blocker] = {}
        for kind in KINDS:
            report, chosen[kind] = _resolution(facts, kind)
            kinds.append(report)
        units.append(
            UnitReport(
                id=unit.id,
                path=str(unit.path),
                manifests=list(unit.manifests),
                ecosystems=list(unit.ecosystems),
                kinds=kinds,
                environment=environment_ref(facts.python),
                satellite=unit.satellite,
                members=[member.id for member in unit.members],
                unused=_unused(facts, chosen),
            )
        )
    # What a unit's command finds: this PATH without ax-check's own venv (toolchains.py).
    seen = Toolchains(path=child_env(environ, None).path, environ=environ)
    return DetectReport(
        workspace=str(root),
        units=units,
        toolchains=[
            ToolchainReport(name=name, path=seen.find(name)) for name in REPORTED_TOOLCHAINS
        ],
        notes=list(discovery.notes),
        located=location.why,
        default_unit=default_unit,
        selection=selection,
    )
