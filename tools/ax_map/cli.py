"""The ax-map command line: parse, call the core, print."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from libcommon.cliapp import (
    Environment,
    JsonOption,
    WorkspaceOption,
    emit_json,
    entry_point,
    env,
    make_app,
    run_main,
)

if TYPE_CHECKING:
    from ax_map.index import IndexStats

app = make_app("ax-map", "What is in this repository, ranked, in a bounded number of characters.")

# How often the progress line on a terminal is redrawn.
PROGRESS_INTERVAL_S = 0.1


class _ProgressLine:
    """One line on stderr, redrawn in place; only ever drawn on a terminal."""

    def __init__(self) -> None:
        self.shown = False
        self.last = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < PROGRESS_INTERVAL_S:
            return
        self.last = now
        label = "first tier" if phase == "scan" else "tree-sitter"
        env().stderr.write(f"\rax-map: {label} {done}/{total} files ")
        env().stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            env().stderr.write("\r" + " " * 60 + "\r")
            env().stderr.flush()


@app.command()
def build(
    workspace: WorkspaceOption = None,
    budget_seconds: Annotated[
        float | None,
        typer.Option(
            "--budget-seconds",
            metavar="S",
            help="Wall time to spend (default 30); files not reached stay pending for the "
            "next build.",
        ),
    ] = None,
) -> None:
    """Build or refresh the map index; print a JSON summary of what it covers."""
    from ax_map.build import DEFAULT_BUDGET_S, build_index
    from ax_map.models import BuildSummary
    from libcommon.paths import state_layout

    layout = state_layout(workspace, env().environ)
    progress = _ProgressLine() if env().stderr_isatty else None
    try:
        result = build_index(
            layout,
            budget_s=DEFAULT_BUDGET_S if budget_seconds is None else budget_seconds,
            environ=env().environ,
            progress=progress,
        )
    finally:
        if progress is not None:
            progress.clear()
    emit_json(BuildSummary.of(result).to_json())


@app.command()
def stats(workspace: WorkspaceOption = None, json_output: JsonOption = False) -> None:
    """What the index holds: coverage, skips by reason, languages, symbols, edges."""
    from ax_map.index import index_stats
    from ax_map.models import IndexStatsOut
    from libcommon.paths import state_layout

    found = index_stats(state_layout(workspace, env().environ))
    if json_output:
        emit_json(IndexStatsOut.of(found).to_json())
        return
    out = env().stdout
    out.write(_stats_text(found))
    out.flush()


def _stats_text(found: IndexStats) -> str:
    coverage = found.coverage
    partial = coverage.partial or not found.exact
    listed = ", ".join(f"{reason} {count}" for reason, count in coverage.listed.items())
    languages = ", ".join(f"{name} {count}" for name, count in coverage.languages.items())
    total = f"{coverage.total}{'' if found.exact else '+'}"
    lines = [
        f"index: {found.index} ({found.bytes} bytes, schema {found.schema_version}, "
        f"written {found.written_at})",
        f"workspace: {found.workspace} ({'git' if found.git else 'walked, not git'})",
        f"files: {total} found, {coverage.indexed} indexed, {sum(coverage.listed.values())} "
        f"listed, {coverage.pending} pending, {coverage.capped} capped: "
        f"{'PARTIAL' if partial else 'complete'}",
        f"tiers: {found.parsed} parsed by tree-sitter, {found.first_tier_only} first tier only"
        f" ({found.parse_failed} of them unparseable)",
        f"listed (never read): {listed or 'none'}",
        f"languages: {languages or 'none'}",
        f"symbols: {found.symbols}; referenced names: {found.references}; "
        f"import edges: {found.import_edges}",
        *(f"note: {note}" for note in found.notes),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
