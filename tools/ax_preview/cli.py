"""The ax-preview command line: parse, call the core, print."""

from __future__ import annotations

from typing import Annotated

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
from libcommon.errors import ExitStatus

app = make_app("ax-preview", "Managed dev servers with honest readiness, TTLs and a crash sweep.")


@app.command()
def start(
    workspace: WorkspaceOption = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Unit folder inside the workspace.")
    ] = None,
    script: Annotated[
        str | None,
        typer.Option("--script", help="dev, start, serve or preview (default: the first defined)."),
    ] = None,
    ttl: Annotated[
        str, typer.Option("--ttl", help="Stop the server after this long (90s, 10m, 2h).")
    ] = "30m",
    log_cap: Annotated[
        str, typer.Option("--log-cap", help="Stop the server when its log passes this size.")
    ] = "16M",
    ready_timeout: Annotated[
        str, typer.Option("--ready-timeout", help="Seconds to wait for an HTTP answer.")
    ] = "30",
    session: Annotated[
        str | None, typer.Option("--session", help="Record preview events in this session's log.")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            help="A port the server listens on without saying so; it also gets PORT=N. "
            "The answer is still checked to come from the server's own processes.",
        ),
    ] = None,
) -> int:
    """Start the project's dev server and wait until it answers; print the result JSON."""
    from ax_preview.launch import StartRequest, parse_duration, parse_size, start_preview
    from ax_preview.scripts import NoSuchScript, NotInstalled
    from libcommon.errors import Unsupported

    request = StartRequest(
        workspace=workspace,
        project=project,
        script=script,
        ttl_s=parse_duration(ttl, "--ttl"),
        log_cap_bytes=parse_size(log_cap, "--log-cap"),
        ready_timeout_s=parse_duration(ready_timeout, "--ready-timeout"),
        session=session,
        port=port,
    )
    try:
        result = start_preview(request)
    except Unsupported as exc:
        # Nothing was started; the JSON carries the typed reason (and the cure, if any).
        answer: dict[str, object] = {
            "state": "unsupported",
            "reason": exc.reason,
            "message": exc.message,
            "hint": exc.hint,
        }
        if isinstance(exc, NoSuchScript):
            answer.update(script=exc.name, available=exc.available)
        if isinstance(exc, NotInstalled):
            answer["cure"] = exc.cure
        cliapp.emit_json(answer)
        cliapp.report_error("ax-preview", exc, cliapp.env().stderr)
        return ExitStatus.UNSUPPORTED
    cliapp.emit_json(result.to_json())
    if result.state != "ready":
        cliapp.chrome(f"ax-preview: preview {result.id} failed: {result.reason}")
        if result.hint:
            cliapp.chrome(f"ax-preview: hint: {result.hint}")
        return ExitStatus.FAILED
    return ExitStatus.OK


@app.command("list")
def list_(workspace: WorkspaceOption = None, json: JsonOption = False) -> int:
    """Previews of this workspace, with their state re-checked now."""
    from ax_preview.manage import list_previews

    rows = list_previews(workspace)
    if json:
        cliapp.emit_json({"previews": [row.to_json() for row in rows]})
        return ExitStatus.OK
    if not rows:
        cliapp.chrome("no previews")
    for row in rows:
        where = row.url or "-"
        cliapp.env().stdout.write(
            f"{row.id}  {row.state:<12} {row.script:<8} {where}  pid {row.pid or '-'}"
            f"  {row.reason or ''}\n".rstrip()
            + "\n"
        )
    return ExitStatus.OK


@app.command()
def logs(
    preview_id: Annotated[str, typer.Argument(metavar="ID", help="The preview id.")],
    workspace: WorkspaceOption = None,
    tail: Annotated[
        int | None, typer.Option("--tail", min=0, help="Only the last N lines.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until the preview stops.")
    ] = False,
) -> int:
    """Print a preview's server output (ANSI stripped, secrets redacted)."""
    from ax_preview.manage import read_logs
    from ax_preview.registry import check_preview_id

    out = cliapp.env().stdout
    for text in read_logs(workspace, check_preview_id(preview_id), tail, follow):
        out.write(text)
        out.flush()
    return ExitStatus.OK


@app.command()
def stop(
    preview_id: Annotated[str, typer.Argument(metavar="ID", help="The preview id.")],
    workspace: WorkspaceOption = None,
) -> int:
    """Stop a preview and its whole process tree; exit 1 unless the kill is verified."""
    from ax_preview.manage import stop_preview
    from ax_preview.registry import check_preview_id

    result = stop_preview(workspace, check_preview_id(preview_id))
    cliapp.emit_json(result.to_json())
    return ExitStatus.FAILED if result.kill_verified is False else ExitStatus.OK


@app.command()
def sweep(workspace: WorkspaceOption = None) -> int:
    """Drop dead previews and kill orphaned servers proven to be ours (never by age)."""
    from ax_preview.manage import sweep_previews

    report = sweep_previews(workspace)
    cliapp.emit_json(report.to_json())
    return ExitStatus.OK


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
