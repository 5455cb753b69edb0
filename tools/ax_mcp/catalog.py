"""The tools ax-mcp serves, each a thin adapter onto another tool's core.

Names use underscores: dots are legal in MCP but several clients (and the
Anthropic API) reject them. The slate tools are exactly ax-slate's handlers;
the policy tools are exactly what ax-policy's verbs answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ax_mcp.models import (
    CheckDetectRequest,
    CheckPathRequest,
    CheckRunRequest,
    ReviewCommandRequest,
)
from ax_mcp.server import Tool
from libcommon.errors import NotTrusted
from libcommon.paths import StateLayout

# A check started by a model through MCP may run this long before its tree is killed.
CHECK_RUN_TIMEOUT_S = 600.0

# ax-slate's handler name -> the MCP tool name.
SLATE_TOOL_NAMES = {"open": "slate_open", "writeSeed": "slate_write_seed", "close": "slate_close"}


def build_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    return [*slate_tools(layout), *check_tools(layout, environ), *policy_tools(layout, environ)]


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


def check_tools(layout: StateLayout, environ: Mapping[str, str]) -> list[Tool]:
    from ax_check import CheckRequest, CheckResult, DetectReport, detect, run_check
    from ax_check import Hooks as CheckHooks

    def detect_units(request: CheckDetectRequest) -> DetectReport:
        return detect(layout.workspace, environ)

    def run(request: CheckRunRequest) -> CheckResult:
        from ax_policy import check_trust

        if not check_trust(layout).trusted:
            raise NotTrusted(
                f"check_run runs the project's own code, and {layout.workspace} is not trusted",
                hint=f"a person can trust it with `ax-policy trust grant -C {layout.workspace}`",
            )
        targets = (request.target,) if request.target else ()
        return run_check(
            CheckRequest(
                kind=request.kind,
                workspace=layout.workspace,
                project=request.project,
                targets=targets,
                timeout_s=CHECK_RUN_TIMEOUT_S,
            ),
            CheckHooks(environ=environ),
        )

    return [
        Tool(
            "check_detect",
            "The project units of the workspace, their manifests, and which check kinds "
            "resolve to which command (nothing is run).",
            CheckDetectRequest,
            DetectReport,
            detect_units,
            True,
        ),
        Tool(
            "check_run",
            "Run one typed check (build, test, test-targeted, typecheck, lint, format, "
            "static-analysis) with the command the project's own manifests give. The "
            "verdict is the exit code; 'unsupported' carries a typed reason. Needs a "
            "trusted workspace.",
            CheckRunRequest,
            CheckResult,
            run,
            False,
        ),
    ]


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
