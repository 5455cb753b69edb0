"""The ax-report command line: parse, call the core, print."""

from __future__ import annotations

from typing import Annotated

import typer

from libcommon.cliapp import (
    Environment,
    JsonOption,
    VersionOption,
    WorkspaceOption,
    chrome,
    entry_point,
    env,
    make_app,
    run_main,
)
from libcommon.errors import ExitStatus, UsageError

SessionOption = Annotated[
    str | None,
    typer.Option("--session", help="Read this session's log instead of events on stdin."),
]


# The bare command is the report itself (`ax-log events | ax-report`); `diff` is a verb.
def report(
    ctx: typer.Context,
    json_output: JsonOption = False,
    section: Annotated[
        list[str] | None,
        typer.Option(
            "--section", metavar="NAME", help="Only this section (repeatable): header, files, …"
        ),
    ] = None,
    session: SessionOption = None,
    workspace: WorkspaceOption = None,
    version: VersionOption = False,
) -> int | None:
    """Print the session report: Markdown, or the JSON object with --json.

    Reads the events as JSON Lines on stdin, or the log of --session.
    """
    del version
    if ctx.invoked_subcommand is not None:
        return None
    from ax_log import capped_lines
    from ax_report.build import build_report, render_json
    from ax_report.intake import read_jsonl
    from ax_report.sources import session_events
    from libcommon.paths import state_layout

    if session is not None:
        events = session_events(state_layout(workspace), session)
    elif env().stdin_isatty:
        raise UsageError(
            "ax-report reads events as JSON Lines on stdin, and stdin is a terminal",
            hint="pipe events in (ax-log events --session S | ax-report) or pass --session ID",
        )
    else:
        # Bytes when the stream has them: orjson parses them without a decode step. No
        # line is held past the log's line cap, however long it is.
        events = read_jsonl(capped_lines(getattr(env().stdin, "buffer", env().stdin)))
    document, markdown = build_report(events, section)
    out = env().stdout
    out.write(render_json(document) if json_output else markdown)
    out.flush()
    if document["events"]["read"] == 0:
        chrome("ax-report: error: no readable event arrived")
        return ExitStatus.USAGE
    return ExitStatus.OK


app = make_app(
    "ax-report",
    "The session report: a pure function from events to JSON and Markdown.",
    root=report,
)


@app.command("diff")
def diff(
    session: Annotated[str, typer.Option("--session", help="The session whose changes to show.")],
    workspace: WorkspaceOption = None,
) -> int:
    """The session's attributable diff: first pre-images against the files now.

    Unified format (pipe into `git apply --check` or a pager). Exit 1 when a file
    DRIFTED (changed after the session's last change) or could not be diffed.
    """
    from ax_report.diff import session_diff
    from libcommon.paths import state_layout

    files = session_diff(state_layout(workspace), session)
    out = env().stdout
    for item in files:
        out.write(item.text())
    out.flush()
    failed = False
    for item in files:
        if item.drifted:
            chrome(f"ax-report: DRIFTED: {item.path}")
        if item.incomplete:
            chrome(f"ax-report: not diffed: {item.path}")
        failed = failed or item.drifted or item.incomplete
    return ExitStatus.FAILED if failed else ExitStatus.OK


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
