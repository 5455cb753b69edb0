"""The ax-agent command line: parse, call the core, print.

The bare command is the agent (``ax-agent -p TEXT``); ``demo`` is its one verb.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    from libcommon.paths import StateLayout

    from .git.delivery import Confirm

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
            help="anthropic, openai, deepseek, kimi, glm, llama.cpp, vllm, ollama, "
            "openai-compatible, script or mesh-fake (default: the config's, else anthropic).",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="The model to ask.")] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="The server of a chat-compatible provider (its /v1 URL)."),
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
    orchestrator: Annotated[
        bool,
        typer.Option(
            "--orchestrator",
            help="Orchestrator mode: read, plan and delegate every change to worker threads.",
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
        orchestrator=orchestrator,
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


# Plans (issue 21): what /plan and /plan approve do, for a session run without a terminal.
plan_app = typer.Typer(
    help="A session's plan: show it with its task states, or approve it.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(plan_app, name="plan")
PlanSessionOption = Annotated[str, typer.Option("--session", help="The session id.")]


@plan_app.command("show")
def plan_show(session: PlanSessionOption, workspace: WorkspaceOption = None) -> None:
    """Print the session's plan (the generated view) with each task's live state."""
    from .plans.actions import plan_lines, session_events

    layout, events = session_events(workspace, env().environ, session)
    env().stdout.write("\n".join(plan_lines(layout, session, events)) + "\n")


@plan_app.command("approve")
def plan_approve(
    session: PlanSessionOption,
    workspace: WorkspaceOption = None,
    sha: Annotated[
        str | None,
        typer.Option("--sha", help="Approve only if the plan's sha256 starts with this."),
    ] = None,
) -> None:
    """Approve the session's plan as it is now; refused when it does not validate."""
    from ax_log import append_events

    from .plans.actions import approve, session_events

    layout, _ = session_events(workspace, env().environ, session)
    loaded = approve(
        layout,
        session,
        lambda event: append_events(layout, session, [event]),
        "command-line",
        sha,
    )
    env().stdout.write(f"approved the plan {loaded.sha256} ({len(loaded.plan.tasks)} tasks)\n")


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


SessionOption = Annotated[
    str | None,
    typer.Option("--session", metavar="ID", help="The session (default: this project's newest)."),
]
YesOption = Annotated[
    bool,
    typer.Option(
        "--yes", help="Go ahead after the preview without a question (needed off a terminal)."
    ),
]
TrustOnceOption = Annotated[
    bool,
    typer.Option("--trust-this-workspace", help="Trust the workspace for this run only."),
]


@app.command()
def commit(
    workspace: WorkspaceOption = None,
    session: SessionOption = None,
    message: Annotated[
        str | None,
        typer.Option("-m", "--message", help="The commit message (default: names the session)."),
    ] = None,
    yes: YesOption = False,
    trust_this_workspace: TrustOnceOption = False,
) -> int:
    """Commit the files this session changed (and only those), as you, with your hooks.

    Shows the preview, then asks; off a terminal it needs --yes. Exit status: 0
    committed (or declined), 1 blocked or refused, 2 no --yes off a terminal, 3 the
    workspace is not trusted.
    """
    from .git.delivery import commit_flow

    layout, session_id, confirm = _person_command(workspace, session, trust_this_workspace)
    environment = env()
    commit_flow(
        layout,
        session_id,
        environment.environ,
        message=message,
        yes=yes,
        confirm=confirm,
        say=chrome,
        record=lambda event: _append(layout, session_id, event),
    )
    return 0


@app.command()
def push(
    workspace: WorkspaceOption = None,
    session: SessionOption = None,
    remote: Annotated[
        str | None,
        typer.Option("--remote", help="The remote (default: the branch's, else origin)."),
    ] = None,
    branch: Annotated[
        str | None, typer.Option("--branch", help="The local branch (default: the current one).")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace the remote's branch, bound by --force-with-lease to what was observed.",
        ),
    ] = False,
    yes: YesOption = False,
    trust_this_workspace: TrustOnceOption = False,
) -> int:
    """Push a branch's commit to the same-named branch of a remote, as observed and approved.

    Looks with git ls-remote (nothing fetched), shows the preview, asks (off a terminal
    it needs --yes), pushes the observed commit, and looks again. Exit status: 0 pushed
    and verified (or declined), 1 blocked, refused or not verified, 2 no --yes off a
    terminal, 3 the workspace is not trusted.
    """
    from .git.delivery import push_flow

    layout, session_id, confirm = _person_command(workspace, session, trust_this_workspace)
    push_flow(
        layout,
        session_id,
        env().environ,
        remote=remote,
        branch=branch,
        force=force,
        yes=yes,
        confirm=confirm,
        say=chrome,
        record=lambda event: _append(layout, session_id, event),
    )
    return 0


def _person_command(
    workspace: Path | None, session: str | None, trust_once: bool
) -> tuple[StateLayout, str, Confirm | None]:
    """The layout, the session and who confirms, for a command a person runs on a session."""
    from ax_log import latest_session, require_log
    from ax_policy import ensure_trusted
    from libcommon.errors import OperationFailed
    from libcommon.paths import state_layout

    environment = env()
    layout = state_layout(workspace, environment.environ)
    # It runs the repository's hooks (commit) or sends to a remote (push): trust-gated.
    ensure_trusted(layout, interactive=False, trust_once=trust_once)
    session_id = session or latest_session(layout)
    if session_id is None:
        raise OperationFailed(
            f"no ax session has run in {layout.workspace}", hint="start one with ax-agent"
        )
    require_log(layout, session_id)
    interactive = bool(environment.stdin_isatty and environment.stderr_isatty)
    return layout, session_id, _ask_yes if interactive else None


