"""The tools ax-mcp serves, each a thin adapter onto another tool's core.

Names use underscores: dots are legal in MCP but several clients (and the
Anthropic API) reject them. The slate tools are exactly ax-slate's handlers;
the policy tools are exactly what ax-policy's verbs answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ax_mcp.models import CheckPathRequest, ReviewCommandRequest
from ax_mcp.server import Tool
from libcommon.paths import StateLayout

# ax-slate's handler name -> the MCP tool name.
SLATE_TOOL_NAMES = {"open": "slate_open", "writeSeed": "slate_write_seed", "close": "slate_close"}


def build_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    return [*slate_tools(layout), *policy_tools(layout, environ)]


def slate_tools(layout: StateLayout) -> list[Tool]:
    from ax_slate import HANDLERS, ExternalContext

    context = ExternalContext.for_layout(layout)
    tools = []
    for handler_name, tool_name in SLATE_TOOL_NAMES.items():
        handler = HANDLERS[handler_name]

        def call(request: Any, handler: Any = handler) -> Any:
            return handler.call(request, context)

        tools.append(
            Tool(tool_name, handler.description, handler.request, handler.response, call, False)
        )
    return tools


def policy_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    from ax_policy import (
        CommandReview,
        PathCheck,
        check_path_in_workspace,
        review_in_workspace,
    )

    path_env = environ.get("PATH", "")

    def review(request: ReviewCommandRequest) -> CommandReview:
        return review_in_workspace(layout, request.command, path_env)

    def check_path(request: CheckPathRequest) -> PathCheck:
        return check_path_in_workspace(layout, request.path, write=request.write)

    return [
        Tool(
            "policy_review_command",
            "Review a shell command the way ax does before running it: 'read-only' only "
            "when it is proven read-only, otherwise 'ask' or 'deny', with the reasons.",
            ReviewCommandRequest,
            CommandReview,
            review,
            True,
        ),
        Tool(
            "policy_check_path",
            "The facts ax's policy uses about a path: resolved location, inside the "
            "workspace or not, protected, secret-named, and ok (no question needed).",
            CheckPathRequest,
            PathCheck,
            check_path,
            True,
        ),
    ]
