"""The ax-log command line: parse, call the core, print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from libcommon.cliapp import (
    Environment,
    JsonOption,
    WorkspaceOption,
    chrome,
    emit_json,
    emit_line,
    entry_point,
    env,
    make_app,
    run_main,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ax_log.reader import Problem, Record

app = make_app("ax-log", "The append-only session event log, content-addressed snapshots and undo.")

SessionOption = Annotated[str, typer.Option("--session", help="The session id.")]
CallOption = Annotated[
    str | None, typer.Option("--call", help="The tool call id the change belongs to.")
]
PathsArgument = Annotated[
    list[str], typer.Argument(help="Files, relative to the workspace or absolute inside it.")
]


@app.command()
def append(session: SessionOption, workspace: WorkspaceOption = None) -> None:
    """Append events read on stdin (one object or JSON Lines); print them as stored."""
    from ax_log.intake import read_event_input
    from ax_log.writer import append_events
    from libcommon.paths import check_session_id, state_layout

    check_session_id(session)
    layout = state_layout(workspace)
    bodies = read_event_input(env().stdin, bool(env().stdin_isatty))
    for record in append_events(layout, session, bodies):
        emit_line(record)


@app.command()
def events(
    session: Annotated[
        str | None, typer.Option("--session", help="The session id (default: --latest).")
    ] = None,
    latest: Annotated[
        bool, typer.Option("--latest", help="The session that started last.")
    ] = False,
    type_prefix: Annotated[
        str | None,
        typer.Option("--type", help="Only types equal to PREFIX or below it (tool = tool.*)."),
    ] = None,
    since: Annotated[int, typer.Option("--since", min=0, help="Only events with seq > SEQ.")] = 0,
    follow: Annotated[
        bool, typer.Option("--follow", help="Keep printing new events until interrupted.")
    ] = False,
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Skip unreadable lines, reporting each on stderr.")
    ] = False,
    workspace: WorkspaceOption = None,
) -> None:
    """Print a session's events as JSON Lines."""
    from ax_log.locate import latest_session, require_log
    from ax_log.reader import follow_events, read_events
    from libcommon.errors import OperationFailed, UsageError
    from libcommon.paths import check_session_id, state_layout

    if session is not None and latest:
        raise UsageError("give --session or --latest, not both")
    if session is not None:
        check_session_id(session)
    layout = state_layout(workspace)
    if session is None:
        session = latest_session(layout)
        if session is None:
            raise OperationFailed("this project has no sessions yet")
    path = layout.session_log(session) if follow else require_log(layout, session)
    problems: list[Problem] = []
    stream: Iterator[Record | None] = (
        follow_events(path, session, lenient=lenient, since=since, problems=problems)
        if follow
        else read_events(path, session, lenient=lenient, since=since, problems=problems)
    )
    try:
        _print_events(stream, type_prefix, problems)
    except BrokenPipeError:
        # click turns an EPIPE into exit 1; a bare BrokenPipeError passes through it to
        # entry_point, which exits quietly with the documented 141.
        raise BrokenPipeError from None


def _print_events(
    stream: Iterator[Record | None], type_prefix: str | None, problems: list[Problem]
) -> None:
    from ax_log.reader import type_matches
    from libcommon import jsonio

    out = env().stdout
    reported = 0
    for record in stream:
        if record is None:
            # Caught up with the log while following: show what we have, then check
            # whether anyone is still reading before polling again.
            out.flush()
            reported = _report_problems(problems, reported)
            if _stdout_closed():
                raise BrokenPipeError
            continue
        if type_prefix is None or type_matches(record["type"], type_prefix):
            out.write(jsonio.dumps_line(record).decode())
    out.flush()
    _report_problems(problems, reported)


def _report_problems(problems: list[Problem], already: int) -> int:
    for problem in problems[already:]:
        chrome(f"ax-log: skipped line {problem.line}: {problem.problem}")
    return len(problems)


def _stdout_closed() -> bool:
    """True once the reader of a pipe on stdout has gone away (checked while idle)."""
    import select

    try:
        fd = env().stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, 0)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


@app.command()
def sessions(json: JsonOption = False, workspace: WorkspaceOption = None) -> None:
    """One row per session: id, started, ended, event count, last type."""
    from ax_log.sessions import list_sessions
    from libcommon.paths import state_layout

    rows = list_sessions(state_layout(workspace))
    if json:
        emit_json([row.to_json() for row in rows])
        return
    out = env().stdout
    out.write(f"{'ID':<24} {'STARTED':<24} {'ENDED':<24} {'EVENTS':>6}  LAST TYPE\n")
    for row in rows:
        flag = f"  (problems: {row.problems})" if row.problems else ""
        out.write(
            f"{row.id:<24} {row.started or '-':<24} {row.ended or '-':<24} "
            f"{row.events:>6}  {row.last_type or '-'}{flag}\n"
        )


