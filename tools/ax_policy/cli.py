"""The ax-policy command line: parse, call the core, print."""

from __future__ import annotations

from typing import Annotated

import typer

from libcommon.cliapp import (
    Environment,
    WorkspaceOption,
    chrome,
    emit_json,
    entry_point,
    env,
    make_app,
    run_main,
)

app = make_app(
    "ax-policy", "Trust, path validation, command review and the allow/ask/deny decision engine."
)


def _group(name: str, help: str) -> typer.Typer:
    group = typer.Typer(
        name=name,
        help=help,
        rich_markup_mode=None,
        add_completion=False,
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.add_typer(group, name=name, help=help)
    return group


trust_app = _group("trust", "Recorded consent to let ax work in a workspace.")
grants_app = _group("grants", "Durable grants: list them, revoke them.")
config_app = _group("config", "The merged, narrowing-only configuration.")


@app.command("review-command")
def review_command_verb(
    command: Annotated[
        list[str],
        typer.Argument(
            metavar="COMMAND...",
            help="The command: one quoted string, or its words after `--`.",
            show_default=False,
        ),
    ],
    workspace: WorkspaceOption = None,
) -> int:
    """Prove a shell command read-only, or say why not (exit 0 only for read-only)."""
    import shlex

    from libcommon.paths import state_layout

    from .queries import review_outcome_in_workspace

    layout = state_layout(workspace, env().environ)
    text = command[0] if len(command) == 1 else shlex.join(command)
    review = review_outcome_in_workspace(layout, text, env().environ.get("PATH", ""))
    emit_json(review.to_json())
    return 0 if review.verdict == "read-only" else 1


@app.command("check-path")
def check_path_verb(
    path: Annotated[str, typer.Argument(help="The path to check.", show_default=False)],
    workspace: WorkspaceOption = None,
    write: Annotated[bool, typer.Option("--write", help="Check it as a write target.")] = False,
) -> int:
    """Print the facts about a path and whether using it needs a question."""
    from libcommon.paths import state_layout

    from .queries import check_path_in_workspace

    check = check_path_in_workspace(state_layout(workspace, env().environ), path, write=write)
    emit_json(check.to_json())
    return 0 if check.ok else 1


@app.command("decide")
def decide_verb(
    source: Annotated[
        str | None, typer.Argument(help="`-` (the default): read the request from stdin.")
    ] = None,
    workspace: WorkspaceOption = None,
) -> int:
    """Decide one tool call: a decision request on stdin, the decision on stdout."""
    from libcommon.cliapp import read_request
    from libcommon.errors import UsageError
    from libcommon.paths import state_layout

    from .config import load_config
    from .engine import decide_request
    from .grants import list_durable_grants
    from .models import DecisionRequest

    if source not in (None, "-"):
        raise UsageError(f"decide reads its request from stdin, not {source!r}", hint="use -")
    request = read_request(DecisionRequest)
    layout = state_layout(workspace, env().environ)
    decision = decide_request(
        request,
        layout.workspace,
        config=load_config(layout),
        durable=list_durable_grants(layout.root, layout.workspace),
        state_dir=layout.root,
    )
    emit_json(decision.to_json())
    return 0


@trust_app.command("status")
def trust_status_verb(workspace: WorkspaceOption = None) -> int:
    """Is the workspace trusted? Exit 0 when it is, 3 when it is not."""
    from libcommon.errors import ExitStatus
    from libcommon.paths import state_layout

    from .trust import check_trust

    status = check_trust(state_layout(workspace, env().environ))
    emit_json(status.to_json())
    return ExitStatus.OK if status.trusted else ExitStatus.UNTRUSTED


@trust_app.command("grant")
def trust_grant_verb(workspace: WorkspaceOption = None) -> int:
    """Record consent for ax to work in the workspace."""
    from libcommon.paths import state_layout

    from .trust import grant_trust

    status = grant_trust(state_layout(workspace, env().environ))
    chrome(f"ax-policy: trusted {status.workspace}")
    emit_json(status.to_json())
    return 0


@trust_app.command("revoke")
def trust_revoke_verb(workspace: WorkspaceOption = None) -> int:
    """Withdraw consent for the workspace."""
    from libcommon.paths import state_layout

    from .trust import revoke_trust

    layout = state_layout(workspace, env().environ)
    revoked = revoke_trust(layout)
    chrome(
        f"ax-policy: {'revoked trust in' if revoked else 'nothing to revoke for'} "
        f"{layout.workspace}"
    )
    emit_json({"workspace": str(layout.workspace), "revoked": revoked})
    return 0


@grants_app.command("list")
def grants_list_verb(
    workspace: Annotated[
        str | None,
        typer.Option("-C", "--workspace", help="Only this workspace's grants (default: all)."),
    ] = None,
) -> int:
    """List durable grants (all of them, or one workspace's)."""
    from libcommon.paths import resolve_workspace, state_root

    from .grants import list_durable_grants

    only = resolve_workspace(workspace) if workspace is not None else None
    grants = list_durable_grants(state_root(env().environ), only)
    emit_json({"grants": [grant.to_json() for grant in grants]})
    return 0


@grants_app.command("revoke")
def grants_revoke_verb(
    grant_id: Annotated[str, typer.Argument(metavar="ID", help="The grant's id.")],
) -> int:
    """Revoke one durable grant; it applies from the next session."""
    from libcommon.paths import state_root

    from .grants import revoke_durable_grant

    grant = revoke_durable_grant(state_root(env().environ), grant_id)
    chrome(
        f"ax-policy: revoked {grant.id}; it applies from the next session "
        "(a running session keeps its copy until it ends)"
    )
    emit_json(grant.to_json())
    return 0


@config_app.command("show")
def config_show_verb(workspace: WorkspaceOption = None) -> int:
    """Print the merged configuration and the sha256 of each source."""
    from libcommon.paths import state_layout

    from .config import load_config

    emit_json(load_config(state_layout(workspace, env().environ)).to_json())
    return 0


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
