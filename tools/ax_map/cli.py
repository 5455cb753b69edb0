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
    from ax_map.models import Retrieved

app = make_app("ax-map", "What is in this repository, ranked, in a bounded number of characters.")

# How often the progress line on a terminal is redrawn.
PROGRESS_INTERVAL_S = 0.1


# What the progress line calls each phase of a build.
_PROGRESS_LABELS = {
    "scan": "first tier",
    "references": "first tier's references",
    "parse": "tree-sitter",
}


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
        label = _PROGRESS_LABELS.get(phase, phase)
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
    emit_json(result.to_json())


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
        f" ({found.parse_failed} of them unparseable, {found.references_pending} without "
        "references yet)",
        f"listed (never read): {listed or 'none'}",
        f"languages: {languages or 'none'}",
        f"symbols: {found.symbols}; referenced names: {found.references}; "
        f"import edges: {found.import_edges}",
        *(f"note: {note}" for note in found.notes),
    ]
    return "\n".join(lines) + "\n"


@app.command()
def show(
    workspace: WorkspaceOption = None,
    chars: Annotated[
        int | None,
        typer.Option("--chars", metavar="N", help="Character budget of the map (default 16000)."),
    ] = None,
    query: Annotated[
        str | None,
        typer.Option("--query", metavar="TEXT", help="Rank for this: names, paths or a few words."),
    ] = None,
    focus: Annotated[
        list[str] | None,
        typer.Option(
            "--focus",
            metavar="PATH",
            help="Rank files in this file or folder (relative to the workspace root) up; "
            "repeatable.",
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Print the map from the index: coverage, tree, ranked key files with their symbols."""
    from ax_map.index import load_snapshot
    from ax_map.models import MapShown
    from ax_map.pathtext import quote_path
    from ax_map.render import DEFAULT_MAP_CHARS
    from ax_map.views import check_map_request, focus_paths, map_view, unmatched_focus
    from libcommon.paths import state_layout

    layout = state_layout(workspace, env().environ)
    budget = DEFAULT_MAP_CHARS if chars is None else chars
    focused = focus_paths(layout.workspace, focus or ())
    check_map_request(budget, query, focused)
    snapshot = load_snapshot(layout)
    view = map_view(snapshot, chars=budget, query=query, focus=focused)
    unmatched = unmatched_focus(snapshot, focused)
    if json_output:
        emit_json(MapShown.of(view, snapshot, query, focused, unmatched).to_json())
        return
    for path in unmatched:
        env().stderr.write(
            f"ax-map: note: focus {quote_path(path)} names no file or folder of the index\n"
        )
    env().stdout.write(view.text)
    env().stdout.flush()


@app.command()
def retrieve(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="A symbol, a path or a few words.")],
    workspace: WorkspaceOption = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", metavar="N", help="Hits to print (default 10, at most 100)."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Ranked files answering QUERY, with their matching symbols and lines read from disk."""
    from ax_map.index import load_snapshot
    from ax_map.models import Retrieved
    from ax_map.retrieve import DEFAULT_RETRIEVE_LIMIT, check_retrieve_request
    from ax_map.retrieve import retrieve as retrieve_hits
    from libcommon.paths import state_layout

    layout = state_layout(workspace, env().environ)
    wanted = DEFAULT_RETRIEVE_LIMIT if limit is None else limit
    check_retrieve_request(query, wanted)
    snapshot = load_snapshot(layout)
    found = Retrieved.of(
        query, retrieve_hits(snapshot, layout.workspace, query, limit=wanted), snapshot
    )
    if json_output:
        emit_json(found.to_json())
        return
    env().stdout.write(_hits_text(found))
    env().stdout.flush()


def _hits_text(found: Retrieved) -> str:
    blocks = []
    if found.state == "partial":
        blocks.append(
            f"note: the index is partial ({found.coverage.indexed:,} of "
            f"{found.coverage.total:,} files indexed); `ax-map build` completes it"
        )
    if not found.hits:
        blocks.append("no file matches the query")
    for hit in found.hits:
        lines = [f"{hit.path}  (score {hit.score:.4f})"]
        lines += [f"  why: {signal}" for signal in hit.signals]
        if hit.symbols:
            named = ", ".join(f"{s.kind} {s.name} (line {s.line})" for s in hit.symbols)
            lines.append(f"  symbols: {named}")
        lines += [f"    {line}" for line in hit.excerpt]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
