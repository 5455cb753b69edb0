"""The ax-agent command line: parse, call the core, print.

The bare command is the agent (``ax-agent -p TEXT``); ``demo`` is its one verb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from libcommon.cliapp import (
    Environment,
    VersionOption,
    WorkspaceOption,
    chrome,
    entry_point,
    env,
    make_app,
    run_main,
)

PROMPT_MAX_CHARS = 1024 * 1024


def agent(
    ctx: typer.Context,
    prompt: Annotated[
        str | None,
        typer.Option(
            "-p",
            "--prompt",
            # Issue 12: no prompt on a terminal is the interactive terminal.
            help="The request (default: read it from stdin; on a terminal, the interactive mode).",
        ),
    ] = None,
    workspace: WorkspaceOption = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider",
            help="anthropic, openai-compatible or script (default: the config's, else anthropic).",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="The model to ask.")] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="The server of the openai-compatible provider."),
    ] = None,
    script: Annotated[
        Path | None, typer.Option("--script", help="The script file of the script provider.")
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="Model calls per turn (default 50).")
    ] = None,
    output_format: Annotated[
        str,
        typer.Option("--output-format", help="text (the answer), json (one object), stream-json."),
    ] = "text",
    continue_latest: Annotated[
        bool, typer.Option("--continue", help="Continue the newest session of this workspace.")
    ] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", metavar="ID", help="Resume the session ID.")
    ] = None,
    trust_this_workspace: Annotated[
        bool,
        typer.Option("--trust-this-workspace", help="Trust the workspace for this run only."),
    ] = False,
    dangerously_allow_all: Annotated[
        bool,
        typer.Option(
            "--dangerously-allow-all",
            help="Answer every approval question yes (said on stderr and in the log).",
        ),
    ] = False,
    version: VersionOption = False,
) -> int | None:
    """Run one turn of the coding agent on a prompt and print its answer.

    Exit status: 0 completed, 1 error or stopped by a limit, 3 workspace not
    trusted, 4 the session is owned by another live process, 130 interrupted.
    """
    del version
    if ctx.invoked_subcommand is not None:
        return None
    from libcommon.errors import UsageError

    from .approvals import AnnouncingApprover, Approver, DenyingApprover, TerminalApprover
    from .headless import OUTPUT_FORMATS, run_headless
    from .session import StartOptions

    environment = env()
    if output_format not in OUTPUT_FORMATS:
        raise UsageError(
            f"unknown --output-format {output_format!r}", hint=f"use {', '.join(OUTPUT_FORMATS)}"
        )
    interactive = bool(environment.stdin_isatty and environment.stderr_isatty)
    # Issue 12 (the terminal): no prompt on a terminal starts the interactive mode.
    terminal = prompt is None and interactive and output_format == "text"
    text = "" if terminal else _prompt(prompt)
    approver: Approver
    note = None
    if dangerously_allow_all:
        note = "--dangerously-allow-all: every approval question is answered yes, unasked"
        chrome(f"ax-agent: WARNING: {note}")
        approver = AnnouncingApprover("allow-all", chrome, "--dangerously-allow-all")
    elif interactive:
        approver = TerminalApprover(environment.stdin, environment.stderr)
    else:
        approver = DenyingApprover()
    options = StartOptions(
        workspace=workspace,
        environ=environment.environ,
        provider=provider,
        model=model,
        base_url=base_url,
        script=script,
        max_steps=max_steps,
        resume=resume,
        continue_latest=continue_latest,
        trust_once=trust_this_workspace,
        interactive=interactive,
        trust_ask=_ask_trust if interactive else None,
        # Issue 23: a workspace-declared MCP server starts only once a person says yes.
        mcp_ask=_ask_trust if interactive else None,
        approver=approver,
        approval_note=note,
    )
    if terminal:  # issue 12: the same session options, read line by line
        from .terminal.repl import run_terminal

        return run_terminal(options, environment)
    return run_headless(options, text, output_format, environment.stdout, chrome)


def _prompt(given: str | None) -> str:
    from libcommon.errors import UsageError

    environment = env()
    if given is not None:
        text = given
    elif environment.stdin_isatty:
        raise UsageError(
            "no prompt: give one with -p TEXT or on stdin",
            hint='ax-agent -p "fix the failing test"',
        )
    else:
        text = environment.stdin.read(PROMPT_MAX_CHARS + 1)
        if len(text) > PROMPT_MAX_CHARS:
            raise UsageError(f"the prompt is longer than {PROMPT_MAX_CHARS} characters")
    if not text.strip():
        raise UsageError("the prompt is empty")
    return text


def _ask_trust(question: str) -> bool:
    environment = env()
    environment.stderr.write(f"ax-agent: {question} [y/N] ")
    environment.stderr.flush()
    return environment.stdin.readline().strip().lower() in ("y", "yes")


app = make_app(
    "ax-agent",
    "The coding agent: the turn loop, providers, model-facing tools, approvals and resume.",
    root=agent,
)


@app.command()
def demo(
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the temporary workspace and print where it is.")
    ] = False,
) -> int:
    """Offline demo: a scripted model fixes a failing test in a temporary project."""
    from .demo import run_demo

    environment = env()
    return run_demo(environment.environ, environment.stdout, chrome, keep=keep)


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