def _ask_yes(question: str) -> bool:
    environment = env()
    environment.stderr.write(f"ax-agent: {question} [y/N] ")
    environment.stderr.flush()
    return environment.stdin.readline().strip().lower() in ("y", "yes")


def _append(layout: StateLayout, session_id: str, event: dict[str, Any]) -> None:
    from ax_log import append_events

    append_events(layout, session_id, [event])


# Handoff (issue 26): /handoff, /resume and /recover off a terminal.
ProviderOption = Annotated[
    str | None, typer.Option("--provider", help="The successor's provider (default: the config's).")
]
ModelOption = Annotated[str | None, typer.Option("--model", help="The model to run on.")]
ScriptOption = Annotated[
    Path | None, typer.Option("--script", help="The script file of the script provider.")
]
EffortOption = Annotated[
    str | None, typer.Option("--effort", help="The reasoning effort: low, medium or high.")
]
FormatOption = Annotated[
    str, typer.Option("--output-format", help="text (the answer) or json (one object).")
]


def _handoff_options(
    workspace: Path | None,
    provider: str | None,
    model: str | None,
    script: Path | None,
    trust_once: bool,
    output_format: str,
) -> Any:
    from libcommon.errors import UsageError

    from .approvals import DenyingApprover
    from .session import StartOptions

    if output_format not in ("text", "json"):
        raise UsageError(f"unknown --output-format {output_format!r}", hint="use text or json")
    return StartOptions(
        workspace=workspace,
        environ=env().environ,
        provider=provider,
        model=model,
        script=script,
        trust_once=trust_once,
        approver=DenyingApprover(),
    )


@app.command()
def handoff(
    focus: Annotated[
        list[str] | None, typer.Argument(help="What the successor should focus on.")
    ] = None,
    track_boundary: Annotated[
        bool, typer.Option("--track-boundary", help="Purpose: a track reached its boundary.")
    ] = False,
    post_check: Annotated[
        bool, typer.Option("--post-check", help="Purpose: a check passed; start fresh.")
    ] = False,
    context_budget: Annotated[
        bool, typer.Option("--context-budget", help="Purpose: the context budget was reached.")
    ] = False,
    user_request: Annotated[
        bool,
        typer.Option("--user-request", help="Purpose: you asked (replaces a pending purpose)."),
    ] = False,
    workspace: WorkspaceOption = None,
    session: SessionOption = None,
    effort: EffortOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    script: ScriptOption = None,
    trust_this_workspace: TrustOnceOption = False,
    output_format: FormatOption = "text",
) -> int:
    """Hand the session's work to a fresh session, which starts on its kickoff.

    Without an option a pending purpose is kept (a retry), else it is user-request.
    Exit status: 0 handed over and the kickoff turn ran; 1 failed (the JSON or stderr
    says which; the successor may be paused); 2 bad usage; 3 the workspace is not
    trusted (the successor waits); 4 the session is owned by a live process.
    """
    from libcommon.errors import UsageError

    from .handoff.records import parse_request
    from .handoff.run import run_handoff

    chosen = [
        flag
        for flag, given in (
            ("--track-boundary", track_boundary),
            ("--post-check", post_check),
            ("--context-budget", context_budget),
            ("--user-request", user_request),
        )
        if given
    ]
    if len(chosen) > 1:
        raise UsageError(f"give one purpose, not {' and '.join(chosen)}")
    request = parse_request([*chosen, *(focus or [])])
    options = _handoff_options(
        workspace, provider, model, script, trust_this_workspace, output_format
    )
    return run_handoff(options, session, request, effort, env().stdout, chrome, output_format)


@app.command()
def resume(
    workspace: WorkspaceOption = None,
    session: SessionOption = None,
    model: ModelOption = None,
    effort: EffortOption = None,
    provider: ProviderOption = None,
    script: ScriptOption = None,
    trust_this_workspace: TrustOnceOption = False,
    output_format: FormatOption = "text",
) -> int:
    """Lift a paused session's pause (/resume); after an adoption pause, deliver the kickoff.

    Exit status: 0 resumed; 1 not paused, or still paused (the model or effort is not
    permitted, or the unpaused state could not be saved); 3 not trusted; 4 owned.
    """
    from .handoff.run import run_resume

    options = _handoff_options(
        workspace, provider, None, script, trust_this_workspace, output_format
    )
    return run_resume(options, session, model, effort, env().stdout, chrome, output_format)


@app.command()
def recover(
    workspace: WorkspaceOption = None,
    session: SessionOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    script: ScriptOption = None,
    trust_this_workspace: TrustOnceOption = False,
    output_format: FormatOption = "text",
) -> int:
    """Send a stalled session a failover instruction (a new attempt id) to go on.

    Its acknowledgement (handoff.continued) says the model started answering, not that
    the work recovered. Exit status: 0 the turn finished; 1 nothing stalled, paused, or
    the turn failed; 3 not trusted; 4 owned; 130 interrupted.
    """
    from .handoff.run import run_recover

    options = _handoff_options(
        workspace, provider, model, script, trust_this_workspace, output_format
    )
    return run_recover(options, session, env().stdout, chrome, output_format)


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