@app.command()
def verify(session: SessionOption, workspace: WorkspaceOption = None) -> int:
    """Check every line of a session log; exit 0 when sound, 1 otherwise."""
    from ax_log.verify import verify_session
    from libcommon.paths import check_session_id, state_layout

    check_session_id(session)
    result = verify_session(state_layout(workspace), session)
    emit_json(result.to_json())
    return 0 if result.ok else 1


@app.command()
def snapshot(
    session: SessionOption,
    paths: PathsArgument,
    call: CallOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Store the files' current bytes and append snapshot.stored for each."""
    from ax_log.snapshots import snapshot_paths
    from libcommon.paths import check_session_id, state_layout

    check_session_id(session)
    for record in snapshot_paths(state_layout(workspace), session, paths, call):
        emit_line(record)


@app.command()
def mutated(
    session: SessionOption,
    paths: PathsArgument,
    call: CallOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Hash the files now and append file.mutated against each one's latest snapshot."""
    from ax_log.snapshots import record_mutations
    from libcommon.paths import check_session_id, state_layout

    check_session_id(session)
    for record in record_mutations(state_layout(workspace), session, paths, call):
        emit_line(record)


@app.command()
def undo(
    session: SessionOption,
    last: Annotated[
        bool, typer.Option("--last", help="Revert the last change (one call).")
    ] = False,
    all_: Annotated[
        bool, typer.Option("--all", help="Revert every change of the session.")
    ] = False,
    json: JsonOption = False,
    workspace: WorkspaceOption = None,
) -> int:
    """Revert recorded file changes newest first; drifted files are refused, not clobbered."""
    from ax_log.revert import undo as run_undo
    from libcommon.errors import UsageError
    from libcommon.paths import check_session_id, state_layout

    check_session_id(session)
    if last == all_:
        raise UsageError("give exactly one of --last or --all")
    outcome = run_undo(state_layout(workspace), session, everything=all_)
    if json:
        emit_json(outcome.event)
    else:
        for line in outcome.describe():
            env().stdout.write(line + "\n")
    return 0 if outcome.ok else 1


checkpoint_app = typer.Typer(
    help="Recovery points as commits under hidden refs (refs/ax/checkpoints/SESSION/N).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(checkpoint_app, name="checkpoint")


@checkpoint_app.command("create")
def checkpoint_create(
    session: SessionOption,
    label: Annotated[str | None, typer.Option("--label", help="A short note.")] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="agent, task-base, pre-integration or delivery.")
    ] = "agent",
    workspace: WorkspaceOption = None,
) -> None:
    """Capture the working tree as a checkpoint; the user's index, HEAD and refs stay as
    they are."""
    from ax_log.checkpoints import create_checkpoint
    from libcommon.paths import state_layout

    result = create_checkpoint(
        state_layout(workspace), session, kind=kind, label=label, environ=env().environ
    )
    emit_json(result.to_json())


@checkpoint_app.command("list")
def checkpoint_list(
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session's checkpoints.")
    ] = None,
    json: JsonOption = False,
    workspace: WorkspaceOption = None,
) -> None:
    """The live checkpoints, oldest first (the refs are the truth, not the log)."""
    from ax_log.checkpoints import list_checkpoints
    from libcommon.paths import state_layout

    found = list_checkpoints(state_layout(workspace), session, env().environ)
    if json:
        emit_json([item.to_json() for item in found])
        return
    out = env().stdout
    for item in found:
        label = f"  {item.label}" if item.label else ""
        out.write(
            f"{item.session}/{item.n:<4} {item.kind:<16} {item.commit[:12]}  "
            f"{item.created or '-'}{label}\n"
        )


@checkpoint_app.command("restore")
def checkpoint_restore(
    reference: Annotated[
        str, typer.Argument(metavar="REF", help="N (with --session), SESSION/N or the full ref.")
    ],
    session: SessionOption,
    json: JsonOption = False,
    workspace: WorkspaceOption = None,
) -> int:
    """Put the working tree's files back as the checkpoint holds them, as one undo unit of
    --session; the index is never touched; exit 1 when a file was refused."""
    from ax_log.checkpoints import restore_checkpoint
    from libcommon.paths import state_layout

    result = restore_checkpoint(state_layout(workspace), session, reference, env().environ)
    if json:
        emit_json(result.to_json())
    else:
        out = env().stdout
        for path in result.restored:
            out.write(f"restored  {path}\n")
        for path in result.removed:
            out.write(f"removed   {path}\n")
        for path, reason in result.refused:
            out.write(f"refused   {path}: {reason}\n")
        if not (result.restored or result.removed or result.refused):
            out.write(f"nothing to restore: the working tree matches {result.ref}\n")
        else:
            out.write(f"undo it with: ax-log undo --session {session} --last\n")
    return 0 if result.ok else 1


@checkpoint_app.command("prune")
def checkpoint_prune(session: SessionOption, workspace: WorkspaceOption = None) -> int:
    """Delete the session's checkpoint refs except delivery ones; never runs git gc."""
    from ax_log.checkpoints import prune_session
    from libcommon.paths import state_layout

    result = prune_session(state_layout(workspace), session, env().environ)
    emit_json(result.to_json())
    return 0 if result.ok else 1


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
