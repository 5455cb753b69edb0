"""The ax-mcp command line: serve MCP on stdio for one workspace."""

from __future__ import annotations

from libcommon.cliapp import (
    Environment,
    VersionOption,
    WorkspaceOption,
    entry_point,
    env,
    make_app,
    run_main,
)


def serve(workspace: WorkspaceOption = None, version: VersionOption = False) -> None:
    """Serve MCP over stdio: JSON-RPC on stdin/stdout, logs on stderr."""
    del version
    from ax_mcp.catalog import build_tools
    from ax_mcp.server import Server
    from libcommon.paths import state_layout

    layout = state_layout(workspace, env().environ)
    Server(build_tools(layout, env().environ), log=env().stderr).serve(
        env().stdin.buffer, env().stdout.buffer
    )


app = make_app(
    "ax-mcp",
    "An MCP stdio server exposing ax's slate, checks and command review to other agents.",
    root=serve,
)


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
